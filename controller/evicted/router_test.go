package evicted

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

func pod(mod func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1", UID: "u1"},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To(int64(45)), Containers: []corev1.Container{{Name: "app",
			Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/nap/nap", "10"}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if mod != nil {
		mod(p)
	}
	return p
}

func event(mod func(*corev1.Event)) *corev1.Event {
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1.1"}, Reason: Reason,
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "web-1", UID: "u1"},
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-a"}}
	if mod != nil {
		mod(ev)
	}
	return ev
}

// TestSync: an Event → the exact API actions on the pod it names, in the root-CA
// publisher's style (a fake clientset, the actions it recorded).
func TestSync(t *testing.T) {
	deleted := []string{"get pods", "delete pods"}
	cases := []struct {
		name    string
		pod     *corev1.Pod // nil: none in the API
		ev      *corev1.Event
		actions []string
		grace   int64 // of the delete
		result  string
	}{
		{name: "a nap hook: deleted with the pod's own grace", pod: pod(nil), ev: event(nil), actions: deleted, grace: 45, result: "deleted"},
		{name: "no grace period set: Kubernetes' default", pod: pod(func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil }), ev: event(nil), actions: deleted, grace: 30, result: "deleted"},
		{name: "the native sleep holds too", pod: pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle.PreStop = &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}
		}), ev: event(nil), actions: deleted, grace: 45, result: "deleted"},
		{name: "an adaptive wait with MIN 0 holds", pod: pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle.PreStop.Exec.Command = []string{"/nap/nap", "--quiet", "2s", "--max", "60s"}
		}), ev: event(nil), actions: deleted, grace: 45, result: "deleted"},
		{name: "a sidecar's hook counts, the app's has none", pod: pod(func(p *corev1.Pod) {
			p.Spec.Containers = append([]corev1.Container{{Name: "first"}}, p.Spec.Containers...)
		}), ev: event(nil), actions: deleted, grace: 45, result: "deleted"},
		{name: "no preStop: left alone", pod: pod(func(p *corev1.Pod) { p.Spec.Containers[0].Lifecycle = nil }), ev: event(nil), actions: []string{"get pods"}, result: "no-hold"},
		{name: "a hook that stops the server: left alone", pod: pod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Lifecycle.PreStop.Exec.Command = []string{"/usr/sbin/nginx", "-s", "quit"}
		}), ev: event(nil), actions: []string{"get pods"}, result: "no-hold"},
		{name: "already deleting", pod: pod(func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), ev: event(nil), actions: []string{"get pods"}, result: "gone"},
		{name: "already stopped", pod: pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), ev: event(nil), actions: []string{"get pods"}, result: "gone"},
		{name: "another pod of the same name", pod: pod(func(p *corev1.Pod) { p.UID = "u2" }), ev: event(nil), actions: []string{"get pods"}, result: "gone"},
		{name: "gone", ev: event(nil), actions: []string{"get pods"}, result: "gone"},
		{name: "an excluded namespace: not even read", pod: pod(func(p *corev1.Pod) { p.Namespace = "kube-system" }),
			ev: event(func(e *corev1.Event) { e.InvolvedObject.Namespace = "kube-system" }), result: "excluded"},
		{name: "not a kubelet's", pod: pod(nil), ev: event(func(e *corev1.Event) { e.Source.Component = "someone" })},
		{name: "another reason", pod: pod(nil), ev: event(func(e *corev1.Event) { e.Reason = "Killing" })},
		{name: "not on a pod", pod: pod(nil), ev: event(func(e *corev1.Event) { e.InvolvedObject.Kind = "Node" })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var objs []runtime.Object
			if c.pod != nil {
				objs = append(objs, c.pod)
			}
			cs := fake.NewClientset(objs...)
			rec := record.NewFakeRecorder(4)
			r := &Router{Client: cs, Recorder: rec, Log: logr.Discard(), Exclude: map[string]bool{"kube-system": true}}
			before := counts()
			if k, ok := Key(c.ev); ok {
				if err := r.Sync(context.Background(), k); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, a := range cs.Actions() {
				got = append(got, a.GetVerb()+" "+a.GetResource().Resource)
				if d, ok := a.(clienttesting.DeleteActionImpl); ok {
					o := d.GetDeleteOptions()
					if o.GracePeriodSeconds == nil || *o.GracePeriodSeconds != c.grace || o.Preconditions == nil || o.Preconditions.UID == nil || *o.Preconditions.UID != types.UID("u1") {
						t.Errorf("delete options %+v, want grace %d and the pod's UID as a precondition", o, c.grace)
					}
				}
			}
			if len(got) != len(c.actions) || !slices.Equal(got, c.actions) {
				t.Errorf("actions %q, want %q", got, c.actions)
			}
			after := counts()
			for result, n := range after {
				if want := map[bool]float64{true: 1}[result == c.result]; n-before[result] != want {
					t.Errorf("nap_evicted_pods_total{result=%q} went up by %g, want %g", result, n-before[result], want)
				}
			}
			if c.result == "deleted" {
				if len(rec.Events) != 1 {
					t.Errorf("%d events on the pod, want one %s", len(rec.Events), RoutedOut)
				} else if ev := <-rec.Events; !strings.Contains(ev, RoutedOut) {
					t.Errorf("event %q, want reason %s", ev, RoutedOut)
				}
			}
		})
	}
}

func counts() map[string]float64 {
	out := map[string]float64{}
	for _, r := range []string{"deleted", "gone", "no-hold", "excluded", "error"} {
		out[r] = testutil.ToFloat64(routed.WithLabelValues(r))
	}
	return out
}

