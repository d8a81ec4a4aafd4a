package forensic

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/probe"
)

// TestParseAccessLog: the lab ingress's output (testdata/traefik-access.log: Traefik
// 3.6's own line, and access-log lines of a negative control, one of them moved to
// another namespace and the last one with its server taken out, as Traefik logs a
// request it had no server for) gives the requests of one namespace; a broken line
// names its number.
func TestParseAccessLog(t *testing.T) {
	log, err := os.ReadFile(filepath.Join("testdata", "traefik-access.log"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseAccessLog(log, "e2e-testingressdowntime-d25b")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	want := []AccessEntry{
		{Start: at("2026-11-28T16:56:49.721081431Z"), Took: 1527463, Client: "10.78.0.1:60249", Server: "10.78.1.9", Status: 502},
		{Start: at("2026-11-28T16:56:51.446729755Z"), Took: 2001167561, Client: "10.78.0.1:54072", Server: "10.78.1.9", Status: 499},
		{Start: at("2026-11-28T16:56:51.446729755Z"), Took: 2001167561, Client: "10.78.0.1:54072", Status: 503},
	}
	if !slices.EqualFunc(got, want, func(a, b AccessEntry) bool {
		return a.Start.Equal(b.Start) && a.Took == b.Took && a.Client == b.Client && a.Server == b.Server && a.Status == b.Status
	}) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if other, err := ParseAccessLog(log, "e2e-other-ns"); err != nil || len(other) != 1 {
		t.Errorf("another namespace: %+v, %v; want its one request", other, err)
	}
	// gRPC to the pods over h2c: Traefik names the server h2c://ADDR:PORT.
	if g, err := ParseAccessLog(log, "e2e-testdowntimeexperiment-03cc"); err != nil || len(g) != 1 || g[0].Server != "10.78.1.133" || g[0].Status != 502 {
		t.Errorf("a gRPC call: %+v, %v; want one, to 10.78.1.133, 502", g, err)
	}
	broken := append(slices.Clone(log), []byte(`{"StartUTC":"yesterday"}`+"\n")...)
	if _, err := ParseAccessLog(broken, "e2e-testingressdowntime-d25b"); err == nil || !strings.Contains(err.Error(), "line 7") {
		t.Errorf("a broken line: %v, want an error naming line 7", err)
	}
}

// TestIngressVerdict: a failed request through the ingress is the entry the ingress
// logged from its client's address while the client waited. It is a pod's exit's when
// it went to a pod the ingress had not let go and whose app exited before the request
// ended; the ingress's own when it got no connection to the ingress, or went to a pod
// let go, to a pod running after it, or to none; Unexplained when the ingress took it
// and logged nothing of it, or names an address of no pod.
func TestIngressVerdict(t *testing.T) {
	start := time.Date(2026, 11, 28, 16, 0, 0, 0, time.UTC)
	s := func(f float64) time.Time { return start.Add(time.Duration(f * float64(time.Second))) }
	pods := map[string]Pod{
		"10.0.0.1": {Name: "let-go", LetGo: s(14.8), Exited: s(16)}, // let go, then exited
		"10.0.0.2": {Name: "running", LetGo: s(20), Exited: s(25)},  // not let go yet, running
		"10.0.0.3": {Name: "exiting", LetGo: s(18), Exited: s(16)},  // exited while routed
		"10.0.0.4": {Name: "new"},                                   // neither
	}
	// A request the probe sent at, from port (0: it got no connection), that timed out.
	fail := func(at float64, port int) probe.Result {
		r := probe.Result{Due: s(at), Lag: time.Millisecond, Latency: 2 * time.Second, Kind: probe.Timeout, Mode: probe.New}
		if port != 0 {
			r.Local = fmt.Sprintf("10.78.0.1:%d", port)
		}
		return r
	}
	// What the ingress logged of a request from port, 10 ms after at.
	entry := func(at float64, port int, server string, status int, took time.Duration) AccessEntry {
		return AccessEntry{Start: s(at + 0.01), Took: took, Client: fmt.Sprintf("10.78.0.1:%d", port), Server: server, Status: status}
	}
	timeout := func(at float64, port int, server string) AccessEntry {
		return entry(at, port, server, 499, 2*time.Second)
	}
	for _, c := range []struct {
		name    string
		fails   []probe.Result
		entries []AccessEntry
		cause   Cause
		why     string // in the verdict
	}{
		{"to a pod let go", []probe.Result{fail(15.94, 1)}, []AccessEntry{timeout(15.94, 1, "10.0.0.1")}, IngressOwn, "to pod let-go, let go at 14.80 s"},
		{"to a pod running after it", []probe.Result{fail(15.94, 1), fail(15.95, 2)}, []AccessEntry{timeout(15.94, 1, "10.0.0.2"), timeout(15.95, 2, "10.0.0.4")}, IngressOwn, "to pod running, running until after it"},
		{"to no pod", []probe.Result{fail(3, 1)}, []AccessEntry{entry(3, 1, "", 503, time.Millisecond)}, IngressOwn, "to no pod"},
		{"no connection to the ingress", []probe.Result{fail(20.38, 0), fail(20.4, 0)}, nil, IngressOwn, "at 20.38 s (timeout over a new connection) got no connection to the ingress"},
		{"to a pod that exited while routed", []probe.Result{fail(15.94, 1), fail(16.2, 2)}, []AccessEntry{timeout(15.94, 1, "10.0.0.2"), entry(16.2, 2, "10.0.0.3", 502, time.Millisecond)}, PodExit, "pod exiting, whose app exited at 16.00 s"},
		{"into a pod's exit", []probe.Result{fail(14.5, 1)}, []AccessEntry{timeout(14.5, 1, "10.0.0.1")}, PodExit, "whose app exited at 16.00 s"},
		{"a slow success is the client's timeout", []probe.Result{fail(15, 3)}, []AccessEntry{entry(15, 3, "10.0.0.2", 200, 2500*time.Millisecond)}, IngressOwn, "logged 200 after 2.5 s, to pod running"},
		// Another entry from the same port: the connection's request before, and one of
		// another connection long after, once the port was free again.
		{"the ingress took it, logged nothing", []probe.Result{fail(15.94, 1)}, []AccessEntry{timeout(13, 1, "10.0.0.2"), timeout(40, 1, "10.0.0.2")}, Unexplained,
			"1 of 1 failed requests are not in the ingress's log; the first: a request at 15.94 s (timeout over a new connection from 10.78.0.1:1) reached the ingress, which logged nothing of it (the nearest entry from that address started at 13.01 s, logged 499 after 2.0 s)"},
		{"unlogged beside a pod's exit", []probe.Result{fail(14.5, 1), fail(15.94, 2)}, []AccessEntry{timeout(14.5, 1, "10.0.0.1")}, Unexplained, "1 of 2 failed requests are not in the ingress's log; the first: a request at 15.94 s (timeout over a new connection from 10.78.0.1:2) reached the ingress, which logged nothing of it"},
		{"begun after the client gave up", []probe.Result{fail(15.94, 1), fail(16, 2)}, []AccessEntry{timeout(18.5, 1, "10.0.0.2")}, Unexplained,
			"2 of 2 failed requests are not in the ingress's log; the first: a request at 15.94 s (timeout over a new connection from 10.78.0.1:1) reached the ingress, which logged nothing of it (the nearest entry from that address started at 18.51 s"},
		{"one entry for two requests", []probe.Result{fail(15.94, 1), fail(15.95, 1)}, []AccessEntry{timeout(15.94, 1, "10.0.0.2")}, Unexplained, "at 15.95 s"},
		{"an address of no pod", []probe.Result{fail(15.94, 1)}, []AccessEntry{timeout(15.94, 1, "10.0.0.9")}, Unexplained, "10.0.0.9, the address of no pod seen"},
		{"no failure kept", nil, nil, Unexplained, "kept no failed request"},
	} {
		v := IngressVerdict(c.entries, c.fails, pods, start)
		if v.Cause != c.cause || !strings.Contains(v.Why, c.why) {
			t.Errorf("%s: %q, %q; want %q, with %q", c.name, v.Cause, v.Why, c.cause, c.why)
		}
	}
}

// TestOthersFailed: the failed requests of the access log that are none of the
// prober's failures are counted; the prober's, the successful slow ones (logged for
// their time) and a failure of the prober's that the log lacks are not.
func TestOthersFailed(t *testing.T) {
	start := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	s := func(f float64) time.Time { return start.Add(time.Duration(f * float64(time.Second))) }
	entries := []AccessEntry{
		{Start: s(1.0), Took: 2 * time.Second, Client: "10.78.0.1:1001", Server: "10.0.0.3", Status: 499},  // the prober's
		{Start: s(1.0), Took: 2 * time.Second, Client: "10.78.0.1:2001", Server: "10.0.0.3", Status: 499},  // another's timeout
		{Start: s(1.2), Took: time.Millisecond, Client: "10.78.0.1:2002", Server: "10.0.0.3", Status: 502}, // another's 502
		{Start: s(1.3), Took: 1500 * time.Millisecond, Client: "10.78.0.1:2003", Server: "10.0.0.1", Status: 200},
		{Start: s(5.0), Took: time.Millisecond, Client: "10.78.0.1:1002", Server: "10.0.0.3", Status: 502}, // the prober's port, later
	}
	fail := func(at float64, local string) probe.Result {
		return probe.Result{Due: s(at), Latency: 2 * time.Second, Kind: probe.Timeout, Mode: probe.New, Local: local}
	}
	for _, c := range []struct {
		name  string
		fails []probe.Result
		want  int
	}{
		{"no failure of the prober's", nil, 4},
		{"one of the prober's", []probe.Result{fail(1.0, "10.78.0.1:1001")}, 3},
		{"the prober's, one the log lacks, one with no connection", []probe.Result{fail(1.0, "10.78.0.1:1001"), fail(1.0, "10.78.0.1:1003"), fail(1.0, "")}, 3},
	} {
		if got := OthersFailed(entries, c.fails); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
