package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/nap-k8s/nap/kube"
)

// recorded is a fake client whose writes are recorded as "verb namespace/name" (a
// delete with its preconditions), as Kubernetes' controller tests read a fake
// clientset's actions; refuse, when set, answers a write instead of the store.
func recorded(objs []client.Object, refuse func(verb string, o client.Object) error) (client.Client, *[]string) {
	var actions []string
	write := func(verb string, o client.Object, extra string) error {
		actions = append(actions, strings.TrimSpace(fmt.Sprintf("%s %s/%s %s", verb, o.GetNamespace(), o.GetName(), extra)))
		if refuse != nil {
			return refuse(verb, o)
		}
		return nil
	}
	c := fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if err := write("create", o, ""); err != nil {
				return err
			}
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			if err := write("update", o, ""); err != nil {
				return err
			}
			return c.Update(ctx, o, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			var do client.DeleteOptions
			do.ApplyOptions(opts)
			pre := ""
			if p := do.Preconditions; p != nil {
				pre = fmt.Sprintf("if uid=%s rv=%s", ptr.Deref(p.UID, ""), ptr.Deref(p.ResourceVersion, ""))
			}
			if err := write("delete", o, pre); err != nil {
				return err
			}
			return c.Delete(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := write("patch", o, ""); err != nil {
				return err
			}
			return c.Patch(ctx, o, patch, opts...)
		},
	}).Build()
	return c, &actions
}

