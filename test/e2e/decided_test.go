package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/wait"
)

// decidedRow is one row of the live wait's proof: something the cluster learns after
// the pods were admitted, and the pods' wait decided at admission (the negative
// control: nap's controller as it was) or when each pod terminates (--live-wait).
type decidedRow struct {
	// change: what the cluster learns once the pods run.
	change decidedChange
	// calibrated: with routesLater, a calibration of the path is stored before the
	// pods are admitted (what sparse traffic needs: MIN).
	calibrated bool
	// fixed: the fleet's wait is nap's fixed 5 s, not the adaptive wait.
	fixed  bool
	live   bool // the controller installed with --live-wait
	rate   float64
	expect expectation
	// replicas scaled down to 1: the more pods leave at once, the more sparse
	// traffic meets one that left early (at 2 req/s, scaling 4 pods to 1, the control
	// lost 3 and 1 requests in two runs: a run may lose none by chance; over three
	// scale-downs the pods of the second and third were admitted after the change).
	replicas int32
	// full: a row of the whole table (make e2e-decided), not of make test's pairs.
	full bool
}

// decidedChange is what the cluster learns after the pods' admission.
type decidedChange int

const (
	// routesLater: the load balancer's Service and the ALB's Ingress are created once
	// the Deployment's pods run (a manifest applied with the Deployment first, a load
	// balancer added to a running app): the webhook admitted them to the ClusterIP
	// alone, the adaptive wait on new connections.
	routesLater decidedChange = iota
	// calibrationLater: the routes exist when the pods are admitted (the request
	// signal, by path); a calibration of the path is stored once they run: its MIN, the
	// path's tail plus the margin, is what sparse traffic needs (docs/adaptive.md).
	calibrationLater
)

func (c decidedChange) String() string {
	return [...]string{"routes added to the running pods", "a calibration stored after the pods started"}[c]
}

func (r decidedRow) variant() variant {
	how := "decided at admission"
	if r.live {
		how = "decided at termination (--live-wait)"
	}
	fleet, change := "adaptive", r.change.String()
	if r.fixed {
		fleet = "fixed 5s"
	}
	if r.calibrated {
		change += " (calibrated before)"
	}
	return variant{name: fmt.Sprintf("nap by the webhook, %s, %s, %s", fleet, change, how), mode: "plain", webhook: true, rollAfterRoutes: r.change == calibrationLater}
}

// install is napctl install's arguments for the row.
func (r decidedRow) install() []string {
	var args []string
	if !r.fixed {
		args = append(args, "--wait", "adaptive")
	}
	if r.live {
		args = append(args, "--"+cli.LiveWaitFlag)
	}
	return args
}

// decidedRows are TestWaitDecidedAtTermination's rows, in the order they run (by
// installation).
var decidedRows = []decidedRow{
	{change: routesLater, rate: 200, expect: fails, replicas: 4},
	{change: calibrationLater, rate: 2, expect: fails, replicas: 8, full: true},
	{change: routesLater, calibrated: true, rate: 2, expect: fails, replicas: 8, full: true},
	{change: routesLater, live: true, rate: 200, expect: clean, replicas: 4},
	{change: calibrationLater, live: true, rate: 2, expect: clean, replicas: 8, full: true},
	{change: routesLater, calibrated: true, live: true, rate: 2, expect: clean, replicas: 8, full: true},
	{change: calibrationLater, fixed: true, rate: 200, expect: fails, replicas: 4, full: true},
	{change: calibrationLater, fixed: true, live: true, rate: 200, expect: clean, replicas: 4, full: true},
}

