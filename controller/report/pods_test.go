package report

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
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
	if got, want := kube.WorkloadOf(&slim), kube.WorkloadOf(full); got != want {
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

// pagesOf serves pods in pages as the API server does, and records what it was asked.
type pagesOf struct {
	pods  []corev1.Pod
	asked []metav1.ListOptions
	watch *watch.FakeWatcher // nil: an empty watch
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
	if f.watch != nil {
		return f.watch, nil
	}
	return watch.NewEmptyWatch(), nil
}

func (f *pagesOf) List(o metav1.ListOptions) (runtime.Object, error) {
	return f.ListWithContext(context.Background(), o)
}

func (f *pagesOf) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return f.WatchWithContext(context.Background(), o)
}

// TestPagedPods: the informer's lists come in pages of podPage (the first one most
// recent, a relist from its resourceVersion), and what it is handed is each pod's
// summary, made page by page.
func TestPagedPods(t *testing.T) {
	f := &pagesOf{}
	for i := range 1234 {
		f.pods = append(f.pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i), Namespace: "ns", Labels: map[string]string{"app": "a"},
			Annotations: map[string]string{"big": "x"}}, Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "i"}}}})
	}
	lw := pagedPods{f}
	for _, c := range []struct {
		name  string
		asked metav1.ListOptions
		first metav1.ListOptions // what the first page is asked as
	}{
		{"first list", metav1.ListOptions{ResourceVersion: "0", Limit: 500}, metav1.ListOptions{Limit: podPage}},
		{"relist", metav1.ListOptions{ResourceVersion: "77", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			metav1.ListOptions{ResourceVersion: "77", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: podPage}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f.asked = nil
			o, err := lw.List(c.asked)
			if err != nil {
				t.Fatal(err)
			}
			l := o.(*podSummaryList)
			if len(l.Items) != 1234 || l.ResourceVersion != "101" || l.Continue != "" {
				t.Fatalf("got %d pods at %q (continue %q), want 1234 at the first page's 101", len(l.Items), l.ResourceVersion, l.Continue)
			}
			want := []metav1.ListOptions{c.first, {Limit: podPage, Continue: "500"}, {Limit: podPage, Continue: "1000"}}
			if !slices.Equal(f.asked, want) {
				t.Fatalf("asked %+v, want %+v", f.asked, want)
			}
			// What the reflector does with it.
			items, err := meta.ExtractListWithAlloc(o)
			if err != nil || len(items) != 1234 {
				t.Fatalf("the reflector's extraction: %d items, %v", len(items), err)
			}
			s, ok := items[1233].(*podSummary)
			if !ok || s.Name != "p1233" || s.node != "n" || len(s.labels) != 2 || s.hooks != nil {
				t.Errorf("want the pod's summary: %#v", items[1233])
			}
			if c := l.DeepCopyObject().(*podSummaryList); len(c.Items) != 1234 || &c.Items[0] == &l.Items[0] {
				t.Error("a list's copy has its own items")
			}
		})
	}
}

// TestPodInformerUpdates: an informer made by newInformer lists summaries, and hands a
// handler every change of a pod, an update included. An update whose resourceVersion
// did not change is taken for a resync, and handed only to the handlers whose resync
// is due: once the informer has checked resyncs (controller-runtime's caches resync
// every 10 hours or so; this one every 50 ms), the Reporter's handler would miss
// every pod's update.
func TestPodInformerUpdates(t *testing.T) {
	f := &pagesOf{watch: watch.NewFake()}
	for i := range 3 {
		f.pods = append(f.pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i), Namespace: "ns", ResourceVersion: "1"}})
	}
	inf := newInformer(f, &corev1.Pod{}, 50*time.Millisecond, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	if err := inf.SetTransform(summarizePod); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 10)
	if _, err := inf.AddEventHandlerWithResyncPeriod(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { got <- "add " + o.(*podSummary).Name },
		UpdateFunc: func(_, o any) { got <- fmt.Sprintf("update %s %s", o.(*podSummary).Name, o.(*podSummary).phase) },
		DeleteFunc: func(o any) { got <- "delete " + o.(*podSummary).Name },
	}, time.Hour); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go inf.RunWithContext(ctx)
	next := func() string {
		t.Helper()
		select {
		case s := <-got:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("no event in 10 s")
			return ""
		}
	}
	for i := range 3 {
		if s := next(); s != fmt.Sprint("add p", i) {
			t.Fatalf("listed: %s", s)
		}
	}
	time.Sleep(300 * time.Millisecond) // resyncs checked: the handler's is not due
	done := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "ns", ResourceVersion: "2"}, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	f.watch.Modify(done)
	if s := next(); s != "update p1 Succeeded" {
		t.Fatalf("after an update: %s", s)
	}
	f.watch.Delete(done)
	if s := next(); s != "delete p1" {
		t.Fatalf("after a delete: %s", s)
	}
	if n := len(inf.GetIndexer().List()); n != 2 {
		t.Errorf("%d pods in the store, want 2", n)
	}
}