// TestPublisherActions: for each state of a namespace and its copy, the exact writes
// one Reconcile makes, its events and its counters (the API server's own behaviour is
// TestPublisher's, on envtest).
func TestPublisherActions(t *testing.T) {
	want, err := NewPublisher(nil, nil, kube.ConfigMapName, "v9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "nap", UID: "install-uid"}
	ns := func(name string, lbl map[string]string, mutate ...func(*corev1.Namespace)) *corev1.Namespace {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}}
		for _, m := range mutate {
			m(n)
		}
		return n
	}
	shop := map[string]string{"team": "shop"}
	terminating := func(n *corev1.Namespace) {
		n.DeletionTimestamp, n.Finalizers = ptr.To(metav1.Now()), []string{"kubernetes"}
	}
	// copyIn is nap's copy in namespace name, as the Publisher writes it, changed by mutate.
	copyIn := func(name string, mutate ...func(*corev1.ConfigMap)) *corev1.ConfigMap {
		cm := want.Want.DeepCopy()
		cm.Namespace, cm.UID, cm.OwnerReferences = name, "cm-uid", []metav1.OwnerReference{owner}
		for _, m := range mutate {
			m(cm)
		}
		return cm
	}
	tamper := func(cm *corev1.ConfigMap) { cm.BinaryData["nap-amd64"] = []byte("not nap") }
	unlabel := func(cm *corev1.ConfigMap) { cm.Labels = nil }
	unowned := func(cm *corev1.ConfigMap) { cm.OwnerReferences = nil }
	immutable := func(cm *corev1.ConfigMap) { cm.Immutable = ptr.To(true) }
	foreign := func(cm *corev1.ConfigMap) { cm.Labels, cm.OwnerReferences = map[string]string{"app": "theirs"}, nil }
	terminatingCause := func(verb string, o client.Object) error {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}}}}
	}
	conflict := func(verb string, o client.Object) error {
		return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, o.GetName(), fmt.Errorf("changed"))
	}

	cases := []struct {
		name    string
		objs    []client.Object
		seen    bool // the Publisher saw this namespace's copy right before
		refuse  func(string, client.Object) error
		actions []string
		events  []string
		requeue bool
		counts  map[prometheus.Counter]float64
	}{
		{name: "a selected namespace without a copy", objs: []client.Object{ns("a", shop)},
			actions: []string{"create a/nap"}, counts: map[prometheus.Counter]float64{published: 1}},
		{name: "the copy as published", objs: []client.Object{ns("a", shop), copyIn("a")}},
		{name: "the copy as published, seen before", objs: []client.Object{ns("a", shop), copyIn("a")}, seen: true},
		{name: "a copy of other bytes, at first sight (an older nap)", objs: []client.Object{ns("a", shop), copyIn("a", tamper)},
			actions: []string{"update a/nap"}, events: []string{"Normal Repaired"}, counts: map[prometheus.Counter]float64{repaired: 1}},
		{name: "a copy of other bytes after it was seen right: tampering", objs: []client.Object{ns("a", shop), copyIn("a", tamper)}, seen: true,
			actions: []string{"update a/nap"}, events: []string{"Warning Tampered", "Normal Repaired"}, counts: map[prometheus.Counter]float64{repaired: 1, tampered: 1}},
		{name: "a copy relabelled: nap's all the same", objs: []client.Object{ns("a", shop), copyIn("a", unlabel)}, seen: true,
			actions: []string{"update a/nap"}, events: []string{"Warning Tampered", "Normal Repaired"}, counts: map[prometheus.Counter]float64{repaired: 1, tampered: 1}},
		{name: "a copy published before the installation owned its copies: adopted", objs: []client.Object{ns("a", shop), copyIn("a", unowned)},
			actions: []string{"update a/nap"}},
		{name: "an immutable copy: replaced, only the one seen", objs: []client.Object{ns("a", shop), copyIn("a", tamper, immutable)},
			actions: []string{"delete a/nap if uid=cm-uid rv=999", "create a/nap"}, events: []string{"Normal Replaced"}, counts: map[prometheus.Counter]float64{published: 1, repaired: 1}},
		{name: "a namespace not selected, nap's copy in it: removed", objs: []client.Object{ns("b", nil), copyIn("b")},
			actions: []string{"delete b/nap"}, counts: map[prometheus.Counter]float64{removed: 1}},
		{name: "a namespace not selected, nap's copy by its owner alone: removed", objs: []client.Object{ns("b", nil), copyIn("b", unlabel)},
			actions: []string{"delete b/nap"}, counts: map[prometheus.Counter]float64{removed: 1}},
		{name: "a namespace not selected, another ConfigMap of the name: left", objs: []client.Object{ns("b", nil), copyIn("b", foreign)}},
		{name: "an excluded namespace", objs: []client.Object{ns("excluded", shop), copyIn("excluded", foreign)}},
		{name: "a terminating namespace", objs: []client.Object{ns("a", shop, terminating)}},
		{name: "a namespace gone", objs: nil},
		{name: "a create refused as the namespace terminates: done", objs: []client.Object{ns("a", shop)}, refuse: terminatingCause,
			actions: []string{"create a/nap"}},
		{name: "an update in conflict: again", objs: []client.Object{ns("a", shop), copyIn("a", tamper)}, refuse: conflict,
			actions: []string{"update a/nap"}, requeue: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, o := range c.objs {
				if cm, ok := o.(*corev1.ConfigMap); ok {
					cm.ResourceVersion = "999"
				}
			}
			cl, actions := recorded(c.objs, c.refuse)
			rec := record.NewFakeRecorder(10)
			p, err := NewPublisher(cl, rec, kube.ConfigMapName, "v9.9.9")
			if err != nil {
				t.Fatal(err)
			}
			p.OwnedBy(owner)
			p.Selector = labels.SelectorFromSet(shop)
			p.Exclude = map[string]bool{"excluded": true}
			name := "a"
			if len(c.objs) > 0 {
				name = c.objs[0].GetName()
			}
			if c.seen {
				p.seen.Store(name, true)
			}
			before := map[prometheus.Counter]float64{}
			for _, m := range []prometheus.Counter{published, repaired, removed, tampered} {
				before[m] = testutil.ToFloat64(m)
			}
			res, err := p.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if !slices.Equal(*actions, c.actions) {
				t.Errorf("actions %q, want %q", *actions, c.actions)
			}
			var events []string
			for _, e := range drain(rec) {
				f := strings.Fields(e)
				events = append(events, f[0]+" "+f[1])
			}
			if !slices.Equal(events, c.events) {
				t.Errorf("events %q, want %q", events, c.events)
			}
			if res.Requeue != c.requeue {
				t.Errorf("requeue %v, want %v", res.Requeue, c.requeue)
			}
			for m, b := range before {
				if got := testutil.ToFloat64(m) - b; got != c.counts[m] {
					t.Errorf("%s rose by %v, want %v", m.Desc(), got, c.counts[m])
				}
			}
			if c.refuse != nil {
				return
			}
			// Whatever was written, the namespace is now as it should be: a second
			// Reconcile writes nothing.
			*actions = nil
			if _, err := p.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
				t.Fatal(err)
			}
			if len(*actions) != 0 {
				t.Errorf("a second Reconcile wrote %q, want nothing", *actions)
			}
			if _, ok := p.seen.Load(name); ok != (len(c.objs) > 0 && p.selected(c.objs[0].(*corev1.Namespace)) && c.objs[0].GetDeletionTimestamp() == nil) {
				t.Errorf("seen %v after it", ok)
			}
		})
	}
}
