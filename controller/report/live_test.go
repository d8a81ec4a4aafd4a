package report

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// liveHook gives a pod the adaptive wait the webhook gave it at admission, reading the
// live wait (nap --live).
func liveHook(args ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			Command: append([]string{kube.MountPath + "/" + kube.BinaryName}, args...)}}}
	}
}

// clusterIPCalibrated is a calibration whose in-cluster path needs 4 s.
func clusterIPCalibrated(t *testing.T) *traffic.Calibration {
	t.Helper()
	cal, err := traffic.ReadCalibration(strings.NewReader(`{"apiVersion": "calibrate.nap.dev/v1", "kind": "Calibration", "measured": "2026-12-06T05:00:00Z", "rounds": 5, "margin_seconds": 2,
 "paths": [{"name": "clusterip", "samples": 15, "p50_seconds": 0.7, "p99_seconds": 1.9, "max_seconds": 2.1, "delay_seconds": 4}]}`), "cal.json")
	if err != nil {
		t.Fatal(err)
	}
	return cal
}

// TestLiveWaitActions: a table of a namespace's changes, each followed by one Sync, and
// the exact calls on its live waits ConfigMap: a pod whose hook reads the live wait gets
// its workload's line, the wait its routes need now by the webhook's rule; a change to
// the routes (a Service added after the pod, a calibration stored after it) changes the
// line, once; a Sync with nothing changed calls nothing; the last such pod gone, the
// ConfigMap goes. A namespace whose pods do not read it costs no call.
func TestLiveWaitActions(t *testing.T) {
	cal := clusterIPCalibrated(t)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	adaptive := liveHook("--quiet", "2s", "--max", "60s", "--allow", "3", "--live")
	type step struct {
		change     func(c client.Client) error
		calibrated bool     // a calibration is stored from this step on
		refused    bool     // the API server refuses the writes (a ClusterRole without them)
		calls      []string // "verb key=line ...", in order
	}
	add := func(o client.Object) func(client.Client) error {
		return func(c client.Client) error { return c.Create(context.Background(), o) }
	}
	del := func(o client.Object) func(client.Client) error {
		return func(c client.Client) error { return c.Delete(context.Background(), o) }
	}
	for _, c := range []struct {
		name  string
		objs  []client.Object
		steps []step
	}{
		{name: "the routes change after the pods started", objs: []client.Object{plainNS, webPod("a", adaptive), webPod("b", adaptive)}, steps: []step{
			{calls: []string{"get", "create deployment.web=wait/v1 0 2000 60000 0"}},
			{},                 // nothing changed: no call
			{change: add(svc)}, // a Service, no calibration: nothing the routes change
			{calibrated: true, calls: []string{"update deployment.web=wait/v1 4000 2000 60000 0"}},
			{calibrated: true},
			{calibrated: true, change: del(webPod("a")), calls: nil}, // the other pod still reads it
			{calibrated: true, change: del(webPod("b")), calls: []string{"delete"}},
			{calibrated: true},
		}},
		{name: "a pod of its own delay keeps it", objs: []client.Object{plainNS, svc, webPod("a", adaptive, func(p *corev1.Pod) {
			p.Annotations = map[string]string{wait.DelayAnnotation: "7s"}
		})}, steps: []step{
			{calibrated: true},
		}},
		{name: "a fixed delay", objs: []client.Object{plainNS, svc, webPod("a", liveHook("4s", "--allow", "3", "--live"))}, steps: []step{
			{calls: []string{"get", "create deployment.web=wait/v1 10000 0 0 0"}},
			{calibrated: true, calls: []string{"update deployment.web=wait/v1 4000 0 0 0"}},
		}},
		{name: "pods that do not read it", objs: []client.Object{plainNS, svc, webPod("a", liveHook("--quiet", "2s", "--max", "60s", "--allow", "3"))}, steps: []step{
			{calibrated: true},
			{calibrated: true, change: add(webPod("b", liveHook("10s")))},
		}},
		{name: "refused: Sync says so, and the next one tries again", objs: []client.Object{plainNS, webPod("a", adaptive)}, steps: []step{
			{refused: true, calls: []string{"get", "create deployment.web=wait/v1 0 2000 60000 0"}},
			{calls: []string{"get", "create deployment.web=wait/v1 0 2000 60000 0"}},
			{},
		}},
		{name: "what is there is read once, and kept where it is right", objs: []client.Object{plainNS, webPod("a", adaptive),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.LiveWaitsName, Namespace: "shop"}, Data: map[string]string{"deployment.web": "wait/v1 0 2000 60000 0\n"}}}, steps: []step{
			{calls: []string{"get"}},
			{},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls []string
			refused := false
			recordCall := func(verb string, o client.Object) {
				if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == kube.LiveWaitsName {
					call := verb
					for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
						call += " " + k + "=" + strings.TrimSuffix(cm.Data[k], "\n")
					}
					calls = append(calls, call)
				}
			}
			cl := fake.NewClientBuilder().WithObjects(c.objs...).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
					if key.Name == kube.LiveWaitsName {
						calls = append(calls, "get")
					}
					return cl.Get(ctx, key, o, opts...)
				},
				Create: func(ctx context.Context, cl client.WithWatch, o client.Object, opts ...client.CreateOption) error {
					recordCall("create", o)
					if refused {
						return apierrors.NewForbidden(corev1.Resource("configmaps"), o.GetName(), errors.New("no RBAC"))
					}
					return cl.Create(ctx, o, opts...)
				},
				Update: func(ctx context.Context, cl client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
					recordCall("update", o)
					return cl.Update(ctx, o, opts...)
				},
				Delete: func(ctx context.Context, cl client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
					if o.GetName() == kube.LiveWaitsName {
						calls = append(calls, "delete")
					}
					return cl.Delete(ctx, o, opts...)
				},
			}).Build()
			calibrated := false
			r := &Reporter{Client: cl, Recorder: record.NewFakeRecorder(100), Scope: scope.OptIn, Kube: kube.Version{Major: 1, Minor: 34}, Log: logr.Discard(),
				Refusal: func(context.Context, string, string) (string, error) { return "", nil },
				Live:    true, // Waits: the built-in defaults
				Calibration: func() *traffic.Calibration {
					if calibrated {
						return cal
					}
					return nil
				}}
			t.Cleanup(func() { r.forget(context.Background(), "shop") })
			for i, s := range c.steps {
				if s.change != nil {
					if err := s.change(cl); err != nil {
						t.Fatalf("step %d: %v", i, err)
					}
				}
				calibrated, refused = s.calibrated, s.refused
				calls = nil
				synced := r.Synced()
				if err := r.Sync(context.Background(), "shop"); (err != nil) != s.refused {
					t.Fatalf("step %d: Sync: %v", i, err)
				}
				if _, ok := r.state["shop"]; !ok || r.Synced() != synced+1 {
					t.Errorf("step %d: the namespace's findings not kept", i)
				}
				if !slices.Equal(calls, s.calls) {
					t.Errorf("step %d: calls %q, want %q", i, calls, s.calls)
				}
			}
		})
	}
}

