package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/hack/lb/connlog"
	"github.com/nap-k8s/nap/probe"
)

// The lab ingress's access log (hack/ingress.yaml keeps the failed requests and the
// slow): the pod each failed request through the ingress went to, which tells a pod
// that exited while the ingress still sent to it (what a wait prevents) from a loss of
// the ingress's own.

// accessEntry is one request as the ingress logged it.
type accessEntry struct {
	start  time.Time
	took   time.Duration
	client string // the client's address (host:port)
	server string // the address of the pod it went to; "": none
	status int    // what the client got; 499: it gave up first
}

// parseAccessLog returns the requests to ns's Service "app" in log, the ingress's
// access log (JSON lines; any other line, such as Traefik's own, is skipped): Traefik
// names the service NAMESPACE-SERVICE-PORT@PROVIDER.
func parseAccessLog(log []byte, ns string) ([]accessEntry, error) {
	var out []accessEntry
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("{")) || !bytes.Contains(line, []byte(`"StartUTC"`)) {
			continue
		}
		var e struct {
			StartUTC         time.Time `json:"StartUTC"`
			ClientAddr       string    `json:"ClientAddr"`
			Duration         int64     `json:"Duration"`
			ServiceName      string    `json:"ServiceName"`
			ServiceURL       string    `json:"ServiceURL"`
			DownstreamStatus int       `json:"DownstreamStatus"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("the ingress's access log, line %d: %w", n, err)
		}
		if !strings.HasPrefix(e.ServiceName, ns+"-app-") {
			continue
		}
		server := ""
		if e.ServiceURL != "" {
			// SCHEME://ADDR:PORT: http, https, h2c (gRPC to the pods).
			u, err := url.Parse(e.ServiceURL)
			if err == nil && u.Port() == "" {
				err = errors.New("no port")
			}
			if err != nil {
				return nil, fmt.Errorf("the ingress's access log, line %d: server %q: %w", n, e.ServiceURL, err)
			}
			server = u.Hostname()
		}
		out = append(out, accessEntry{start: e.StartUTC, took: time.Duration(e.Duration), client: e.ClientAddr, server: server, status: e.DownstreamStatus})
	}
	return out, sc.Err()
}

// ingressAccess reads what the lab's ingress logged of ns's requests since since: the
// file its pod writes into a volume in memory (hack/ingress.yaml), read on the node.
func ingressAccess(t *testing.T, cs *kubernetes.Clientset, ns string, since time.Time) []accessEntry {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ingressNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=traefik"})
	if err != nil {
		t.Fatal(err)
	}
	var out []accessEntry
	for _, p := range pods.Items {
		file := filepath.Join(podVolume(p, ingressAccessVolume), "access.log")
		log, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("the ingress's access log (pod %s): %v", p.Name, err)
		}
		// A line the ingress is writing as this reads it is a later request's.
		log = log[:bytes.LastIndexByte(log, '\n')+1]
		es, err := parseAccessLog(log, ns)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, e := range es {
			if !e.start.Before(since) {
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, func(a, b accessEntry) int { return a.start.Compare(b.start) })
	return out
}

// ingressAccessVolume is the ingress pod's volume its access log is in (hack/ingress.yaml).
const ingressAccessVolume = "access-log"

// podVolume is where p's node keeps p's emptyDir volume vol: the lab's nodes are on
// this machine, each kubelet with a root directory of its own (hack/cluster.sh).
func podVolume(p corev1.Pod, vol string) string {
	root := filepath.Join(filepath.Dir(kubeconfigPath()), "kubelet")
	if p.Spec.NodeName == node2 {
		root = filepath.Join(filepath.Dir(kubeconfigPath()), "node2", "kubelet")
	}
	return filepath.Join(root, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", vol)
}

// podAt is what a verdict needs of one pod: when the ingress let it go (zero: not
// seen to) and when its app exited (zero: not seen to; whole seconds, cut: the true
// exit is at most a second later).
type podAt struct {
	name          string
	letGo, exited time.Time
}

// ingressVerdict says whose the failed requests through the ingress were (fails, as
// the probe saw them; entries, what the ingress logged), and why. Each failure is the
// entry from the same client address (the probe's Local, the log's ClientAddr) that
// started while the client waited. A request that got no connection to the ingress
// never reached it, and the ingress's pod does not leave here: it was lost before any
// route to a pod, the ingress's own. A request is the hold's when it went to a pod the
// ingress had not let go and that pod's app exited before the request ended: it was
// still routed when it left. It is the ingress's when it went to a pod the ingress had
// let go, or to a pod whose app ran until after the request ended (the pod did not
// leave; the ingress or the machine stalled), or to no pod. A request the ingress took
// but did not log, or one to an address of no pod seen, is unexplained; the first kind
// is counted, and the first named with the entry from its address nearest to it (one
// the ingress began after the client gave up starts late). Times in why are from start.
func ingressVerdict(entries []accessEntry, fails []probe.Result, pods map[string]podAt, start time.Time) verdict {
	if len(fails) == 0 {
		return verdict{why: "the probe kept no failed request to look up"}
	}
	at := func(t time.Time) string { return fmt.Sprintf("%.2f s", t.Sub(start).Seconds()) }
	as := loggedAs(entries, fails)
	// Every failure is looked up: one the log lacks makes the whole loss unexplained,
	// even beside a pod's exit.
	var unexplainedWhy, exitWhy, unloggedWhy string
	var reasons []string
	exits, unlogged := 0, 0
	for k, f := range fails {
		sent := f.Due.Add(f.Lag)
		what := fmt.Sprintf("at %s (%s over a %s connection", at(sent), f.Kind, f.Mode)
		if f.Local == "" {
			reasons = append(reasons, what+") got no connection to the ingress")
			continue
		}
		what += " from " + f.Local + ")"
		i := as[k]
		if i < 0 {
			unlogged++
			if unloggedWhy == "" {
				unloggedWhy = fmt.Sprintf("a request %s reached the ingress, which logged nothing of it", what)
				// The entry from that address nearest to it: a request the ingress began
				// only after the client gave up (a stalled ingress) starts late.
				if j := nearest(entries, f.Local, sent); j >= 0 {
					e := entries[j]
					unloggedWhy += fmt.Sprintf(" (the nearest entry from that address started at %s, logged %d after %.1f s)", at(e.start), e.status, e.took.Seconds())
				}
			}
			continue
		}
		e := entries[i]
		what += fmt.Sprintf(", logged %d after %.1f s,", e.status, e.took.Seconds())
		p, ok := pods[e.server]
		end := e.start.Add(e.took)
		switch {
		case e.server == "":
			reasons = append(reasons, what+" to no pod")
		case !ok:
			unexplainedWhy = cmp.Or(unexplainedWhy, fmt.Sprintf("a request %s went to %s, the address of no pod seen", what, e.server))
		case !p.letGo.IsZero() && !e.start.Before(p.letGo):
			reasons = append(reasons, fmt.Sprintf("%s to pod %s, let go at %s", what, p.name, at(p.letGo)))
		case p.exited.IsZero() || !p.exited.Before(end):
			reasons = append(reasons, fmt.Sprintf("%s to pod %s, running until after it", what, p.name))
		default:
			exits++
			exitWhy = cmp.Or(exitWhy, fmt.Sprintf("a request %s went to pod %s, whose app exited at %s while the ingress still sent to it", what, p.name, at(p.exited)))
		}
	}
	switch {
	case unlogged > 0:
		return verdict{why: fmt.Sprintf("%d of %d failed requests are not in the ingress's log; the first: %s", unlogged, len(fails), unloggedWhy)}
	case unexplainedWhy != "":
		return verdict{why: unexplainedWhy}
	case exits > 0:
		return verdict{why: fmt.Sprintf("%d of %d failed requests went to pods that exited while routed; the first: %s", exits, len(fails), exitWhy), cause: podExit}
	}
	return verdict{why: "the ingress lost them, not a pod's exit: " + strings.Join(reasons, "; "), cause: ingressOwn}
}

// loggedAs gives, for each of the probe's requests rs, the index of the entry the
// ingress logged of it: one from the request's address (Local) that started while the
// client waited, each entry taken once (a connection carries one request at a time);
// -1: none, or the request got no connection.
func loggedAs(entries []accessEntry, rs []probe.Result) []int {
	used := make([]bool, len(entries))
	out := make([]int, len(rs))
	for k, r := range rs {
		out[k] = -1
		if r.Local == "" {
			continue
		}
		sent := r.Due.Add(r.Lag)
		for i, e := range entries {
			if !used[i] && e.client == r.Local && whileWaiting(e.start, sent, r.Latency) {
				used[i], out[k] = true, i
				break
			}
		}
	}
	return out
}

// othersFailed counts the failed requests in entries (status 499 and above) that are
// none of fails (loggedAs): another client's.
func othersFailed(entries []accessEntry, fails []probe.Result) int {
	theirs := make([]bool, len(entries))
	for i, e := range entries {
		theirs[i] = e.status >= 499
	}
	for _, i := range loggedAs(entries, fails) {
		if i >= 0 {
			theirs[i] = false
		}
	}
	n := 0
	for _, t := range theirs {
		if t {
			n++
		}
	}
	return n
}

// whileWaiting says whether a proxy's record that began at at can be of a request sent
// at sent that failed after took: it began while the client waited (100 ms either side
// for the two clocks' reading).
func whileWaiting(at, sent time.Time, took time.Duration) bool {
	return !at.Before(sent.Add(-100*time.Millisecond)) && !at.After(sent.Add(took+100*time.Millisecond))
}

// nearest is the index of the entry from client that started nearest to sent; -1: none.
func nearest(entries []accessEntry, client string, sent time.Time) int {
	j := -1
	for i, e := range entries {
		if e.client == client && (j < 0 || (e.start.Sub(sent)).Abs() < entries[j].start.Sub(sent).Abs()) {
			j = i
		}
	}
	return j
}

// addresses gives what ingressVerdict needs of each pod seen, by address, with left
// (when the ingress let each address go). Of two pods with one address, the one that
// was deleted.
func (r *terminations) addresses(left map[string]time.Time) map[string]podAt {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]podAt{}
	for name, l := range r.lives {
		if l.ip == "" {
			continue
		}
		if _, seen := out[l.ip]; seen && l.deleting.IsZero() {
			continue
		}
		out[l.ip] = podAt{name: name, letGo: left[l.ip], exited: l.exited}
	}
	return out
}

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
	got, err := parseAccessLog(log, "e2e-testingressdowntime-d25b")
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
	want := []accessEntry{
		{start: at("2026-11-28T16:56:49.721081431Z"), took: 1527463, client: "10.78.0.1:60249", server: "10.78.1.9", status: 502},
		{start: at("2026-11-28T16:56:51.446729755Z"), took: 2001167561, client: "10.78.0.1:54072", server: "10.78.1.9", status: 499},
		{start: at("2026-11-28T16:56:51.446729755Z"), took: 2001167561, client: "10.78.0.1:54072", status: 503},
	}
	if !slices.EqualFunc(got, want, func(a, b accessEntry) bool {
		return a.start.Equal(b.start) && a.took == b.took && a.client == b.client && a.server == b.server && a.status == b.status
	}) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if other, err := parseAccessLog(log, "e2e-other-ns"); err != nil || len(other) != 1 {
		t.Errorf("another namespace: %+v, %v; want its one request", other, err)
	}
	// gRPC to the pods over h2c: Traefik names the server h2c://ADDR:PORT.
	if g, err := parseAccessLog(log, "e2e-testdowntimeexperiment-03cc"); err != nil || len(g) != 1 || g[0].server != "10.78.1.133" || g[0].status != 502 {
		t.Errorf("a gRPC call: %+v, %v; want one, to 10.78.1.133, 502", g, err)
	}
	broken := append(slices.Clone(log), []byte(`{"StartUTC":"yesterday"}`+"\n")...)
	if _, err := parseAccessLog(broken, "e2e-testingressdowntime-d25b"); err == nil || !strings.Contains(err.Error(), "line 7") {
		t.Errorf("a broken line: %v, want an error naming line 7", err)
	}
}

// TestIngressVerdict: a failed request through the ingress is the entry the ingress
// logged from its client's address while the client waited. It is a pod's exit's when
// it went to a pod the ingress had not let go and whose app exited before the request
// ended; the ingress's own when it got no connection to the ingress, or went to a pod
// let go, to a pod running after it, or to none; unexplained when the ingress took it
// and logged nothing of it, or names an address of no pod.
func TestIngressVerdict(t *testing.T) {
	start := time.Date(2026, 11, 28, 16, 0, 0, 0, time.UTC)
	s := func(f float64) time.Time { return start.Add(time.Duration(f * float64(time.Second))) }
	pods := map[string]podAt{
		"10.0.0.1": {name: "let-go", letGo: s(14.8), exited: s(16)}, // let go, then exited
		"10.0.0.2": {name: "running", letGo: s(20), exited: s(25)},  // not let go yet, running
		"10.0.0.3": {name: "exiting", letGo: s(18), exited: s(16)},  // exited while routed
		"10.0.0.4": {name: "new"},                                   // neither
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
	entry := func(at float64, port int, server string, status int, took time.Duration) accessEntry {
		return accessEntry{start: s(at + 0.01), took: took, client: fmt.Sprintf("10.78.0.1:%d", port), server: server, status: status}
	}
	timeout := func(at float64, port int, server string) accessEntry {
		return entry(at, port, server, 499, 2*time.Second)
	}
	for _, c := range []struct {
		name    string
		fails   []probe.Result
		entries []accessEntry
		cause   cause
		why     string // in the verdict
	}{
		{"to a pod let go", []probe.Result{fail(15.94, 1)}, []accessEntry{timeout(15.94, 1, "10.0.0.1")}, ingressOwn, "to pod let-go, let go at 14.80 s"},
		{"to a pod running after it", []probe.Result{fail(15.94, 1), fail(15.95, 2)}, []accessEntry{timeout(15.94, 1, "10.0.0.2"), timeout(15.95, 2, "10.0.0.4")}, ingressOwn, "to pod running, running until after it"},
		{"to no pod", []probe.Result{fail(3, 1)}, []accessEntry{entry(3, 1, "", 503, time.Millisecond)}, ingressOwn, "to no pod"},
		{"no connection to the ingress", []probe.Result{fail(20.38, 0), fail(20.4, 0)}, nil, ingressOwn, "at 20.38 s (timeout over a new connection) got no connection to the ingress"},
		{"to a pod that exited while routed", []probe.Result{fail(15.94, 1), fail(16.2, 2)}, []accessEntry{timeout(15.94, 1, "10.0.0.2"), entry(16.2, 2, "10.0.0.3", 502, time.Millisecond)}, podExit, "pod exiting, whose app exited at 16.00 s"},
		{"into a pod's exit", []probe.Result{fail(14.5, 1)}, []accessEntry{timeout(14.5, 1, "10.0.0.1")}, podExit, "whose app exited at 16.00 s"},
		{"a slow success is the client's timeout", []probe.Result{fail(15, 3)}, []accessEntry{entry(15, 3, "10.0.0.2", 200, 2500*time.Millisecond)}, ingressOwn, "logged 200 after 2.5 s, to pod running"},
		// Another entry from the same port: the connection's request before, and one of
		// another connection long after, once the port was free again.
		{"the ingress took it, logged nothing", []probe.Result{fail(15.94, 1)}, []accessEntry{timeout(13, 1, "10.0.0.2"), timeout(40, 1, "10.0.0.2")}, unexplained,
			"1 of 1 failed requests are not in the ingress's log; the first: a request at 15.94 s (timeout over a new connection from 10.78.0.1:1) reached the ingress, which logged nothing of it (the nearest entry from that address started at 13.01 s, logged 499 after 2.0 s)"},
		{"unlogged beside a pod's exit", []probe.Result{fail(14.5, 1), fail(15.94, 2)}, []accessEntry{timeout(14.5, 1, "10.0.0.1")}, unexplained, "1 of 2 failed requests are not in the ingress's log; the first: a request at 15.94 s (timeout over a new connection from 10.78.0.1:2) reached the ingress, which logged nothing of it"},
		{"begun after the client gave up", []probe.Result{fail(15.94, 1), fail(16, 2)}, []accessEntry{timeout(18.5, 1, "10.0.0.2")}, unexplained,
			"2 of 2 failed requests are not in the ingress's log; the first: a request at 15.94 s (timeout over a new connection from 10.78.0.1:1) reached the ingress, which logged nothing of it (the nearest entry from that address started at 18.51 s"},
		{"one entry for two requests", []probe.Result{fail(15.94, 1), fail(15.95, 1)}, []accessEntry{timeout(15.94, 1, "10.0.0.2")}, unexplained, "at 15.95 s"},
		{"an address of no pod", []probe.Result{fail(15.94, 1)}, []accessEntry{timeout(15.94, 1, "10.0.0.9")}, unexplained, "10.0.0.9, the address of no pod seen"},
		{"no failure kept", nil, nil, unexplained, "kept no failed request"},
	} {
		v := ingressVerdict(c.entries, c.fails, pods, start)
		if v.cause != c.cause || !strings.Contains(v.why, c.why) {
			t.Errorf("%s: %q, %q; want %q, with %q", c.name, v.cause, v.why, c.cause, c.why)
		}
	}
}

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
		got := lbRefused(c.es, c.msgs, c.fails, start)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestIngressLogUnblocked: the lab's ingress answers and logs every failed request while
// the container runtime of its node stands still, because its access log goes to a
// file in memory (hack/ingress.yaml), not to stdout, which containerd empties. Node 1's
// containerd is stopped (SIGSTOP) for 4 s while 800 requests go through the ingress at
// 200 a second to a server that refuses them: each must get its 502 before the probe's
// 2 s timeout, and the log must hold each. With the log on stdout, the ingress answered
// the first 160 or so and held the rest until containerd went on (docs/testing.md).
func TestIngressLogUnblocked(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	ns := namespace(t, cs)
	pods, err := cs.CoreV1().Pods(ingressNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=traefik"})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.PodIP == "" {
		t.Fatalf("the lab's ingress pod: %v %v", pods, err)
	}
	// A Service whose one endpoint is a port of the ingress's own pod that nothing
	// listens on: every request is refused by the pod, and answered 502 at once.
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intOrPort(1)}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "app-refused", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To(int32(1)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{pods.Items[0].Status.PodIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: networkingv1.IngressSpec{
		IngressClassName: ptr.To(ingressClass),
		Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/" + ns, PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	if _, err := cs.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	url := ingressURL(t, cs, ns+"/")
	c := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusBadGateway {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered 502: %v", url, err)
		}
	}

	pidFile := filepath.Join(filepath.Dir(kubeconfigPath()), "pids", "containerd")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", pidFile, err)
	}
	resume := sync.OnceFunc(func() {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Errorf("node 1's containerd (pid %d) not resumed: %v", pid, err)
		}
	})
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("node 1's containerd (pid %d): %v", pid, err)
	}
	t.Cleanup(resume)
	time.AfterFunc(4*time.Second, resume)
	var results []probe.Result
	err = probe.Run(ctx, probe.Options{URL: url, Rate: 200, Duration: 4 * time.Second, Timeout: 2 * time.Second}, func(r probe.Result) { results = append(results, r) })
	resume()
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 800 {
		t.Fatalf("%d results, want 800", len(results))
	}
	var unanswered []string
	at := func(r probe.Result) string {
		return fmt.Sprintf("%.2f s over a %s connection from %s", r.Due.Add(r.Lag).Sub(start).Seconds(), r.Mode, r.Local)
	}
	for _, r := range results {
		if r.Code != http.StatusBadGateway {
			unanswered = append(unanswered, fmt.Sprintf("%s: %s after %v (%s)", at(r), r.Kind, r.Latency.Round(time.Millisecond), r.Err))
		}
	}
	if len(unanswered) > 0 {
		t.Errorf("%d of 800 requests were not answered 502 while containerd stood still; the first: %s", len(unanswered), unanswered[0])
	}
	var unlogged []string
	for k, i := range loggedAs(ingressAccess(t, cs, ns, start), results) {
		if i < 0 && results[k].Local != "" {
			unlogged = append(unlogged, at(results[k]))
		}
	}
	if len(unlogged) > 0 {
		t.Errorf("%d of 800 requests are not in the ingress's access log; the first: %s", len(unlogged), unlogged[0])
	}
}

// TestOthersFailed: the failed requests of the access log that are none of the
// prober's failures are counted; the prober's, the successful slow ones (logged for
// their time) and a failure of the prober's that the log lacks are not.
func TestOthersFailed(t *testing.T) {
	start := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	s := func(f float64) time.Time { return start.Add(time.Duration(f * float64(time.Second))) }
	entries := []accessEntry{
		{start: s(1.0), took: 2 * time.Second, client: "10.78.0.1:1001", server: "10.0.0.3", status: 499},  // the prober's
		{start: s(1.0), took: 2 * time.Second, client: "10.78.0.1:2001", server: "10.0.0.3", status: 499},  // another's timeout
		{start: s(1.2), took: time.Millisecond, client: "10.78.0.1:2002", server: "10.0.0.3", status: 502}, // another's 502
		{start: s(1.3), took: 1500 * time.Millisecond, client: "10.78.0.1:2003", server: "10.0.0.1", status: 200},
		{start: s(5.0), took: time.Millisecond, client: "10.78.0.1:1002", server: "10.0.0.3", status: 502}, // the prober's port, later
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
		if got := othersFailed(entries, c.fails); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
