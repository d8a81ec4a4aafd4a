package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/traffic"
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
//     sending to it (after the lag), and none fails;
//   - the fixed delay calibrate recommends: none fails.
func TestPooledLoadBalancer(t *testing.T) {
	cs := client(t)
	lag, err := time.ParseDuration(lbPods.checks[lbLag])
	if err != nil {
		t.Fatal(err)
	}
	rep := calibratePodTargets(t)
	if rep.Longest != traffic.LoadBalancerPods.Name || rep.Delay < lag.Seconds() {
		t.Fatalf("calibrate recommends %gs for %s; want at least the load balancer's %v lag, on %s", rep.Delay, rep.Longest, lag, traffic.LoadBalancerPods.Name)
	}
	connections := napAdaptive
	connections.expect = fails
	requests := napRequests
	requests.expect = clean
	fixed := variant{name: fmt.Sprintf("nap preStop %gs (calibrated)", rep.Delay), mode: "plain",
		inject: &inject.Options{Mode: inject.ModeBinary, Wait: fixedWait(fmt.Sprintf("%gs", rep.Delay))}, expect: clean}
	for _, v := range []variant{connections, requests, fixed} {
		m := measure(t, cs, scenario{path: lbPods, disruption: rollingRestart, variant: v, rounds: 1, vegeta: true}, 200)
		t.Log(m.row())
		m.check(t)
		for _, d := range m.terminations {
			switch v.name {
			case connections.name: // the wait ended with the new connections, before the load balancer let go
				if d >= lag {
					t.Errorf("%s: a pod went %v after its deletion: the wait on new connections outlasted the load balancer's %v lag (pods: %v)", m.scenario, d, lag, m.terminations)
				}
			case requests.name: // the requests held it until the load balancer let go
				if d < lag {
					t.Errorf("%s: a pod went %v after its deletion, before the load balancer's %v lag (pods: %v)", m.scenario, d, lag, m.terminations)
				}
			}
		}
	}
}

// calibratePodTargets runs napctl calibrate, one round, on the ClusterIP and the lab's
// load balancer with pod targets (lbPods' annotations).
func calibratePodTargets(t *testing.T) calibration {
	t.Helper()
	var ann []string
	for k, v := range lbPods.checks {
		ann = append(ann, k+"="+v)
	}
	rep := runCalibrate(t, "-n", "nap-calibrate-pooled", "--rounds", "1", "--quiet", "3s", "--nodeport", "-",
		"--lb-pods-annotation", strings.Join(ann, ","))
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
