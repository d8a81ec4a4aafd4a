package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// The learning controller's two measurements: the pods it admits before and after a
// late termination taught it their route's wait.
var (
	napLearning = variant{name: "nap learning, before a late termination", mode: "plain", webhook: true, rollAfterRoutes: true}
	napLearned  = variant{name: "nap learning, after a late termination", mode: "plain", webhook: true, rollAfterRoutes: true}
)

// TestLearnedWait: the waits learned from production (napctl controller --learn), on
// the path no calibration measured. nap's controller is installed learning, with the
// fleet's fixed 5 s (nap's binary, which says what each termination saw), and no
// calibration; behind the lab's load balancer with externalTrafficPolicy Local and
// checks 3 s apart (lbLocalSlow: a node out 6 to 9 s after its last pod went), a
// scale-down of 4 replicas to 1 at 200 req/s:
//   - first, the pods hold the fleet's 5 s and the load balancer still sends to them
//     when they stop: requests fail (the negative control), and the terminations of the
//     pods on the node it empties read late, cut off; the Learner raises their route's
//     wait at once (twice 5 s, plus the 3 s margin: 13 s) in the ConfigMap nap-learned;
//   - then the same scale-down of pods the webhook admitted after it: each holds the
//     learned 13 s, and no request over a new connection fails; the pods admitted
//     since hold at least that, their nap.dev/delay-reason naming the termination.
func TestLearnedWait(t *testing.T) {
	cs := client(t)
	installController(t, cs, "--learn")
	t.Cleanup(func() {
		cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Delete(context.Background(), kube.LearnedConfigMap, metav1.DeleteOptions{})
	})
	first := prove(t, cs, scenario{path: lbLocalSlow, disruption: scaleDown, variant: napLearning, expect: fails, rounds: 1}, 200)
	route, raised := learnedRaise(t, cs)
	// Cut off at its 5 s (by nap's clock, its sleeps) while the load balancer still
	// sent: twice that plus the margin, 13 s.
	if want := traffic.DelayFor(traffic.LearnRaise*5*time.Second, traffic.LearnMargin); !strings.Contains(route.Paths, traffic.LoadBalancerLocal.Name) || raised != want {
		t.Fatalf("learned %+v (%v): want the route through %s raised to %v", route, raised, traffic.LoadBalancerLocal.Name, want)
	}
	t.Logf("learned: %s needs %v (%s)", route.Paths, raised, route.Late)
	for _, d := range first.terminations {
		if d >= raised-time.Second {
			t.Errorf("%s: a pod went %v after its deletion: not the fleet's 5 s (all: %v)", first.scenario, d, first.terminations)
		}
	}

	second := prove(t, cs, scenario{path: lbLocalSlow, disruption: scaleDown, variant: napLearned, expect: newClean, rounds: 1}, 200)
	for _, d := range second.terminations {
		if d < raised-time.Second {
			t.Errorf("%s: a pod went %v after its deletion, before its learned %v (all: %v)", second.scenario, d, raised, second.terminations)
		}
	}
	// The pods admitted since: at least the learned wait (a late termination of the
	// second scale-down may have raised it again), each saying where it came from.
	checkLearned(t, cs, second.ns, raised)
	if cm, err := cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Get(context.Background(), kube.LearnedConfigMap, metav1.GetOptions{}); err == nil {
		t.Logf("what the terminations taught, after both: %s", cm.Data[kube.LearnedKey])
	}
}

// learnedRaise waits (30 s at most) until the controller keeps a route raised by a
// late termination in the ConfigMap nap-learned, and returns it with what it needs.
func learnedRaise(t *testing.T, cs *kubernetes.Clientset) (traffic.LearnedRoute, time.Duration) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		cm, err := cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Get(context.Background(), kube.LearnedConfigMap, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			continue
		}
		last = cm.Data[kube.LearnedKey]
		l, err := controller.ReadLearnedConfigMap(cm)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.Routes {
			if d, _, ok := r.Need(); ok && r.RaisedS > 0 {
				return r, d
			}
		}
	}
	t.Fatalf("no late termination learned within 30 s: %s", last)
	return traffic.LearnedRoute{}, 0
}

// checkLearned checks that the running pods of ns hold at least want with nap's
// binary, and that their nap.dev/delay-reason names the termination it was learned from.
func checkLearned(t *testing.T, cs *kubernetes.Clientset, ns string, want time.Duration) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		h := hook.Of(p.Spec.Containers[0])
		why := p.Annotations[wait.ReasonAnnotation]
		if h.Kind != hook.Nap || h.Holds() < want || !strings.Contains(why, "learned from production: pod ") {
			t.Errorf("%s: pod %s: %s wait, holds %v (%s); want nap's binary holding at least the learned %v", ns, p.Name, h.Kind, h.Holds(), why, want)
		}
	}
}