// TestLiveWaitsBound: a namespace's live waits fit a ConfigMap at 10,000 workloads of the
// longest names and lines; past what fits, the last keys are left out, and named.
func TestLiveWaitsBound(t *testing.T) {
	longest := nap.Request{Duration: 999999999 * time.Millisecond, Adaptive: true, Quiet: 999999999 * time.Millisecond, Max: 999999999 * time.Millisecond, Requests: 999999999 * time.Millisecond}
	live := map[string]nap.Request{}
	for i := range 10000 {
		live[kube.LiveKey(kube.Workload{Kind: "Deployment", Name: fmt.Sprintf("%0250d", i)})] = longest
	}
	data, dropped := LiveWaitsData(live)
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	if len(data) != 10000 || len(dropped) != 0 || size > MaxLiveBytes {
		t.Errorf("10,000 workloads: %d kept (%d bytes), %d dropped; want all within %d bytes", len(data), size, len(dropped), MaxLiveBytes)
	}
	t.Logf("10,000 workloads of the longest names and lines: %d bytes of %d", size, MaxLiveBytes)
	for i := range 1000 {
		live[kube.LiveKey(kube.Workload{Kind: "StatefulSet", Name: fmt.Sprintf("%0250d", i)})] = longest
	}
	data, dropped = LiveWaitsData(live)
	if len(data)+len(dropped) != 11000 || len(dropped) == 0 || !slices.IsSorted(dropped) || dropped[0] < slices.Max(slices.Collect(maps.Keys(data))) {
		t.Errorf("11,000 workloads: %d kept, %d dropped (first %q): want the last keys dropped", len(data), len(dropped), dropped[:min(1, len(dropped))])
	}
}

// TestLiveWaitsOnAPIServer: the live waits on a real API server (envtest): created for
// the pod whose hook reads them, changed once when a Service and a calibration come after
// the pod, left alone at rest (the same resourceVersion), deleted with the last such pod.
func TestLiveWaitsOnAPIServer(t *testing.T) {
	w, err := client.New(kubeenv.APIServer(t), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	cal := clusterIPCalibrated(t)
	must(w.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}))
	pod := webPod("a", liveHook("--quiet", "2s", "--max", "60s", "--allow", "3", "--live"))
	must(w.Create(ctx, pod))
	var calibrated *traffic.Calibration
	r := &Reporter{Client: w, Recorder: record.NewFakeRecorder(100), Scope: scope.OptIn, Kube: kube.Version{Major: 1, Minor: 34}, Log: logr.Discard(),
		Refusal: func(context.Context, string, string) (string, error) { return "", nil }, Live: true,
		Calibration: func() *traffic.Calibration { return calibrated }}
	t.Cleanup(func() { r.forget(ctx, "shop") })
	read := func() (*corev1.ConfigMap, bool) {
		t.Helper()
		var cm corev1.ConfigMap
		err := w.Get(ctx, client.ObjectKey{Namespace: "shop", Name: kube.LiveWaitsName}, &cm)
		if apierrors.IsNotFound(err) {
			return nil, false
		}
		must(err)
		return &cm, true
	}
	must(r.Sync(ctx, "shop"))
	cm, ok := read()
	if !ok || cm.Data["deployment.web"] != "wait/v1 0 2000 60000 0\n" {
		t.Fatalf("after the first sync: %v", cm)
	}
	must(w.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}))
	calibrated = cal
	must(r.Sync(ctx, "shop"))
	cm, ok = read()
	if !ok || cm.Data["deployment.web"] != "wait/v1 4000 2000 60000 0\n" {
		t.Fatalf("after the Service and the calibration: %v", cm)
	}
	must(r.Sync(ctx, "shop"))
	if again, _ := read(); again.ResourceVersion != cm.ResourceVersion {
		t.Errorf("a sync at rest wrote the live waits: resourceVersion %s, then %s", cm.ResourceVersion, again.ResourceVersion)
	}
	must(w.Delete(ctx, pod))
	must(r.Sync(ctx, "shop"))
	if cm, ok := read(); ok {
		t.Errorf("the last pod that read them gone: the live waits are still there: %v", cm.Data)
	}
}