func node(name string, ready corev1.ConditionStatus, message string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: ready, Reason: "KubeletNotReady", Message: message}}}}
}

// shuttingDown is the Ready condition's message of a kubelet told that its node shuts
// down (kubelet 1.34's and 1.37's words, with another error beside it).
const shuttingDown = "[container runtime status check may not have completed yet, node is shutting down]"

// TestSyncNode: a node that shuts down → the exact API actions: the node read again, its
// pods listed, each whose preStop holds deleted with its own grace and UID, the others
// (no hold, already deleting, stopped, excluded, on another node) left alone.
func TestSyncNode(t *testing.T) {
	on := func(name, ns, uid string, mod func(*corev1.Pod)) *corev1.Pod {
		return pod(func(p *corev1.Pod) {
			p.Name, p.Namespace, p.UID, p.Spec.NodeName = name, ns, types.UID(uid), "node-a"
			if mod != nil {
				mod(p)
			}
		})
	}
	pods := []runtime.Object{
		on("web-1", "shop", "u1", nil),
		on("web-2", "shop", "u2", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(20)) }),
		on("plain", "shop", "u3", func(p *corev1.Pod) { p.Spec.Containers[0].Lifecycle = nil }),
		on("leaving", "shop", "u4", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
		on("stopped", "shop", "u5", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		on("dns", "kube-system", "u6", nil),
		on("elsewhere", "shop", "u7", func(p *corev1.Pod) { p.Spec.NodeName = "node-b" }),
	}
	cases := []struct {
		name    string
		node    *corev1.Node // nil: gone
		actions []string
		deleted map[string]int64 // pod: grace
	}{
		{name: "shutting down", node: node("node-a", corev1.ConditionFalse, shuttingDown),
			actions: []string{"get nodes", "list pods", "delete pods", "delete pods"}, deleted: map[string]int64{"web-1": 45, "web-2": 20}},
		{name: "not ready for another cause", node: node("node-a", corev1.ConditionFalse, "container runtime network not ready"), actions: []string{"get nodes"}},
		{name: "ready again: the shutdown cancelled", node: node("node-a", corev1.ConditionTrue, "kubelet is posting ready status"), actions: []string{"get nodes"}},
		{name: "unknown (unreachable), with the words", node: node("node-a", corev1.ConditionUnknown, shuttingDown), actions: []string{"get nodes"}},
		{name: "gone", actions: []string{"get nodes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := slices.Clone(pods)
			if c.node != nil {
				objs = append(objs, c.node)
			}
			cs := fake.NewClientset(objs...)
			rec := record.NewFakeRecorder(8)
			r := &Router{Client: cs, Recorder: rec, Log: logr.Discard(), Exclude: map[string]bool{"kube-system": true}}
			if err := r.Sync(context.Background(), nodePrefix+"node-a"); err != nil {
				t.Fatal(err)
			}
			var got []string
			deleted := map[string]int64{}
			for _, a := range cs.Actions() {
				got = append(got, a.GetVerb()+" "+a.GetResource().Resource)
				if d, ok := a.(clienttesting.DeleteActionImpl); ok {
					o := d.GetDeleteOptions()
					var want types.UID
					for _, p := range pods {
						if p := p.(*corev1.Pod); p.Name == d.GetName() {
							want = p.UID
						}
					}
					if o.GracePeriodSeconds == nil || o.Preconditions == nil || o.Preconditions.UID == nil || *o.Preconditions.UID != want {
						t.Errorf("delete %s: options %+v, want its grace and its UID as a precondition", d.GetName(), o)
						continue
					}
					deleted[d.GetName()] = *o.GracePeriodSeconds
				}
			}
			if !slices.Equal(got, c.actions) {
				t.Errorf("actions %q, want %q", got, c.actions)
			}
			if len(deleted) != len(c.deleted) || !maps.Equal(deleted, c.deleted) {
				t.Errorf("deleted %v, want %v", deleted, c.deleted)
			}
			if len(rec.Events) != len(c.deleted) {
				t.Errorf("%d events, want %d", len(rec.Events), len(c.deleted))
			}
			for range len(rec.Events) {
				if ev := <-rec.Events; !strings.Contains(ev, RoutedOutShutdown) || !strings.Contains(ev, "node-a") {
					t.Errorf("event %q, want reason %s naming the node", ev, RoutedOutShutdown)
				}
			}
		})
	}
}

// TestEnqueueNode: only a node whose kubelet says it shuts down is queued, and the
// informer keeps of a node its name and Ready condition.
func TestEnqueueNode(t *testing.T) {
	r := &Router{}
	r.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer r.queue.ShutDown()
	for _, n := range []*corev1.Node{
		node("ready", corev1.ConditionTrue, "kubelet is posting ready status"),
		node("broken", corev1.ConditionFalse, "PLEG is not healthy"),
		node("down", corev1.ConditionFalse, shuttingDown),
	} {
		slim, err := slimNode(n)
		if err != nil {
			t.Fatal(err)
		}
		s := slim.(*corev1.Node)
		if s.Name != n.Name || len(s.Labels) != 0 || len(s.Status.Conditions) != 1 || s.Status.Conditions[0] != n.Status.Conditions[1] {
			t.Errorf("slimNode(%s) = %+v", n.Name, s)
		}
		r.EnqueueNode(slim)
	}
	if r.queue.Len() != 1 {
		t.Fatalf("%d keys queued, want 1", r.queue.Len())
	}
	if k, _ := r.queue.Get(); k != nodePrefix+"down" {
		t.Errorf("queued %q, want %q", k, nodePrefix+"down")
	}
}
