package evicted

import (
	"context"
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
