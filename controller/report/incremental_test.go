package report

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
)

// TestReporterIncremental checks the Reporter as it runs (Start: told of changes by the
// informers) against one that syncs every namespace from the API server after each
// change, on a real kube-apiserver: after each kind of change they find the same, and
// the running one synced only the namespace the change was in (every one after a
// node's kubelet changed), and none at rest, through namespaces deleted and added too.
func TestReporterIncremental(t *testing.T) {
	mgr, err := ctrl.NewManager(kubeenv.APIServer(t), ctrl.Options{Cache: cache.Options{NewInformer: NewInformer, ByObject: CacheByObject()},
		Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go mgr.Start(ctx)
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("caches did not sync")
	}
	w, err := client.New(mgr.GetConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	must(w.Create(ctx, node))
	node.Status.NodeInfo.KubeletVersion = "v1.34.1"
	must(w.Status().Update(ctx, node))
	for name, l := range map[string]map[string]string{"in": {kube.InjectLabel: "enabled"}, "def": {scope.Label: "default"}, "plain": nil, "other": {kube.InjectLabel: "enabled"}} {
		must(w.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}))
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "def"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
	must(w.Create(ctx, svc))
	yes := true
	pod := func(ns, name string, native bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: strings.Split(name, "-")[0], UID: "u", Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		if native {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
		}
		must(w.Create(ctx, p))
		return p
	}
	pod("in", "missed-0", false)
	pod("in", "sleepy-0", true)
	pod("def", "web-0", false)
	pod("plain", "api-0", false)
	pod("other", "calm-0", true)

	told := &Reporter{Client: mgr.GetClient(), Informers: mgr.GetCache(), Scope: scope.OptIn, Exclude: map[string]bool{"kube-system": true}, Log: logr.Discard(),
		Batch: 20 * time.Millisecond}
	go told.Start(ctx)
	// Read from the API server: the cache holds pod summaries, which only an informed
	// Reporter reads.
	show := func(r *Reporter) string {
		var s []string
		for _, f := range r.Findings() {
			s = append(s, fmt.Sprintf("%s %s %s", f.Workload, f.Reason, strings.Join(f.Pods, ",")))
		}
		return strings.Join(s, "\n")
	}
	every := func() string {
		t.Helper()
		r := &Reporter{Client: w, Scope: scope.OptIn, Exclude: map[string]bool{"kube-system": true}, Log: logr.Discard()}
		must(r.SyncAll(ctx))
		return show(r)
	}
	// step waits until both Reporters agree on want (the caches and the handlers are
	// asynchronous), and checks how many namespaces the running one synced.
	// mark is the count of syncs when the last step ended at rest: what was synced
	// since is the changes' doing, though a sync may come before the call that made
	// the change has returned.
	var mark int64
	step := func(what, want string, syncs func(int64) bool) {
		t.Helper()
		before := mark
		var a, b string
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if a, b = show(told), every(); a == want && b == want || time.Now().After(deadline) {
				break
			}
		}
		if a != want || b != want {
			t.Fatalf("%s: running:\n%s\nsyncing everything:\n%s\nwant:\n%s", what, a, b, want)
		}
		// A change may come in more than one event (a deletion marks the pod, then
		// removes it): what trails the agreement is synced too, and counted.
		time.Sleep(300 * time.Millisecond)
		if show(told) != want {
			t.Fatalf("%s: the running Reporter changed its mind after agreeing", what)
		}
		if n := told.Synced() - before; !syncs(n) {
			t.Errorf("%s: the running Reporter synced %d namespaces", what, n)
		}
		rest := told.Synced()
		time.Sleep(300 * time.Millisecond)
		if n := told.Synced() - rest; n != 0 {
			t.Errorf("%s: at rest, the running Reporter synced %d namespaces, want none", what, n)
		}
		mark = told.Synced()
	}
	all := func(n int64) bool { return n >= 4 }
	one := func(n int64) bool { return n >= 1 && n <= 2 } // the change, and maybe a status write after it
	step("the first scan", "StatefulSet/def/web not-injected web-0\nStatefulSet/in/missed not-injected missed-0", all)

	pod("in", "missed-1", false)
	step("a pod added", "StatefulSet/def/web not-injected web-0\nStatefulSet/in/missed not-injected missed-0,missed-1", one)

	var ns corev1.Namespace
	must(w.Get(ctx, client.ObjectKey{Name: "plain"}, &ns))
	ns.Labels = map[string]string{kube.InjectLabel: "enabled"}
	must(w.Update(ctx, &ns))
	step("a namespace opted in", "StatefulSet/def/web not-injected web-0\nStatefulSet/in/missed not-injected missed-0,missed-1\nStatefulSet/plain/api not-injected api-0", one)

	must(w.Delete(ctx, svc))
	step("a Service deleted", "StatefulSet/in/missed not-injected missed-0,missed-1\nStatefulSet/plain/api not-injected api-0", one)

	must(w.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "missed-0", Namespace: "in"}}, client.GracePeriodSeconds(0)))
	step("a pod deleted", "StatefulSet/in/missed not-injected missed-1\nStatefulSet/plain/api not-injected api-0", one)

	// A namespace gone (envtest runs no namespace controller: its finalizer is lifted
	// here), its pods still in the cache; then one new, with a pod the webhook missed.
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	must(err)
	must(w.Get(ctx, client.ObjectKey{Name: "plain"}, &ns))
	must(w.Delete(ctx, &ns))
	must(w.Get(ctx, client.ObjectKey{Name: "plain"}, &ns))
	ns.Spec.Finalizers = nil
	_, err = cs.CoreV1().Namespaces().Finalize(ctx, &ns, metav1.UpdateOptions{})
	must(err)
	step("a namespace deleted", "StatefulSet/in/missed not-injected missed-1", func(n int64) bool { return n >= 1 && n <= 2 })
	must(w.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "late", Labels: map[string]string{kube.InjectLabel: "enabled"}}}))
	pod("late", "lost-0", false)
	step("a namespace added", "StatefulSet/in/missed not-injected missed-1\nStatefulSet/late/lost not-injected lost-0", one)

	// The kubelet's event of a failed hook: its namespace is synced again.
	must(w.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "sleepy-0.hook", Namespace: "in"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "in", Name: "sleepy-0"}, Reason: "FailedPreStopHook", Type: corev1.EventTypeWarning,
		Message: "PreStopHook failed"}))
	step("a FailedPreStopHook event", "StatefulSet/in/missed not-injected missed-1\nStatefulSet/in/sleepy failed-prestop-hook sleepy-0\nStatefulSet/late/lost not-injected lost-0",
		one)

	// A kubelet too old for the native sleep: every namespace is read again.
	must(w.Get(ctx, client.ObjectKey{Name: "node-a"}, node))
	node.Status.NodeInfo.KubeletVersion = "v1.29.4"
	must(w.Status().Update(ctx, node))
	step("a node's kubelet changed", "StatefulSet/in/missed not-injected missed-1\nStatefulSet/in/sleepy failed-prestop-hook sleepy-0\nStatefulSet/in/sleepy native-sleep-unsupported sleepy-0\nStatefulSet/late/lost not-injected lost-0\nStatefulSet/other/calm native-sleep-unsupported calm-0", all)
}
