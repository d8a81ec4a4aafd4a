package e2e

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/calibrate"
	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// The variants of nap by path: installed with a calibration kept in the cluster, the
// webhook gives each pod the wait of the slowest path that reaches it.
var (
	// napByPath: the pods admitted once every path's objects exist (measure rolls them).
	napByPath = variant{name: "nap by path", mode: "plain", webhook: true, rollAfterRoutes: true}
	// napByPathAdaptive: the same, installed with the adaptive wait as the fleet's: each
	// pod's MIN is its paths' need, and the wait ends with the traffic (#47's fleet).
	napByPathAdaptive = variant{name: "nap by path, adaptive", mode: "plain", webhook: true, rollAfterRoutes: true,
		install: []string{"--wait", "adaptive"}}
	// napByPathBefore: the pods admitted before the load balancer's Service existed:
	// they hold for the cluster's tail, and the load balancer's is longer.
	napByPathBefore = variant{name: "nap by path, admitted before the load balancer", mode: "plain", webhook: true}
)

// TestPathAwareDowntime: behind the lab's load balancer with externalTrafficPolicy
// Local and checks 3 s apart (lbLocalSlow: a node out 6 to 9 s after its last pod went),
// a scale-down of 4 replicas to 1, and the waits nap gives there, installed with a
// calibration that napctl calibrate measured on the lab and kept in the cluster
// (--store): the in-cluster ClusterIP path, that load balancer and the ingress (the
// fleet's, which TestMixedFleet measured earlier in the run: calibrateStored).
//   - pods admitted before a LoadBalancer Service selected them hold the ClusterIP's
//     short delay, as pods reached only in the cluster do: the Reporter says
//     delay-below-path within 30 s of the Service, and the scale-down behind the load
//     balancer loses requests (the negative control);
//   - after a rollout the new pods hold the load balancer's longer delay, and the same
//     scale-down loses none.
//
// That pods reached only in the cluster hold the short delay and lose nothing in a
// rolling restart is TestMixedFleet's claim in make test (its ClusterIP service, under
// the adaptive wait whose MIN is that delay), and the experiment's row "ClusterIP from
// node 1, rolling restart, nap by path" under the fixed one.
//
// nap's adaptive wait behind the same load balancer, which needs no calibration: the
// experiment's scale-down rows, and TestDrainDowntime's drain in make test.
//
// make e2e alone (hack/e2e-lanes' full lane): make test proves its claims with other
// tests' pairs. A wait decided without the route that needs it loses: the control of
// TestWaitDecidedAtTermination (pods admitted before a pooling load balancer's Service
// existed); the pods rolled by path behind this load balancer hold its calibrated
// delay and lose none: TestMixedFleet's load balancer service; the Reporter's
// NapDelayBelowPath when a Service outgrows a pod's delay: TestPathAwareWebhook
// (package controller, a real API server).
func TestPathAwareDowntime(t *testing.T) {
	cs := client(t)
	installController(t, cs)
	cal := calibrateStored(t, cs, lbLocalSlow.checks, fleetCalibration(t, cs)...)
	cluster, okC := cal.Tail(traffic.ClusterIP.Name)
	lb, okL := cal.Tail(traffic.LoadBalancerLocal.Name)
	if !okC || !okL || lb.DelayS <= math.Max(cluster.DelayS, 5) {
		t.Fatalf("calibrated clusterip %+v, lb-local %+v: want the load balancer's delay above the cluster's and the fleet's 5 s", cluster, lb)
	}
	t.Logf("calibrated: clusterip needs %gs (its tail %.2fs over %d samples), lb-local %gs (%.2fs over %d)",
		cluster.DelayS, cluster.Max, cluster.Samples, lb.DelayS, lb.Max, lb.Samples)

	// Behind the load balancer, admitted before it: the negative control, and the
	// Reporter.
	before := prove(t, cs, scenario{path: lbLocalSlow, disruption: scaleDown, variant: napByPathBefore, expect: fails, rounds: 1}, 200)
	for _, d := range before.terminations {
		if d > seconds(cluster.DelayS)+3*time.Second {
			t.Errorf("a pod admitted before the load balancer went %v after its deletion: longer than the cluster's %gs wait", d, cluster.DelayS)
		}
	}
	checkReported(t, cs, before.ns, calibrate.LoadBalancerService(traffic.LoadBalancerLocal, calibrate.Target{Service: "app"}))

	// Rolled once the load balancer's Service exists: its wait.
	after := prove(t, cs, scenario{path: lbLocalSlow, disruption: scaleDown, variant: napByPath, expect: newClean, rounds: 1}, 200)
	checkHooks(t, cs, after.ns, []string{traffic.LoadBalancerLocal.Name}, seconds(lb.DelayS), false)
	for _, d := range after.terminations {
		if d < seconds(lb.DelayS)-time.Second {
			t.Errorf("a pod behind the load balancer went %v after its deletion, before its %gs wait", d, lb.DelayS)
		}
	}
	t.Logf("preStop holds: %gs in the cluster, %gs behind the load balancer; one fleet-wide calibrated delay would hold every pod %gs",
		cluster.DelayS, lb.DelayS, lb.DelayS)
	// What that saves a fleet: TestMixedFleet.
}

