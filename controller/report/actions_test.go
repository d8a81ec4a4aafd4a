package report

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
)

// The objects of the action tests: namespaces, pods of a Deployment's ReplicaSet, a
// node whose kubelet has no native sleep, a FailedPreStopHook event.
var (
	optedIn = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{kube.InjectLabel: "enabled"}}}
	plainNS = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}
	oldNode = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.29.4"}}}
)

// webPod is pod web-7d9f8c6b5-<suffix> of Deployment shop/web, changed by mutate.
func webPod(suffix string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f8c6b5-" + suffix, Namespace: "shop",
		Labels:          map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5", UID: "rs", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func nativeSleepOn(node string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = node
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
	}
}

func hookFailed(pod string) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: pod + ".1", Namespace: "shop"}, Reason: "FailedPreStopHook", Type: corev1.EventTypeWarning,
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: pod}, Message: "PreStopHook failed"}
}

// TestReporterActions: a table of a namespace's states and changes, each followed by
// one Sync (and, with roll, one RollOne), and the exact actions expected: the events on
// workloads, the evictions, the namespace's gauges; a Sync after it, nothing changed,
// does nothing. The fake client holds the objects as the manager's cache would; the
// real API server's and informers' behaviour is TestReporterIncremental's.
func TestReporterActions(t *testing.T) {
	type step struct {
		change    func(c client.Client) error // nil: the objects as they are
		roll      bool
		events    []string           // "Type Reason N pod(s) (pods)", in order
		evictions []string           // "namespace/pod"
		gauges    map[string]float64 // reason or cause → the gauge's value in namespace shop
	}
	del := func(o client.Object) func(client.Client) error {
		return func(c client.Client) error { return c.Delete(context.Background(), o) }
	}
	add := func(o client.Object) func(client.Client) error {
		return func(c client.Client) error { return c.Create(context.Background(), o) }
	}
	cases := []struct {
		name       string
		objs       []client.Object
		refusal    string // what Refusal says of every pod
		pdbRefuses string // a pod whose eviction a PodDisruptionBudget refuses
		steps      []step
	}{
		{name: "a pod the webhook missed, then another, then none",
			objs: []client.Object{optedIn, webPod("a")},
			steps: []step{
				{events: []string{"Warning NapNotInjected 1 pod(s) (web-7d9f8c6b5-a)"}, gauges: map[string]float64{"not-injected": 1}},
				{change: add(webPod("b")), events: []string{"Warning NapNotInjected 2 pod(s) (web-7d9f8c6b5-a, web-7d9f8c6b5-b)"}, gauges: map[string]float64{"not-injected": 2}},
				{change: del(webPod("a")), gauges: map[string]float64{"not-injected": 1}}, // fewer: no event
				{change: del(webPod("b"))},
				{change: add(webPod("c")), events: []string{"Warning NapNotInjected 1 pod(s) (web-7d9f8c6b5-c)"}, gauges: map[string]float64{"not-injected": 1}}, // anew
			}},
		{name: "rolled one at a time; a PodDisruptionBudget's refusal passes to the next pod",
			objs: []client.Object{optedIn, webPod("a"), webPod("b")}, pdbRefuses: "web-7d9f8c6b5-a",
			steps: []step{
				{roll: true, events: []string{"Warning NapNotInjected 2 pod(s) (web-7d9f8c6b5-a, web-7d9f8c6b5-b)", "Normal NapRolled"},
					evictions: []string{"shop/web-7d9f8c6b5-a", "shop/web-7d9f8c6b5-b"}, gauges: map[string]float64{"not-injected": 2}},
			}},
		{name: "refused by the webhook: reported, never rolled",
			objs: []client.Object{optedIn, webPod("a")}, refusal: `nap.dev/delay "soon"`,
			steps: []step{
				{roll: true, events: []string{"Warning NapRefused 1 pod(s) (web-7d9f8c6b5-a)"}, gauges: map[string]float64{"refused": 1}},
			}},
		{name: "a namespace not opted in: nothing",
			objs:  []client.Object{plainNS, webPod("a")},
			steps: []step{{roll: true}}},
		{name: "the native sleep on a kubelet without it",
			objs: []client.Object{plainNS, oldNode, webPod("a", nativeSleepOn("old"))},
			steps: []step{
				{events: []string{"Warning NapNativeSleepUnsupported 1 pod(s) (web-7d9f8c6b5-a)"}, gauges: map[string]float64{"native-sleep-unsupported": 1}},
				{change: del(webPod("a")), gauges: nil},
			}},
		{name: "a failed preStop hook, of a pod there and of one gone",
			objs: []client.Object{plainNS, webPod("a", nativeSleepOn("")), hookFailed("web-7d9f8c6b5-a")},
			steps: []step{
				{events: []string{"Warning NapFailedPreStopHook 1 pod(s) (web-7d9f8c6b5-a)"}, gauges: map[string]float64{"hook-native-sleep": 1}},
				{change: add(hookFailed("web-7d9f8c6b5-gone5")), events: []string{"Warning NapFailedPreStopHook 2 pod(s) (web-7d9f8c6b5-a, web-7d9f8c6b5-gone5)"}, gauges: map[string]float64{"hook-native-sleep": 2}},
				{change: del(hookFailed("web-7d9f8c6b5-a")), gauges: map[string]float64{"hook-native-sleep": 1}},
			}},
		{name: "a namespace gone: forgotten",
			objs: []client.Object{optedIn, webPod("a")},
			steps: []step{
				{events: []string{"Warning NapNotInjected 1 pod(s) (web-7d9f8c6b5-a)"}, gauges: map[string]float64{"not-injected": 1}},
				{change: del(optedIn)},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var evictions []string
			objs := make([]client.Object, len(c.objs))
			for i, o := range c.objs {
				objs[i] = o.DeepCopyObject().(client.Object)
			}
			cl := fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
				SubResourceCreate: func(ctx context.Context, _ client.Client, sub string, o client.Object, _ client.Object, _ ...client.SubResourceCreateOption) error {
					if sub != "eviction" {
						return fmt.Errorf("unexpected subresource %s", sub)
					}
					evictions = append(evictions, o.GetNamespace()+"/"+o.GetName())
					if o.GetName() == c.pdbRefuses {
						return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
					}
					return nil
				},
			}).Build()
			rec := record.NewFakeRecorder(20)
			r := &Reporter{Client: cl, Recorder: rec, Scope: scope.OptIn, Kube: kube.Version{Major: 1, Minor: 34}, Log: logr.Discard(), Roll: true,
				Refusal: func(context.Context, string, string) (string, error) { return c.refusal, nil }}
			t.Cleanup(func() { r.forget(context.Background(), "shop") })
			for i, s := range c.steps {
				if s.change != nil {
					if err := s.change(cl); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
				evictions = nil
				if err := r.Sync(context.Background(), "shop"); err != nil {
					t.Fatalf("step %d: Sync: %v", i, err)
				}
				if s.roll {
					if err := r.RollOne(context.Background()); err != nil {
						t.Fatalf("step %d: RollOne: %v", i, err)
					}
				}
				if got := eventsOf(rec); !slices.Equal(got, s.events) {
					t.Errorf("step %d: events %q, want %q", i, got, s.events)
				}
				if !slices.Equal(evictions, s.evictions) {
					t.Errorf("step %d: evictions %q, want %q", i, evictions, s.evictions)
				}
				if got := gaugesOf(t, "shop"); !maps.Equal(got, s.gauges) && len(got)+len(s.gauges) > 0 {
					t.Errorf("step %d: gauges %v, want %v", i, got, s.gauges)
				}
				// Nothing changed: nothing done.
				evictions = nil
				if err := r.Sync(context.Background(), "shop"); err != nil {
					t.Fatal(err)
				}
				if got := eventsOf(rec); len(got) != 0 || len(evictions) != 0 {
					t.Errorf("step %d, again: events %q, evictions %q, want none", i, got, evictions)
				}
			}
		})
	}
}

// eventsOf are the events recorded, each as its type, reason and what precedes its
// first colon (the pods).
func eventsOf(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			e, _, _ = strings.Cut(e, ":")
			if strings.Contains(e, "NapRolled") {
				e = strings.Join(strings.Fields(e)[:2], " ")
			}
			out = append(out, e)
		default:
			return out
		}
	}
}

// gaugesOf are the Reporter's gauges of namespace ns, by reason (nap_pods_unprotected)
// or cause (nap_prestop_hook_failures).
func gaugesOf(t *testing.T, ns string) map[string]float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "nap_pods_unprotected" && mf.GetName() != "nap_prestop_hook_failures" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["namespace"] == ns {
				out[l["reason"]+l["cause"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
