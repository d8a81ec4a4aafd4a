package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// TestPooledLoadBalancer: the adaptive wait behind a client that pools connections
// (#46). The lab's application load balancer (lbPods) sends every client's requests to
// the pods over server connections it keeps, and stops sending to a pod only 10 s after
// the pod's endpoint stopped being ready. napctl calibrate measures that path's tail;
// then a rolling restart at 200 req/s:
//   - the negative control, the adaptive wait on new connections alone (nap's default):
//     each old pod sees no new connection, its wait ends after QUIET, the app exits,
//     and the requests the load balancer still sends it fail;
//   - the same binary with the request signal (--requests 1s), which also reads the
//     requests on open connections: it holds each old pod until the load balancer stops
//     sending to it (after the lag), and none fails.
//
// (The fixed delay calibrate recommends, which loses none there either, is the
// experiment's: make e2e-downtime.)
//
// Each pod the request signal holds goes after the load balancer's lag, and at most
// WITHIN + QUIET + 2 s after the load balancer deregistered it (as its runtime API
// showed, read every 100 ms): the wait ends with the traffic.
//
// The server is unmodified nginx (Debian's) in the demo app's place. The request
// signal comes from nap's controller, installed with the adaptive wait as the fleet's:
// its webhook gives it to the pods that the load balancer's Service reaches, since that
// load balancer pools its connections (traffic.Path.Pools). TestPooledByHand (make e2e)
// injects it by hand (--requests 1s) against a negative control of its own; the demo
// app behind the same load balancer is the experiment's (make e2e-downtime).
func TestPooledLoadBalancer(t *testing.T) {
	pooledPair(t, pooledRow{variant{name: "nap adaptive wait by the webhook (--requests by path)", mode: "plain", webhook: true, rollAfterRoutes: true}, clean, nginxServer, untilLetGo})
}

// TestPooledByHand: TestPooledLoadBalancer's claim with the request signal injected by
// hand (--requests 1s), the same binary and arguments the webhook chooses; make e2e
// alone (hack/e2e-lanes).
func TestPooledByHand(t *testing.T) {
	pooledPair(t, pooledRow{napRequests, clean, nginxServer, untilLetGo})
}

// hold is how long a pooled row's pods hold, against the load balancer's lag.
type hold int

const (
	beforeLag  hold = iota // the wait ended with the new connections, before the load balancer let go
	untilLetGo             // the requests held it until the load balancer let go, and no longer
)

// pooledRow is a row of the pooled load balancer's pair: its variant, claim, server and
// hold.
type pooledRow struct {
	v      variant
	expect expectation
	sv     *server
	hold   hold
}