// checkHooks checks that the pods of ns hold for want (the adaptive wait's MIN, with
// adaptive), the delay of one of paths (those whose delay it is, when several tie), as
// their nap.dev/delay-reason says.
func checkHooks(t *testing.T, cs *kubernetes.Clientset, ns string, paths []string, want time.Duration, adaptive bool) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		h := hook.Of(p.Spec.Containers[0])
		why := p.Annotations[wait.ReasonAnnotation]
		named := slices.ContainsFunc(paths, func(path string) bool { return strings.Contains(why, " for "+path+" via Service ") })
		if !h.Known || h.Adaptive() != adaptive || h.Holds() != want || !named {
			t.Errorf("%s: pod %s: %s wait (adaptive: %v), holds %v (%s); want %v for %s (adaptive: %v)", ns, p.Name, h.Kind, h.Adaptive(), h.Holds(), why, want, strings.Join(paths, " or "), adaptive)
		}
	}
}

// calibrateStored runs napctl calibrate on the lab's ClusterIP and its load balancer
// (Local, with checks), two rounds (four samples of the load balancer's tail: one
// round's two can fall a check interval short of the worst), --store: the calibration the controller then reads,
// which it returns once the controller serves it (nap_calibration_delay_seconds);
// extra are more of calibrate's flags (an ingress to measure).
//
// A calibration is of the lab, not of a test: the first test to ask for one with these
// flags measures it, and a later test of the same run that asks for the same has the
// same ConfigMap stored again, as a platform team keeps one calibration for its fleet
// (the tests run one at a time: doc.go). TestPathAwareDowntime and TestMixedFleet share
// one so, which saves a minute of every make e2e.
func calibrateStored(t *testing.T, cs *kubernetes.Clientset, checks map[string]string, extra ...string) *traffic.Calibration {
	t.Helper()
	args := []string{"-n", "nap-calibrate-bypath", "--rounds", "2", "--quiet", "3s", "--nodeport", "-", "--lb", "local", "--store"}
	for _, k := range slices.Sorted(maps.Keys(checks)) {
		args = append(args, "--lb-annotation", k+"="+checks[k])
	}
	args = append(args, extra...)
	key := strings.Join(args, " ")
	labCalibrations.Lock()
	kept, ok := labCalibrations.byFlags[key]
	labCalibrations.Unlock()
	if ok {
		t.Logf("the calibration %s measured at %s with napctl calibrate %s, stored again", kept.by, kept.at.Format(time.TimeOnly), key)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kept.cm.Name, Namespace: kept.cm.Namespace, Labels: kept.cm.Labels, Annotations: kept.cm.Annotations},
			Data: kept.cm.Data, BinaryData: kept.cm.BinaryData}
		if _, err := cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	} else {
		runCalibrate(t, args...)
	}
	t.Cleanup(func() {
		cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Delete(context.Background(), kube.CalibrationConfigMap, metav1.DeleteOptions{})
	})
	cm, err := cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Get(context.Background(), kube.CalibrationConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cal, err := controller.ReadCalibrationConfigMap(cm)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		labCalibrations.Lock()
		labCalibrations.byFlags[key] = keptCalibration{cm: cm.DeepCopy(), by: t.Name(), at: time.Now()}
		labCalibrations.Unlock()
	}
	lb, _ := cal.Tail(traffic.LoadBalancerLocal.Name)
	series := fmt.Sprintf(`nap_calibration_delay_seconds{path=%q}`, traffic.LoadBalancerLocal.Name)
	for deadline := time.Now().Add(30 * time.Second); controllerMetric(t, cs, series) != 2*lb.DelayS; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v over the two replicas, want %g each", series, controllerMetric(t, cs, series), lb.DelayS)
		}
	}
	return cal
}

// labCalibrations are the calibrations calibrateStored measured in this run, by its
// flags.
var labCalibrations = struct {
	sync.Mutex
	byFlags map[string]keptCalibration
}{byFlags: map[string]keptCalibration{}}

// keptCalibration is a calibration's ConfigMap as calibrate stored it, the test that
// measured it and when.
type keptCalibration struct {
	cm *corev1.ConfigMap
	by string
	at time.Time
}

// checkReported checks that the Reporter put a NapDelayBelowPath event on the demo's
// Deployment in ns within 30 s of the Service lb's creation.
func checkReported(t *testing.T, cs *kubernetes.Clientset, ns, lb string) {
	t.Helper()
	ctx := context.Background()
	svc, err := cs.CoreV1().Services(ns).Get(ctx, lb, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=NapDelayBelowPath"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		at := e.FirstTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		if e.InvolvedObject.Kind == "Deployment" && e.InvolvedObject.Name == "app" {
			after := at.Sub(svc.CreationTimestamp.Time)
			t.Logf("the Reporter said %v after the LoadBalancer Service: %s", after, e.Message)
			if after > 30*time.Second {
				t.Errorf("NapDelayBelowPath %v after the LoadBalancer Service, want within 30 s", after)
			}
			if !strings.Contains(e.Message, "Service "+lb+" reaches the pod through the load balancer (Local)") {
				t.Errorf("NapDelayBelowPath: %q", e.Message)
			}
			return
		}
	}
	t.Errorf("no NapDelayBelowPath event on Deployment %s/app: %+v", ns, evs.Items)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
