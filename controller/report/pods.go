package report

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/wait"
)

// podSummary is what the controller's cache holds of a pod: what the Reporter decides
// on, and nothing else. The cache holds every pod of the cluster, 150,000 at
// Kubernetes' tested limits, so each byte here is paid for that many times: a
// corev1.Pod is 1,144 bytes before any of its fields are set, a summary a third of
// that, and its labels are a slice of pairs rather than a map (a map of two labels is
// about 300 bytes). Namespaces, nodes, owners' names and labels are interned
// (unique.Make): the same strings, shared by every pod of a workload or a node (a
// string no pod holds any more is let go).
//
// The embedded ObjectMeta carries the name, the namespace, the resourceVersion and the
// deletion mark only: it makes a summary a metav1.Object for the informer's keys, its
// namespace index and the Reporter's handlers. The informer hands an update on only
// when the resourceVersion changed (an equal one is a resync, which the Reporter's
// handlers do not ask for), so it is kept. Nothing but the Reporter reads pods from the cache; a
// client's List or Get of pods through it fails (the cache holds no corev1.Pod).
type podSummary struct {
	metav1.ObjectMeta
	labels  []string // key, value, key, value, ...
	owners  []podOwner
	node    string
	restart corev1.RestartPolicy
	grace   *int64
	phase   corev1.PodPhase
	hooks   []containerHook // the containers with a preStop hook
	// verdicts are nap's lines in its terminated containers' messages (verdictsOf):
	// nil until the pod's final status (a pointer: 8 bytes for every pod, where a slice
	// would take 24).
	verdicts *[]containerVerdict
	// ownDelay: the pod sets its own delay (wait.DelayAnnotation), which no route
	// changes: the live wait leaves it alone.
	ownDelay bool
}

type podOwner struct {
	apiVersion, kind, name string
	controller             bool
}

type containerHook struct {
	container string
	preStop   *corev1.LifecycleHandler
}

// summarizePod is the cache's transform of pods (see podSummary). A summary passes
// through as it is, as the informer may hand one back.
func summarizePod(o any) (any, error) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return o, nil
	}
	return summaryOf(p), nil
}

func summaryOf(p *corev1.Pod) *podSummary {
	s := &podSummary{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: intern(p.Namespace), ResourceVersion: p.ResourceVersion, DeletionTimestamp: p.DeletionTimestamp},
		node: intern(p.Spec.NodeName), restart: p.Spec.RestartPolicy, grace: p.Spec.TerminationGracePeriodSeconds, phase: p.Status.Phase}
	if len(p.Labels) > 0 {
		s.labels = make([]string, 0, 2*len(p.Labels))
		for k, v := range p.Labels {
			s.labels = append(s.labels, intern(k), intern(v))
		}
	}
	if len(p.OwnerReferences) > 0 {
		s.owners = make([]podOwner, len(p.OwnerReferences))
		for i, r := range p.OwnerReferences {
			s.owners[i] = podOwner{apiVersion: intern(r.APIVersion), kind: intern(r.Kind), name: intern(r.Name), controller: r.Controller != nil && *r.Controller}
		}
	}
	for _, c := range p.Spec.Containers {
		if h := hook.Handler(c); h != nil {
			s.hooks = append(s.hooks, containerHook{container: c.Name, preStop: h})
		}
	}
	if v := verdictsOf(p); len(v) > 0 {
		s.verdicts = &v
	}
	_, s.ownDelay = wait.OwnDelay(p.Annotations)
	return s
}

func intern(s string) string { return unique.Make(s).Value() }

