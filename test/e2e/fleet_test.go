package e2e

import (
	"context"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/traffic"
)

// TestMixedFleet: #47's fleet, as a platform team runs it. nap installed with the
// adaptive wait as the fleet's, and a calibration of the ClusterIP, the ingress and the
// load balancer (Local, checks 3 s apart) kept in the cluster. Three services, each in a
// namespace under the default policy (nap.dev/policy=default: nothing opted in; the
// webhook gives the hook to the pods a Service selects): 10 replicas reached in the
// cluster only, 3 behind the ingress, 3 behind the load balancer, rolled at once, each
// probed at NAP_FLEET_RATE req/s (100). By path with the adaptive wait (each pod's MIN
// its own paths' need): no request over a new connection fails on any path; the pods in
// the cluster go before the load balancer's delay, the load balancer's not before it;
// and the fleet's mean hold is shorter than the one calibrated delay for every pod (the
// load balancer's, what calibrate recommends for a fleet) would hold each pod. How long
// the 10 replicas took to roll is logged.
//
// Each path drained with nap by path is a row of the experiment (make e2e-downtime).
func TestMixedFleet(t *testing.T) {
	cs := client(t)
	rate := 100.0
	if r, err := strconv.ParseFloat(os.Getenv("NAP_FLEET_RATE"), 64); err == nil && r > 0 && r <= 200 {
		rate = r
	}
	installController(t, cs, "--wait", "adaptive")
	cal := calibrateStored(t, cs, lbLocalSlow.checks, fleetCalibration(t, cs)...)
	lb, ok := cal.Tail(traffic.LoadBalancerLocal.Name)
	if !ok {
		t.Fatalf("no calibration of %s: %+v", traffic.LoadBalancerLocal.Name, cal)
	}
	lbDelay := seconds(lb.DelayS)
	byPath := variant{name: "nap by path, adaptive, default policy", mode: "plain", webhook: true, policy: scope.Default, rollAfterRoutes: true}
	members := []struct {
		path     labPath
		replicas int32
	}{{clusterIPNode1, 10}, {viaIngress, 3}, {lbLocalSlow, 3}}
	var scs []scenario
	for _, m := range members {
		scs = append(scs, scenario{path: m.path, disruption: rollingRestart, variant: byPath, expect: newClean, rounds: 1, replicas: m.replicas})
	}
	ms, took := rollFleet(t, cs, prepareAll(t, cs, scs...), rate)
	var holds []time.Duration
	for i, m := range ms {
		t.Log(m.row())
		m.check(t)
		holds = append(holds, m.terminations...)
		for _, h := range m.terminations {
			switch {
			case m.scenario.path.path.Name == traffic.LoadBalancerLocal.Name && h < lbDelay-time.Second:
				t.Errorf("%s: a pod behind the load balancer went %v after its deletion, before its path's %v", m.scenario, h, lbDelay)
			case m.scenario.path.path.Name == traffic.ClusterIP.Name && h >= lbDelay:
				t.Errorf("%s: a pod reached in the cluster only went %v after its deletion: held to the load balancer's %v", m.scenario, h, lbDelay)
			}
		}
		t.Logf("%s: %s until its last old pod was gone", m.scenario, took[i].Round(100*time.Millisecond))
		// Each pod the longest delay of the paths that reach it: its own, and its
		// Service's ClusterIP, which every service has. Paths may tie.
		var want time.Duration
		var named []string
		for _, p := range []string{traffic.ClusterIP.Name, m.scenario.path.path.Name} {
			tail, ok := cal.Tail(p)
			if !ok {
				t.Fatalf("no calibration of %s", p)
			}
			switch d := seconds(tail.DelayS); {
			case d > want:
				want, named = d, []string{p}
			case d == want && !slices.Contains(named, p):
				named = append(named, p)
			}
		}
		checkHooks(t, cs, m.ns, named, want, true)
	}
	// One delay for the fleet holds every pod that long (a fixed wait holds its delay:
	// TestNapBinaryPreStop; measured beside this fleet until 2026-12-06, 12 s for each
	// of its 16 pods, docs/controller.md, "A fleet").
	avg := mean(holds)
	t.Logf("the fleet, rolled by path: %d pods held %s on average, p99 %s (deletion to exit, whole seconds), where one delay holds each %v; the %d replicas in the cluster: %s",
		len(holds), avg.Round(100*time.Millisecond), percentile(holds, 0.99), lbDelay, members[0].replicas, took[0].Round(100*time.Millisecond))
	if avg >= lbDelay {
		t.Errorf("the fleet's mean hold %v by path: want shorter than the one delay's %v", avg, lbDelay)
	}
}

// fleetCalibration are calibrate's flags beyond the ClusterIP and the load balancer for
// the lab's fleet: the ingress. TestPathAwareDowntime asks for the same, and the two
// share one calibration (calibrateStored).
func fleetCalibration(t *testing.T, cs *kubernetes.Clientset) []string {
	return []string{"--ingress-class", ingressClass, "--ingress-url", strings.TrimSuffix(ingressURL(t, cs, ""), "/")}
}

// rollFleet restarts every trial's Deployment at once while each is probed at rate, and
// returns each one's report and how long each took from the restart until its last old
// pod was gone.
func rollFleet(t *testing.T, cs *kubernetes.Clientset, trials []*trial, rate float64) ([]downtime, []time.Duration) {
	t.Helper()
	ctx := context.Background()
	for _, tr := range trials {
		tr.begin(t, cs, rate)
	}
	start := time.Now()
	for _, tr := range trials {
		restart(t, cs, tr.ns, 0)
	}
	took := make([]time.Duration, len(trials))
	for left, deadline := len(trials), start.Add(4*time.Minute); left > 0; time.Sleep(200 * time.Millisecond) {
		for i, tr := range trials {
			if took[i] == 0 && rolledOut(ctx, cs, tr.ns) {
				took[i], left = time.Since(start), left-1
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fleet has not rolled out 4 minutes after its restart: %v", took)
		}
	}
	var ms []downtime
	for _, tr := range trials {
		tr.settled()
	}
	for _, tr := range trials {
		ms = append(ms, tr.finish(t, cs))
	}
	return ms, took
}

// mean is ds' mean; 0 for none.
func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// percentile is ds' p-quantile by nearest rank (the smallest value at least p of them
// do not exceed); 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[max(0, int(math.Ceil(p*float64(len(s))))-1)]
}
