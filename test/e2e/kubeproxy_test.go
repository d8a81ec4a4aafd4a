package e2e

import (
	"fmt"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// programming is a node's kube-proxy histogram kubeproxy_network_programming_duration_seconds:
// for each bucket's upper bound (seconds), how many rule programmings so far took at
// most that long, counted from the pod change that called for them (the EndpointSlice's
// trigger time) to the node's rules holding it. A pod deleted at t is out of that node's
// routes at t plus such a duration.
type programming map[float64]float64

// kubeProxyProgramming reads node 1's (or node 2's) kube-proxy histogram from its
// metrics address (hack/cluster.sh: 127.0.0.1:10249 in each node's network namespace).
func kubeProxyProgramming(t *testing.T, onNode2 bool) programming {
	t.Helper()
	args := []string{"curl", "-sS", "--max-time", "5", "http://127.0.0.1:10249/metrics"}
	if onNode2 {
		args = append([]string{"nsenter", "--net=" + node2NetNS}, args...)
	}
	out, err := exec.Command(args[0], args[1:]...).Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	p, err := parseProgramming(string(out))
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return p
}

// parseProgramming takes the IPv4 buckets of the histogram from a metrics page.
func parseProgramming(page string) (programming, error) {
	const name = "kubeproxy_network_programming_duration_seconds_bucket{"
	p := programming{}
	for _, l := range strings.Split(page, "\n") {
		labels, value, ok := strings.Cut(strings.TrimPrefix(l, name), "} ")
		if !ok || !strings.HasPrefix(l, name) || !strings.Contains(labels, `ip_family="IPv4"`) {
			continue
		}
		_, le, _ := strings.Cut(labels, `le="`)
		le, _, _ = strings.Cut(le, `"`)
		bound, err := strconv.ParseFloat(le, 64) // "+Inf" too
		if err != nil {
			return nil, fmt.Errorf("%q: %v", l, err)
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", l, err)
		}
		p[bound] = n
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("no %s...} line", name)
	}
	return p, nil
}

// since is what was programmed between before and p: how many programmings, and the
// bounds of the slowest one's bucket (it took more than lo seconds, at most hi).
func (p programming) since(before programming) (n int, lo, hi float64) {
	bounds := make([]float64, 0, len(p))
	for b := range p {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	var in, below float64 // programmings up to this bucket's bound, and the one before's
	for i, b := range bounds {
		in = p[b] - before[b]
		if in > below {
			hi, lo = b, 0
			if i > 0 {
				lo = bounds[i-1]
			}
		}
		below = in
	}
	n = int(in) // the last bound is +Inf: every one
	return n, lo, hi
}

// routeTimes is what each node's kube-proxy programmed during a measurement.
type routeTimes [2]struct {
	n      int
	lo, hi float64
}

// startRouteTimes reads both nodes' histograms; the function it returns reads them
// again and gives what was programmed in between.
func startRouteTimes(t *testing.T) func() routeTimes {
	t.Helper()
	before := [2]programming{kubeProxyProgramming(t, false), kubeProxyProgramming(t, true)}
	return func() routeTimes {
		var r routeTimes
		for i, onNode2 := range []bool{false, true} {
			r[i].n, r[i].lo, r[i].hi = kubeProxyProgramming(t, onNode2).since(before[i])
		}
		return r
	}
}

func (r routeTimes) String() string {
	var s []string
	for i, n := range r {
		s = append(s, fmt.Sprintf("node %d: %d programmings, the slowest %s", i+1, n.n, bucket(n.lo, n.hi)))
	}
	return strings.Join(s, "; ")
}

// bucket names a histogram bucket's bounds in seconds.
func bucket(lo, hi float64) string {
	if math.IsInf(hi, 1) {
		return fmt.Sprintf("over %g s", lo)
	}
	return fmt.Sprintf("%g to %g s", lo, hi)
}

// slowest is the upper bound of the slowest programming of either node (seconds; +Inf
// past the histogram's last bucket, 0 for none).
func (r routeTimes) slowest() float64 {
	var hi float64
	for _, n := range r {
		if n.n > 0 {
			hi = max(hi, n.hi)
		}
	}
	return hi
}

// late says whether a node's kube-proxy took a pod out of its routes later than stay
// after the change (the shortest time a pod of the measurement spent from deletion to
// its app's exit): then a SYN could follow the node's rules to a pod that was gone, what
// no delay shorter than the routes' tail prevents (docs/downtime.md, "Reading it").
func (r routeTimes) late(stay time.Duration) (string, bool) {
	for i, n := range r {
		if n.n > 0 && n.lo >= stay.Seconds() {
			return fmt.Sprintf("node %d's kube-proxy programmed a change %s after it, the pods stayed %v", i+1, bucket(n.lo, n.hi), stay), true
		}
	}
	return "", false
}

func TestParseProgramming(t *testing.T) {
	page := func(counts ...float64) string {
		var b strings.Builder
		b.WriteString("# TYPE kubeproxy_network_programming_duration_seconds histogram\n")
		for i, le := range []string{"0.25", "1", "2", "6", "7", "+Inf"} {
			fmt.Fprintf(&b, "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv4\",le=\"%s\"} %g\n", le, counts[i])
			fmt.Fprintf(&b, "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv6\",le=\"%s\"} 99\n", le)
		}
		return b.String()
	}
	before, err := parseProgramming(page(1, 5, 9, 10, 10, 10))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		after  []float64
		n      int
		lo, hi float64
		late   bool // with pods staying 6 s
	}{
		{"none", []float64{1, 5, 9, 10, 10, 10}, 0, 0, 0, false},
		{"quick", []float64{3, 7, 11, 12, 12, 12}, 2, 0, 0.25, false},
		{"within the stay", []float64{1, 5, 11, 13, 13, 13}, 3, 2, 6, false},
		{"a second late", []float64{1, 5, 9, 10, 11, 11}, 1, 6, 7, true},
		{"beyond the last bound", []float64{1, 5, 9, 10, 10, 11}, 1, 7, math.Inf(1), true},
	} {
		after, err := parseProgramming(page(c.after...))
		if err != nil {
			t.Fatal(err)
		}
		n, lo, hi := after.since(before)
		if n != c.n || lo != c.lo || hi != c.hi {
			t.Errorf("%s: since = %d, %g, %g; want %d, %g, %g", c.name, n, lo, hi, c.n, c.lo, c.hi)
		}
		r := routeTimes{{n: n, lo: lo, hi: hi}}
		if why, late := r.late(6 * time.Second); late != c.late {
			t.Errorf("%s: late = %v (%s), want %v", c.name, late, why, c.late)
		}
	}
	if _, err := parseProgramming("up 1\n"); err == nil {
		t.Error("a page without the histogram parsed")
	}
}

// TestDowntimeExplained: a measurement's records clear the hold of a loss when a
// kube-proxy programmed a change later than the shortest stay, when the path's proxy let
// a pod go more than a second after its app's exit (which the API cuts to whole
// seconds), or when the ingress's access log shows it lost the requests itself.
func TestDowntimeExplained(t *testing.T) {
	quick := routeTimes{{n: 4, lo: 1, hi: 2}, {n: 4, lo: 2, hi: 6}}
	for _, c := range []struct {
		name         string
		routes       routeTimes
		terminations []time.Duration
		deregistered map[string]time.Duration
		ingress      verdict
		explained    bool
	}{
		{"nothing moved", quick, nil, nil, verdict{}, false},
		{"kube-proxy within the stay", quick, []time.Duration{7 * time.Second}, nil, verdict{}, false},
		{"kube-proxy past the stay", quick, []time.Duration{2 * time.Second, 8 * time.Second}, nil, verdict{}, true},
		{"let go before the exit", quick, []time.Duration{9 * time.Second}, map[string]time.Duration{"a": 3 * time.Second, "b": 0}, verdict{}, false},
		{"let go within the exit's second", quick, []time.Duration{9 * time.Second}, map[string]time.Duration{"a": -time.Second}, verdict{}, false},
		{"let go after the exit", quick, []time.Duration{9 * time.Second}, map[string]time.Duration{"a": 2 * time.Second, "b": -3 * time.Second}, verdict{}, true},
		{"the ingress's own", quick, []time.Duration{9 * time.Second}, map[string]time.Duration{"a": 3 * time.Second}, verdict{"a stall", ingressOwn}, true},
		{"a pod's exit by the ingress's log", quick, []time.Duration{9 * time.Second}, map[string]time.Duration{"a": 3 * time.Second}, verdict{"pod a exited", podExit}, false},
	} {
		m := downtime{scenario: scenario{path: viaIngress}, routes: c.routes, terminations: c.terminations, deregistered: c.deregistered, ingress: c.ingress}
		if why, ok := m.explained(); ok != c.explained {
			t.Errorf("%s: explained = %v (%s), want %v", c.name, ok, why, c.explained)
		}
	}
}
