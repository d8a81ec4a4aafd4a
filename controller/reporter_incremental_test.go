package controller

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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/scope"
)

// TestReporterIncremental checks the Reporter told of changes by the informers
// (Informers) against one that scans every pod at each pass, on the same caches of a
// real kube-apiserver: after each kind of change they find the same, and the told one
// read again only the namespaces the change was in (every one after a node's kubelet
// changed), and none at rest, through namespaces deleted and added too; a pass told of
// nothing returns what the last one found. The NodeSet the webhook reads follows the same nodes.
func TestReporterIncremental(t *testing.T) {
	_, mgr := envtestManager(t)
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
	for name, l := range map[string]map[string]string{"in": {InjectLabel: "enabled"}, "def": {scope.Label: "default"}, "plain": nil, "other": {InjectLabel: "enabled"}} {
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

	told := &Reporter{Client: mgr.GetClient(), Informers: mgr.GetCache(), Scope: scope.OptIn, Exclude: map[string]bool{"kube-system": true}, Log: logr.Discard()}
	must(told.Watch(ctx))
	nodes, err := WatchNodes(ctx, mgr.GetCache())
	must(err)
	// Read from the API server: the cache holds pod summaries, which only an informed
	// Reporter reads.
	every := &Reporter{Client: w, Scope: scope.OptIn, Exclude: map[string]bool{"kube-system": true}, Log: logr.Discard()}
	show := func(r *Reporter) string {
		t.Helper()
		found, _, err := r.Scan(ctx)
		must(err)
		var s []string
		for _, f := range found {
			s = append(s, fmt.Sprintf("%s %s %s", f.Workload, f.Reason, strings.Join(f.Pods, ",")))
		}
		return strings.Join(s, "\n")
	}
	// step waits until both Reporters agree on want (the caches and the handlers are
	// asynchronous), and checks how many namespaces the told one read.
	step := func(what, want string, rescans func(int) bool) {
		t.Helper()
		var a, b string
		total := 0
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			a = show(told)
			total += told.rescans
			if b = show(every); a == want && b == want || time.Now().After(deadline) {
				break
			}
		}
		if a != want || b != want {
			t.Fatalf("%s: told of changes:\n%s\nscanning everything:\n%s\nwant:\n%s", what, a, b, want)
		}
		// A change may come in more than one event (a deletion marks the pod, then
		// removes it): what trails the agreement is read once more, and counted.
		time.Sleep(300 * time.Millisecond)
		if show(told) != want {
			t.Fatalf("%s: the told Reporter changed its mind after agreeing", what)
		}
		total += told.rescans
		if !rescans(total) {
			t.Errorf("%s: the told Reporter read %d namespaces again", what, total)
		}
		if show(told); told.rescans != 0 {
			t.Errorf("%s: at rest, the told Reporter read %d namespaces, want none", what, told.rescans)
		}
	}
	all := func(n int) bool { return n >= 4 }
	one := func(n int) bool { return n >= 1 && n <= 2 } // the change, and maybe a status write after it
	step("the first scan", "StatefulSet/def/web not-injected web-0\nStatefulSet/in/missed not-injected missed-0", all)

	pod("in", "missed-1", false)
	step("a pod added", "StatefulSet/def/web not-injected web-0\nStatefulSet/in/missed not-injected missed-0,missed-1", one)

	var ns corev1.Namespace
	must(w.Get(ctx, client.ObjectKey{Name: "plain"}, &ns))
	ns.Labels = map[string]string{InjectLabel: "enabled"}
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
	step("a namespace deleted", "StatefulSet/in/missed not-injected missed-1", func(n int) bool { return n <= 2 })
	must(w.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "late", Labels: map[string]string{InjectLabel: "enabled"}}}))
	pod("late", "lost-0", false)
	step("a namespace added", "StatefulSet/in/missed not-injected missed-1\nStatefulSet/late/lost not-injected lost-0", one)

	// The kubelet's event of a failed hook: no namespace is read again, the events are.
	must(w.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "sleepy-0.hook", Namespace: "in"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "in", Name: "sleepy-0"}, Reason: "FailedPreStopHook", Type: corev1.EventTypeWarning,
		Message: "PreStopHook failed"}))
	step("a FailedPreStopHook event", "StatefulSet/in/missed not-injected missed-1\nStatefulSet/in/sleepy failed-prestop-hook sleepy-0\nStatefulSet/late/lost not-injected lost-0",
		func(n int) bool { return n == 0 })

	// A kubelet too old for the native sleep: every namespace is read again.
	must(w.Get(ctx, client.ObjectKey{Name: "node-a"}, node))
	node.Status.NodeInfo.KubeletVersion = "v1.29.4"
	must(w.Status().Update(ctx, node))
	step("a node's kubelet changed", "StatefulSet/in/missed not-injected missed-1\nStatefulSet/in/sleepy failed-prestop-hook sleepy-0\nStatefulSet/in/sleepy native-sleep-unsupported sleepy-0\nStatefulSet/late/lost not-injected lost-0\nStatefulSet/other/calm native-sleep-unsupported calm-0", all)

	// The webhook's nodes: the kubelet as it is now, then a second node.
	names := func() string {
		ns, err := nodes.Nodes(ctx)
		must(err)
		var s []string
		for _, n := range ns {
			s = append(s, n.Name+" "+n.Kubelet.String())
		}
		return strings.Join(s, ",")
	}
	if got := names(); got != "node-a 1.29" {
		t.Errorf("the webhook's nodes: %q, want node-a 1.29", got)
	}
	b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
	must(w.Create(ctx, b))
	b.Status.NodeInfo.KubeletVersion = "v1.36.0"
	must(w.Status().Update(ctx, b))
	for deadline := time.Now().Add(10 * time.Second); names() != "node-a 1.29,node-b 1.36" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
	}
	if got := names(); got != "node-a 1.29,node-b 1.36" {
		t.Errorf("the webhook's nodes: %q, want node-a 1.29,node-b 1.36", got)
	}
	first, _ := nodes.Nodes(ctx)
	again, _ := nodes.Nodes(ctx)
	if &first[0] != &again[0] {
		t.Error("the webhook's nodes were made again with no node changed")
	}
	must(w.Delete(ctx, b))
	for deadline := time.Now().Add(10 * time.Second); names() != "node-a 1.29" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
	}
	if got := names(); got != "node-a 1.29" {
		t.Errorf("the webhook's nodes after a delete: %q, want node-a 1.29", got)
	}
}
