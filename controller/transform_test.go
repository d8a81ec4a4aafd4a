package controller

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/hook"
)

// TestPodSummary: the cache's summary of a pod, filled back into a pod, gives the
// Reporter what the full pod does (workload, hook, scope's inputs, the termination
// checks' fields) and nothing else; a fill leaves nothing of the pod filled before.
func TestPodSummary(t *testing.T) {
	yes, grace := true, int64(45)
	sleep := &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 10}},
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	deleted := metav1.Now()
	full := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-7d9f8c6b5d-x2x4q", Namespace: "shop", UID: "u", ResourceVersion: "7", DeletionTimestamp: &deleted,
			Labels:      map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5d"},
			Annotations: map[string]string{"big": "annotation"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5d", UID: "rs", Controller: &yes, BlockOwnerDeletion: &yes},
				{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "cm"},
			}},
		Spec: corev1.PodSpec{NodeName: "n1", RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{
				{Name: "sidecar", Image: "proxy", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}},
				{Name: "app", Image: "web", Lifecycle: sleep},
				{Name: "poststart-only", Lifecycle: &corev1.Lifecycle{PostStart: sleep.PostStart}},
			}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
	o, err := summarizePod(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	sum := o.(*podSummary)
	if again, _ := summarizePod(sum); again != sum {
		t.Error("a summary must pass through the transform as it is")
	}
	if a := unsafe.Sizeof(*sum); 3*a > unsafe.Sizeof(*full) {
		t.Errorf("a summary is %d bytes, more than a third of a Pod's %d", a, unsafe.Sizeof(*full))
	}

	var slim corev1.Pod
	// Filled over another pod first: nothing of it may remain.
	(&podSummary{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "y"}, labels: []string{"stale", "1", "app", "old"},
		owners: []podOwner{{"batch/v1", "Job", "j", true}, {"", "A", "b", false}, {"", "C", "d", false}},
		hooks:  []containerHook{{"a", sleep.PreStop}, {"b", sleep.PreStop}}}).fill(&slim)
	sum.fill(&slim)
	if got, want := hook.WorkloadOf(&slim), hook.WorkloadOf(full); got != want {
		t.Errorf("workload %v, want %v", got, want)
	}
	gh, gc := hook.First(slim.Spec)
	wh, wc := hook.First(full.Spec)
	if gc != wc || gh.Kind != wh.Kind || gh.Delay() != wh.Delay() {
		t.Errorf("first hook %v in %q, want %v in %q", gh, gc, wh, wc)
	}
	if len(slim.Spec.Containers) != 1 || slim.Spec.Containers[0].Lifecycle.PostStart != nil || slim.Spec.Containers[0].Image != "" {
		t.Errorf("want only the hooked container, with its preStop alone: %+v", slim.Spec.Containers)
	}
	if len(slim.OwnerReferences) != 2 || slim.OwnerReferences[1].Kind != "ConfigMap" || slim.OwnerReferences[1].Controller != nil ||
		slim.OwnerReferences[0].UID != "" || slim.OwnerReferences[0].APIVersion != "apps/v1" {
		t.Errorf("owners: want every API version, kind and name, the controller marked, nothing else: %+v", slim.OwnerReferences)
	}
	if !maps.Equal(slim.Labels, full.Labels) {
		t.Errorf("labels %v, want %v", slim.Labels, full.Labels)
	}
	if slim.Annotations != nil || slim.Status.PodIP != "" || slim.Spec.RestartPolicy != corev1.RestartPolicyAlways ||
		*slim.Spec.TerminationGracePeriodSeconds != 45 || slim.Spec.NodeName != "n1" || slim.Status.Phase != corev1.PodRunning ||
		slim.Namespace != "shop" || slim.Name != full.Name || slim.DeletionTimestamp == nil {
		t.Errorf("filled pod: %+v", slim)
	}

	// A pod without hooks keeps no container at all.
	bare := full.DeepCopy()
	bare.Spec.Containers = bare.Spec.Containers[:1]
	o, _ = summarizePod(bare)
	if n := len(o.(*podSummary).hooks); n != 0 {
		t.Errorf("a pod without hooks: %d hooks kept", n)
	}
	// Other kinds pass through.
	if o, _ := summarizePod(&corev1.Service{}); o == nil {
		t.Error("a Service did not pass through")
	}
}

