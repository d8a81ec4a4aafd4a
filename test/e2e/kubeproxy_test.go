package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/test/forensic"
)

// kubeProxyProgramming reads node 1's (or node 2's) kube-proxy histogram from its
// metrics address (hack/cluster.sh: 127.0.0.1:10249 in each node's network namespace).
func kubeProxyProgramming(t *testing.T, onNode2 bool) forensic.Programming {
	t.Helper()
	cmd := onNode(onNode2, "curl", "-sS", "--max-time", "5", "http://127.0.0.1:10249/metrics")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	p, err := forensic.ParseProgramming(string(out))
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	return p
}

// startRouteTimes reads both nodes' histograms; the function it returns reads them
// again and gives what was programmed in between.
func startRouteTimes(t *testing.T) func() forensic.RouteTimes {
	t.Helper()
	before := [2]forensic.Programming{kubeProxyProgramming(t, false), kubeProxyProgramming(t, true)}
	return func() forensic.RouteTimes {
		var r forensic.RouteTimes
		for i, onNode2 := range []bool{false, true} {
			r[i].N, r[i].Lo, r[i].Hi = kubeProxyProgramming(t, onNode2).Since(before[i])
		}
		return r
	}
}

// TestDowntimeExplained: a measurement's records clear the hold of a loss when a
// kube-proxy programmed a change later than the shortest stay, when the path's proxy let
// a pod go more than a second after its app's exit (which the API cuts to whole
// seconds), or when the ingress's access log shows it lost the requests itself.
func TestDowntimeExplained(t *testing.T) {
	quick := forensic.RouteTimes{{N: 4, Lo: 1, Hi: 2}, {N: 4, Lo: 2, Hi: 6}}
	for _, c := range []struct {
		name         string
		routes       forensic.RouteTimes
		terminations []time.Duration
		deregistered map[string]time.Duration
		ingress      forensic.Verdict
		explained    bool
	}{
		{"nothing moved", quick, nil, nil, forensic.Verdict{}, false},
		{"kube-proxy within the stay", quick, []time.Duration{7 * time.Second}, nil, forensic.Verdict{}, false},
		{"kube-proxy past the stay", quick, []time.Duration{2 * time.Second, 8 * time.Second}, nil, forensic.Verdict{}, true},
		{"let go before the exit", quick, []time.Duration{9 * time.Second}, map[string]time.Duration{"a": 3 * time.Second, "b": 0}, forensic.Verdict{}, false},
		{"let go within the exit's second", quick, []time.Duration{9 * time.Second}, map[string]time.Duration{"a": -time.Second}, forensic.Verdict{}, false},
		{"let go after the exit", quick, []time.Duration{9 * time.Second}, map[string]time.Duration{"a": 2 * time.Second, "b": -3 * time.Second}, forensic.Verdict{}, true},
		{"the ingress's own", quick, []time.Duration{9 * time.Second}, map[string]time.Duration{"a": 3 * time.Second}, forensic.Verdict{Why: "a stall", Cause: forensic.IngressOwn}, true},
		{"a pod's exit by the ingress's log", quick, []time.Duration{9 * time.Second}, map[string]time.Duration{"a": 3 * time.Second}, forensic.Verdict{Why: "pod a exited", Cause: forensic.PodExit}, false},
	} {
		m := downtime{scenario: scenario{path: viaIngress}, routes: c.routes, terminations: c.terminations, deregistered: c.deregistered, ingress: c.ingress}
		if why, ok := m.explained(); ok != c.explained {
			t.Errorf("%s: explained = %v (%s), want %v", c.name, ok, why, c.explained)
		}
	}
}