// pooledPair calibrates the pooled load balancer's path, then measures the negative control
// (napAdaptive: the wait on new connections alone) and row.
func pooledPair(t *testing.T, row pooledRow) {
	cs := client(t)
	lag, err := time.ParseDuration(lbPods.checks[lbLag])
	if err != nil {
		t.Fatal(err)
	}
	rep := calibratePodTargets(t, "nap-calibrate-pooled")
	if rep.Longest != traffic.LoadBalancerPods.Name || rep.Delay < lag.Seconds() {
		t.Fatalf("calibrate recommends %gs for %s; want at least the load balancer's %v lag, on %s", rep.Delay, rep.Longest, lag, traffic.LoadBalancerPods.Name)
	}
	// Each pod held by the request signal goes at most WITHIN + QUIET after its last
	// request (the sleeper's rule, sleeper/nap), and its last request came when the
	// load balancer deregistered it; 2 s more for the sleeper's late readings, the
	// kubelet's SIGTERM and the app's exit (measured: 2.0 to 2.7 s over HTTP, up to 3.6
	// s over gRPC, in whole seconds cut). A bound from the path's calibrated tail and
	// the pod's deletion, as this test had, also holds the endpoints controller's and
	// the load balancer's lag in the run to calibrate's: in one CI run a pod went 1.2 s
	// past it.
	promised := wait.PooledRequests + wait.DefaultAdaptive().Quiet + 2*time.Second
	// The control first: once installed, the controller guards every namespace's nap
	// ConfigMap.
	for _, row := range []pooledRow{{napAdaptive, fails, nginxServer, beforeLag}, row} {
		v := row.v
		if v.webhook {
			installController(t, cs, "--wait", "adaptive")
		}
		m := prove(t, cs, scenario{path: lbPods, disruption: rollingRestart, variant: v, expect: row.expect, rounds: 1, vegeta: true, server: row.sv}, 200)
		if v.webhook { // the pods the webhook admitted once the load balancer's Service existed
			pods, err := cs.CoreV1().Pods(m.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=app"})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pods.Items {
				hook := p.Spec.Containers[0].Lifecycle
				why := p.Annotations[wait.ReasonAnnotation]
				// The ALB's Ingress names the Service: the ingress and lb-pods paths, both pooled.
				if hook == nil || hook.PreStop == nil || hook.PreStop.Exec == nil || !slices.Contains(hook.PreStop.Exec.Command, "--requests") ||
					!strings.Contains(why, "watches requests (--requests 1s): ingress via Service app-lb-pods, lb-pods via Service app-lb-pods,") {
					t.Errorf("%s: pod %s: preStop %+v, reason %q: want the request signal, chosen by path", m.scenario, p.Name, hook, why)
				}
			}
		}
		for _, d := range m.terminations {
			switch {
			case row.hold == beforeLag && d >= lag:
				t.Errorf("%s: a pod went %v after its deletion: the wait on new connections outlasted the load balancer's %v lag (pods: %v)", m.scenario, d, lag, m.terminations)
			case row.hold == untilLetGo && d < lag:
				t.Errorf("%s: a pod went %v after its deletion, before the load balancer's %v lag (pods: %v)", m.scenario, d, lag, m.terminations)
			}
		}
		if row.hold != untilLetGo {
			continue
		}
		if len(m.deregistered) != len(m.terminations) {
			t.Errorf("%s: %d pods seen from the load balancer's deregistration to exit, %d from deletion to exit", m.scenario, len(m.deregistered), len(m.terminations))
		}
		for pod, d := range m.deregistered {
			if d > promised {
				t.Errorf("%s: pod %s went %v after the load balancer deregistered it, more than WITHIN + QUIET + 2 s = %v: the wait outlasted the traffic (all: %v)",
					m.scenario, pod, d, promised, m.deregistered)
			}
		}
	}
}

// calibratePodTargets runs napctl calibrate in namespace ns, one round, on the
// ClusterIP and the lab's load balancer with pod targets (lbPods' annotations), with
// extra arguments (--store).
func calibratePodTargets(t *testing.T, ns string, extra ...string) calibration {
	t.Helper()
	var ann []string
	for k, v := range lbPods.checks {
		ann = append(ann, k+"="+v)
	}
	rep := runCalibrate(t, append([]string{"-n", ns, "--rounds", "1", "--quiet", "3s", "--nodeport", "-",
		"--lb-pods-ingress-class", albClass, "--lb-pods-annotation", strings.Join(ann, ",")}, extra...)...)
	for _, p := range rep.Paths {
		t.Logf("calibrated %s: max %.2fs over %d samples, %d of %d requests failed", p.Path.Name, p.Max, p.Samples, p.Failed, p.Requests)
	}
	return rep
}

// runCalibrate runs napctl calibrate on the lab with the napctl image, args and -o json,
// and returns its report; calibrate's progress goes to the test's stderr.
func runCalibrate(t *testing.T, args ...string) calibration {
	t.Helper()
	args = append([]string{"calibrate", "--kubeconfig", kubeconfigPath(), "--image", controllerImage, "-o", "json"}, args...)
	cmd := exec.Command(napctl(t), args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("napctl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	var rep calibration
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}