// TestShareBinaries: copies of the same binaries share their bytes in the cache; an
// edited copy keeps its own; managedFields go.
func TestShareBinaries(t *testing.T) {
	tr := shareBinaries()
	cm := func(ns string, amd []byte) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nap", Namespace: ns,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "nap"}}},
			BinaryData: map[string][]byte{"nap-amd64": append([]byte{}, amd...), "nap-arm64": []byte("arm")}}
	}
	put := func(c *corev1.ConfigMap) *corev1.ConfigMap {
		t.Helper()
		o, err := tr(c)
		if err != nil {
			t.Fatal(err)
		}
		return o.(*corev1.ConfigMap)
	}
	a := put(cm("a", []byte("ELF-1")))
	b := put(cm("b", []byte("ELF-1")))
	edited := put(cm("c", []byte("ELF-2")))
	if &a.BinaryData["nap-amd64"][0] != &b.BinaryData["nap-amd64"][0] || &a.BinaryData["nap-arm64"][0] != &b.BinaryData["nap-arm64"][0] {
		t.Error("equal binaries are not shared")
	}
	if string(edited.BinaryData["nap-amd64"]) != "ELF-2" || string(b.BinaryData["nap-amd64"]) != "ELF-1" {
		t.Error("an edited copy must keep its own bytes, and the others theirs")
	}
	if a.ManagedFields != nil || edited.ManagedFields != nil {
		t.Error("managedFields kept")
	}
	if o, err := tr(&corev1.Pod{}); err != nil || o == nil {
		t.Errorf("another kind: %v, %v", o, err)
	}
}

// pagesOf serves pods in pages as the API server does, and records what it was asked.
type pagesOf struct {
	pods  []corev1.Pod
	asked []metav1.ListOptions
}

func (f *pagesOf) ListWithContext(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
	f.asked = append(f.asked, o)
	from, _ := strconv.Atoi(o.Continue)
	to := len(f.pods)
	if o.Limit > 0 {
		to = min(to, from+int(o.Limit))
	}
	l := &corev1.PodList{Items: f.pods[from:to]}
	l.ResourceVersion = fmt.Sprint(100 + len(f.asked)) // pages after the first name the snapshot's own
	if to < len(f.pods) {
		l.Continue = strconv.Itoa(to)
		l.RemainingItemCount = ptr.To(int64(len(f.pods) - to))
	}
	return l, nil
}

func (f *pagesOf) WatchWithContext(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewEmptyWatch(), nil
}

// TestPagedPods: the informer's first list comes in pages of podPage, most recent,
// each pod kept as its summary reads it; a relist at a resourceVersion passes through.
func TestPagedPods(t *testing.T) {
	f := &pagesOf{}
	for i := range 1234 {
		f.pods = append(f.pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i), Namespace: "ns", Labels: map[string]string{"app": "a"},
			Annotations: map[string]string{"big": "x"}}, Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}}}})
	}
	lw := pagedPods{f}
	o, err := lw.List(metav1.ListOptions{ResourceVersion: "0", Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	l := o.(*corev1.PodList)
	if len(l.Items) != 1234 || l.ResourceVersion != "101" || l.Continue != "" {
		t.Fatalf("got %d pods at %q (continue %q), want 1234 at the first page's 101", len(l.Items), l.ResourceVersion, l.Continue)
	}
	if len(f.asked) != 3 || f.asked[0].ResourceVersion != "" || f.asked[0].Limit != podPage || f.asked[2].Continue != "1000" {
		t.Fatalf("asked %+v: want 3 pages of %d, most recent", f.asked, podPage)
	}
	p := l.Items[1233]
	if p.Name != "p1233" || p.Labels["app"] != "a" || p.Annotations != nil || len(p.Spec.Containers) != 0 || p.Spec.NodeName != "n" {
		t.Errorf("want the pod as its summary reads it: %+v", p)
	}
	f.asked = nil
	o, err = lw.List(metav1.ListOptions{ResourceVersion: "77"})
	if err != nil || len(o.(*corev1.PodList).Items) != 1234 || len(f.asked) != 1 || f.asked[0].ResourceVersion != "77" {
		t.Errorf("a relist at a resourceVersion must pass through: asked %+v (%v)", f.asked, err)
	}
	if o.(*corev1.PodList).Items[0].Annotations == nil {
		t.Error("a passed-through list is the API server's own")
	}
}