// TestWaitDecidedAtTermination: the wait decided when the pod terminates, from what
// the cluster knows then (napctl install --live-wait), behind the lab's application
// load balancer that pools its connections to the pods and lets a pod go 10 s after its
// endpoint did (lbPods). nap's controller is installed with the adaptive wait as the
// fleet's; each row is a scale-down to 1 pod after the cluster learned something the
// pods' admission did not know. make test runs one pair:
//   - routes added to the running pods, 4 of them, at 200 req/s: admitted to the
//     ClusterIP alone, the pods wait for new connections to stop; the load balancer
//     sends over the connections it keeps, and requests fail. Decided at termination,
//     each pod reads the request signal its routes now need, holds until the load
//     balancer let it go, and none fails.
//
// With NAP_DECIDED_ALL=1 (make e2e-decided), the whole table: a calibration stored
// after the pods started, 8 of them, at 2 req/s (the request signal alone ends the wait
// in a gap of sparse traffic, and requests fail; decided at termination, each pod reads
// the calibrated MIN and none fails); the routes added at 2 req/s with a calibration
// stored before the pods (the in-cluster MIN they were admitted with is too short);
// and a calibration stored later under the fleet's fixed 5 s at 200 req/s.
//
// For each row decided at termination, the test waits until the controller wrote the
// workload's live wait (kube.LiveWaitsName) and every pod shows it in its nap volume
// (the kubelet's refresh), and says how long that took. The pods gone then say
// wait=live in their verdicts, hold at least the load balancer's lag and the
// calibrated MIN, and no longer than MIN + QUIET + 2 s where there is one; an adaptive
// wait no longer than the load balancer kept sending plus WITHIN + QUIET + 2 s
// (TestPooledLoadBalancer's bound). The controls' admission-time hooks read no live
// wait.
func TestWaitDecidedAtTermination(t *testing.T) {
	cs := client(t)
	lag, err := time.ParseDuration(lbPods.checks[lbLag])
	if err != nil {
		t.Fatal(err)
	}
	all := os.Getenv("NAP_DECIDED_ALL") == "1"
	promised := wait.PooledRequests + wait.DefaultAdaptive().Quiet + 2*time.Second
	var saved *corev1.ConfigMap // the calibration as the first napctl calibrate --store kept it
	// calibrate stores the calibration anew (napctl calibrate the first time, then
	// the ConfigMap it kept, again) or, with on false, deletes it; it returns its MIN
	// for lbPods.
	calibrate := func(on bool) time.Duration {
		t.Helper()
		ctx := context.Background()
		cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Delete(ctx, kube.CalibrationConfigMap, metav1.DeleteOptions{})
		if !on {
			return 0
		}
		if saved == nil {
			saved = storeCalibrationLater(t, cs)
		} else {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: saved.Name, Labels: saved.Labels}, Data: saved.Data}
			if _, err := cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		cal, err := controller.ReadCalibrationConfigMap(saved)
		if err != nil {
			t.Fatal(err)
		}
		tail, ok := cal.Tail(lbPods.path.Name)
		delay := time.Duration(tail.DelayS * float64(time.Second))
		if !ok || delay < lag {
			t.Fatalf("the calibration stored measured %s at %+v (%v): want at least the load balancer's %v lag", lbPods.path.Name, tail, ok, lag)
		}
		return delay
	}
	installed := ""
	uninstall := func() {}
	for _, row := range decidedRows {
		if row.full && !all {
			continue
		}
		if want := strings.Join(row.install(), " "); installed != want {
			uninstall() // the calibration kept in nap's namespace goes with it
			uninstall, installed = installController(t, cs, row.install()...), want
		}
		var min time.Duration // the calibrated MIN the live wait should carry
		if row.calibrated {
			min = calibrate(true)
		} else {
			calibrate(false)
		}
		sc := scenario{path: lbPods, disruption: scaleDown, variant: row.variant(), expect: row.expect, rounds: 1, replicas: row.replicas}
		tr := prepare(t, cs, sc)
		// When the routes came: the load balancer's Service, created by prepare once
		// the pods ran (its timestamp in whole seconds).
		lb, err := cs.CoreV1().Services(tr.ns).Get(context.Background(), tr.lbName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		changed := lb.CreationTimestamp.Time
		if row.change == calibrationLater {
			changed = time.Now()
			min = calibrate(true)
		}
		checkAdmitted(t, cs, tr.ns, row)
		if row.live {
			wrote, shown := waitLiveShown(t, cs, tr.ns, changed, func(r nap.Request) bool {
				return r.Adaptive == !row.fixed && (row.fixed || r.Requests > 0) && r.Duration >= min
			})
			t.Logf("%s: the controller wrote the live wait %v after the change, every pod showed it %v after", sc, wrote, shown)
		}
		pods, err := cs.CoreV1().Pods(tr.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=app"})
		if err != nil {
			t.Fatal(err)
		}
		final, gone := watchGone(t, cs, tr.ns, "app=app", pods.ResourceVersion, int(sc.size())-1)
		tr.begin(t, cs, row.rate)
		disrupt(t, cs, tr.ns, sc.disruption, 0, tr.settle)
		tr.settled()
		m := tr.finish(t, cs)
		gone()
		t.Log(m.row())
		m.check(t)

		for name, p := range final {
			msg, ok := terminatedMessage(p, "app")
			if !ok {
				continue // a pod that runs on
			}
			v, _ := nap.ParseVerdict(msg)
			t.Logf("%s: pod %s said %q", sc, name, msg)
			if want := map[bool]string{true: nap.WaitLive, false: ""}[row.live]; v.Wait != want {
				t.Errorf("%s: pod %s's verdict %q: want wait=%q", sc, name, msg, want)
			}
		}
		for _, d := range m.terminations {
			switch {
			case row.live && d < max(lag, min-time.Second):
				t.Errorf("%s: a pod went %v after its deletion, before the load balancer's %v lag and the calibrated %v (pods: %v)", sc, d, lag, min, m.terminations)
			case row.live && min > 0 && d > min+wait.DefaultAdaptive().Quiet+2*time.Second:
				t.Errorf("%s: a pod went %v after its deletion, more than the calibrated %v + QUIET + 2 s (pods: %v)", sc, d, min, m.terminations)
			case !row.live && d >= lag && (row.change == routesLater || row.fixed):
				t.Errorf("%s: a pod went %v after its deletion: its admission's wait outlasted the load balancer's %v lag (pods: %v)", sc, d, lag, m.terminations)
			}
		}
		if row.live && !row.fixed {
			for pod, d := range m.deregistered {
				if d > promised {
					t.Errorf("%s: pod %s went %v after the load balancer let it go, more than WITHIN + QUIET + 2 s = %v (all: %v)", sc, pod, d, promised, m.deregistered)
				}
			}
		}
		cs.CoreV1().Namespaces().Delete(context.Background(), tr.ns, metav1.DeleteOptions{})
	}
}

// storeCalibrationLater runs napctl calibrate --store for the load balancer with pod
// targets, as a user calibrating once the pods run, and returns the ConfigMap it kept.
func storeCalibrationLater(t *testing.T, cs *kubernetes.Clientset) *corev1.ConfigMap {
	t.Helper()
	calibratePodTargets(t, "nap-calibrate-later", "--store")
	cm, err := cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Get(context.Background(), kube.CalibrationConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// checkAdmitted checks the hooks the webhook gave ns's pods at admission: the fleet's
// wait, reading the live wait when row's is, and the request signal only for an
// adaptive wait where the routes existed then.
func checkAdmitted(t *testing.T, cs *kubernetes.Clientset, ns string, row decidedRow) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		h := hook.Of(p.Spec.Containers[0])
		signal := !row.fixed && row.change == calibrationLater
		kind := h.Kind == hook.Nap || row.fixed && !row.live && h.Kind == hook.NativeSleep // the fleet's 5 s may be the native sleep
		if !kind || h.Wait.IsAdaptive() == row.fixed || h.Wait.Live != row.live || (h.Wait.Requests > 0) != signal {
			t.Errorf("%s: pod %s admitted with %s %+v live=%v: want the fleet's wait (fixed: %v), live=%v, the request signal %v", ns, p.Name, h.Kind, h.Wait, h.Wait.Live, row.fixed, row.live, signal)
		}
	}
}

// waitLiveShown waits, at most 3 minutes, until the controller wrote the demo
// Deployment's live wait in ns as ok accepts it and every running pod of it shows that
// line in its nap volume, and returns how long each took since changed.
func waitLiveShown(t *testing.T, cs *kubernetes.Clientset, ns string, changed time.Time, ok func(nap.Request) bool) (wrote, shown time.Duration) {
	t.Helper()
	ctx := context.Background()
	key := kube.LiveKey(kube.Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "app"})
	deadline := changed.Add(3 * time.Minute)
	line, last := "", ""
	for ; line == ""; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no live wait for %s in %s within 3 min: %s", ns, key, kube.LiveWaitsName, last)
		}
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, kube.LiveWaitsName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			continue
		}
		last = fmt.Sprintf("%q", cm.Data[key])
		if r, good := nap.ParseLive([]byte(cm.Data[key])); good && ok(r) {
			line, wrote = cm.Data[key], time.Since(changed)
		}
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for {
			out, errOut, err := execPod(cs, ns, p.Name, "app", "/app", "-cat", nap.LivePath)
			if err == nil && out == line {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: pod %s shows %q (%q, %v) in its nap volume 3 min after the change, want %q", ns, p.Name, out, errOut, err, line)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	return wrote, time.Since(changed)
}
