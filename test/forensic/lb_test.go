package forensic

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/hack/lb/connlog"
	"github.com/nap-k8s/nap/probe"
)

// TestLBRefused: failed requests over new connections that nodes refused while the load
// balancer still sent to them explain the loss (the load balancer's tail outran the
// pods); one refused after the load balancer took its node out, one that ended
// otherwise, one the load balancer did not log, do not; reused connections are not
// looked up.
func TestLBRefused(t *testing.T) {
	start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	s := func(f float64) time.Time { return start.Add(time.Duration(f * float64(time.Second))) }
	fail := func(at float64, port int, mode probe.Mode) probe.Result {
		return probe.Result{Due: s(at), Latency: time.Millisecond, Kind: probe.EOF, Mode: mode, Local: fmt.Sprintf("10.77.0.1:%d", port)}
	}
	conn := func(at float64, port int, server, state string) connlog.Entry {
		return connlog.Entry{Client: fmt.Sprintf("10.77.0.1:%d", port), Accepted: s(at), Backend: "port80", Server: server, Source: "10.77.1.1:40000", Connect: -1, State: state}
	}
	down := func(at float64, server string) connlog.Line {
		return connlog.Line{At: s(at), Message: "Server port80/" + server + " is DOWN, reason: Layer7 wrong status"}
	}
	for _, c := range []struct {
		name  string
		fails []probe.Result
		es    []connlog.Entry
		msgs  []connlog.Line
		want  string // in the explanation; "": none
	}{
		{"refused before the node went out", []probe.Result{fail(12.15, 1, probe.New), fail(12.2, 2, probe.New), fail(12.2, 3, probe.Reuse)},
			[]connlog.Entry{conn(12.15, 1, "nap-node", "SC"), conn(12.2, 2, "nap-node", "SC")}, []connlog.Line{down(12.29, "nap-node")},
			"2 failed requests over new connections were refused by nodes the load balancer still sent to; the first: the load balancer sent a new connection at 12.15 s to nap-node, which refused it (no pod left on it), and took nap-node out of service at 12.29 s"},
		{"not out yet", []probe.Result{fail(12.15, 1, probe.New)}, []connlog.Entry{conn(12.15, 1, "nap-node2", "SC")}, []connlog.Line{down(12.29, "nap-node")}, "took nap-node2 out of service not yet"},
		{"refused after the node went out", []probe.Result{fail(12.5, 1, probe.New)}, []connlog.Entry{conn(12.5, 1, "nap-node", "SC")}, []connlog.Line{down(12.29, "nap-node")}, ""},
		{"a timeout, not a refusal", []probe.Result{fail(12.15, 1, probe.New)}, []connlog.Entry{conn(12.15, 1, "nap-node", "CC")}, nil, ""},
		{"one not logged", []probe.Result{fail(12.15, 1, probe.New), fail(12.2, 2, probe.New)}, []connlog.Entry{conn(12.15, 1, "nap-node", "SC")}, nil, ""},
		{"only reused connections", []probe.Result{fail(12.15, 1, probe.Reuse)}, nil, nil, ""},
	} {
		got := LBRefused(c.es, c.msgs, c.fails, start)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