// fill makes p the pod s summarizes, as far as the Reporter reads it (hook, lint's
// termination checks, scope), reusing p's label map and slices: a scan judges every pod
// without allocating one. p holds until the next fill; whoever keeps it deep-copies it.
func (s *podSummary) fill(p *corev1.Pod) {
	labels, owners, containers := p.Labels, p.OwnerReferences[:0], p.Spec.Containers[:0]
	*p = corev1.Pod{}
	clear(labels)
	if labels == nil && len(s.labels) > 0 {
		labels = make(map[string]string, len(s.labels)/2)
	}
	for i := 0; i+1 < len(s.labels); i += 2 {
		labels[s.labels[i]] = s.labels[i+1]
	}
	for _, o := range s.owners {
		r := metav1.OwnerReference{APIVersion: o.apiVersion, Kind: o.kind, Name: o.name}
		if o.controller {
			r.Controller = &isController
		}
		owners = append(owners, r)
	}
	for _, h := range s.hooks {
		containers = append(containers, corev1.Container{Name: h.container, Lifecycle: &corev1.Lifecycle{PreStop: h.preStop}})
	}
	p.Name, p.Namespace, p.DeletionTimestamp, p.Labels, p.OwnerReferences = s.Name, s.Namespace, s.DeletionTimestamp, labels, owners
	p.Spec = corev1.PodSpec{NodeName: s.node, RestartPolicy: s.restart, TerminationGracePeriodSeconds: s.grace, Containers: containers}
	p.Status.Phase = s.phase
}

var isController = true

// podPage is how many pods pagedPods asks the API server for at a time.
const podPage = 500

// pagedPods is the pod informer's lister. An informer's first list asks for every pod
// at once (resourceVersion 0, which the API server's watch cache serves whole, ignoring
// the limit), and the reflector decodes all of it before the transform makes each pod
// a summary: at 150,000 pods that is gigabytes at start, for caches of a few hundred
// megabytes. pagedPods lists in pages of podPage instead, and makes each page's pods
// summaries before it asks for the next: the list it hands the reflector is of
// summaries (podSummaryList), so that at most one page of full pods is held at a time,
// on a relist as on the first list.
type pagedPods struct {
	toolscache.ListerWatcherWithContext
}

func (l pagedPods) List(opts metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), opts)
}

func (l pagedPods) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), opts)
}

func (l pagedPods) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if opts.Continue != "" { // never asked: this list hands out no continue token
		return l.ListerWatcherWithContext.ListWithContext(ctx, opts)
	}
	if opts.ResourceVersion == "0" {
		// "Any": the watch cache would serve it whole. The most recent, in pages.
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
	}
	opts.Limit = podPage
	out := &podSummaryList{}
	for first := true; ; first = false {
		o, err := l.ListerWatcherWithContext.ListWithContext(ctx, opts)
		if err != nil {
			return nil, err
		}
		page, ok := o.(*corev1.PodList)
		if !ok {
			return nil, fmt.Errorf("listing pods: got a %T", o)
		}
		if first {
			out.ResourceVersion = page.ResourceVersion // every page is of the first one's snapshot
			n := len(page.Items)
			if page.RemainingItemCount != nil {
				n += int(*page.RemainingItemCount)
			}
			out.Items = make([]runtime.Object, 0, n)
		}
		for i := range page.Items {
			out.Items = append(out.Items, summaryOf(&page.Items[i]))
		}
		if page.Continue == "" {
			return out, nil
		}
		// The pages after the first name their snapshot by the token alone.
		opts.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = page.Continue, "", ""
	}
}

// podSummaryList is pagedPods' list: the reflector takes its items as they are
// (meta.ExtractList), and the transform passes summaries through.
type podSummaryList struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []runtime.Object // *podSummary
}

func (l *podSummaryList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = slices.Clone(l.Items) // summaries are never changed once made
	return &c
}

// GetObjectKind and DeepCopyObject make a summary a runtime.Object, for
// podSummaryList. A summary is never changed once made: its copy shares its parts.
func (s *podSummary) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (s *podSummary) DeepCopyObject() runtime.Object {
	c := *s
	return &c
}

// newInformer is the cache's informer constructor: pagedPods lists the pods.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
	if _, ok := obj.(*corev1.Pod); ok {
		lw = pagedPods{toolscache.ToListerWatcherWithContext(lw)}
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
}
