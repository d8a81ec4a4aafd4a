package observe

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/nap-k8s/nap/probe"
)

// Kind is what happened.
type Kind string

// The events, in the order a pod's life usually shows them.
const (
	PodCreated          Kind = "pod-created"
	PodReady            Kind = "pod-ready"
	EndpointAdded       Kind = "endpoint-added" // in a Service's EndpointSlice, not ready yet
	EndpointReady       Kind = "endpoint-ready"
	PodDeleting         Kind = "pod-deleting" // deletionTimestamp set: its termination began
	PodNotReady         Kind = "pod-not-ready"
	EndpointNotReady    Kind = "endpoint-not-ready"
	EndpointTerminating Kind = "endpoint-terminating"
	ContainerExited     Kind = "container-exited"
	EndpointRemoved     Kind = "endpoint-removed"
	PodDeleted          Kind = "pod-deleted"
)

// Kinds lists every kind in that order.
var Kinds = []Kind{PodCreated, PodReady, EndpointAdded, EndpointReady, PodDeleting, PodNotReady,
	EndpointNotReady, EndpointTerminating, ContainerExited, EndpointRemoved, PodDeleted}

// Event is one change, stamped with the watcher's clock when the watch delivered it:
// the API server's own timestamps have whole seconds only, and a deletionTimestamp is
// when the grace period ends, not when termination began.
type Event struct {
	Time    time.Time
	Kind    Kind
	Pod     string
	Node    string // the pod's node, when scheduled
	Service string // endpoint events: the Service whose EndpointSlice changed
	Detail  string // "container app exited 0", "10.78.1.7", "grace 30s"
}

// Watcher records the events of one target's pods and their endpoints.
type Watcher struct {
	target Target
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu     sync.Mutex
	events []Event
	pods   map[string]string // every pod of the target seen, to its node
	// endpoints of the namespace's pods by Service, then EndpointSlice, then pod: every
	// pod's, since the slices' watch may name a new pod of the target before the pods'
	// watch does. Events are the target's pods' alone.
	endpoints map[string]map[string]map[string]endpoint
}

type endpoint struct {
	state   Kind // EndpointAdded (not ready), EndpointReady, EndpointNotReady or EndpointTerminating
	address string
}

// SyncTimeout bounds how long Start waits for the first listing.
const SyncTimeout = 30 * time.Second

// Start watches t's pods and the EndpointSlices of its namespace until ctx ends or Stop,
// and returns once both watches have listed what exists: events are what changes after
// that.
func Start(ctx context.Context, cs kubernetes.Interface, t Target) (*Watcher, error) {
	w := &Watcher{target: t, pods: map[string]string{}, endpoints: map[string]map[string]map[string]endpoint{}}
	ctx, w.cancel = context.WithCancel(ctx)
	podsOnly := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(t.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = t.Selector.String() }))
	all := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(t.Namespace))
	pods := podsOnly.Core().V1().Pods().Informer()
	endpointSlices := all.Discovery().V1().EndpointSlices().Informer()
	podsSeen, err := pods.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(o any, initial bool) { w.pod(nil, o.(*corev1.Pod), initial) },
		UpdateFunc: func(old, o any) { w.pod(old.(*corev1.Pod), o.(*corev1.Pod), false) },
		DeleteFunc: func(o any) { w.podGone(o) },
	})
	if err != nil {
		return nil, err
	}
	slicesSeen, err := endpointSlices.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(o any, initial bool) { w.slice(o, initial) },
		UpdateFunc: func(_, o any) { w.slice(o, false) },
		DeleteFunc: func(o any) { w.sliceGone(o) },
	})
	if err != nil {
		return nil, err
	}
	w.done.Go(func() { <-ctx.Done(); podsOnly.Shutdown(); all.Shutdown() })
	synced, cancel := context.WithTimeout(ctx, SyncTimeout)
	defer cancel()
	// The pods' handler has seen every existing pod before the slices are listed, so
	// that an existing pod's endpoints are known as the target's from the start.
	podsOnly.Start(ctx.Done())
	if cache.WaitForCacheSync(synced.Done(), podsSeen.HasSynced) {
		all.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(synced.Done(), podsSeen.HasSynced, slicesSeen.HasSynced) {
		w.Stop()
		return nil, fmt.Errorf("watching the pods of %s in namespace %s: not listed within %v: %w", t.Name, t.Namespace, SyncTimeout, context.Cause(synced))
	}
	return w, nil
}

// Stop ends the watches and returns every event, in time order.
func (w *Watcher) Stop() []Event {
	w.cancel()
	w.done.Wait()
	return w.Events()
}

// Events returns the events so far, in time order.
func (w *Watcher) Events() []Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := slices.Clone(w.events)
	slices.SortStableFunc(out, func(a, b Event) int { return a.Time.Compare(b.Time) })
	return out
}

func (w *Watcher) emit(e Event) {
	e.Time = time.Now()
	w.events = append(w.events, e)
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pod records what changed from old (nil: a new pod) to p.
func (w *Watcher) pod(old, p *corev1.Pod, initial bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, seen := w.pods[p.Name]
	w.pods[p.Name] = p.Spec.NodeName
	if initial {
		return
	}
	ev := Event{Pod: p.Name, Node: p.Spec.NodeName}
	if old == nil {
		old = &corev1.Pod{}
		e := ev
		e.Kind = PodCreated
		w.emit(e)
		if !seen {
			// Its endpoints the slices' watch told of first.
			defer w.endpointsOf(p.Name)
		}
	}
	if !ready(old) && ready(p) {
		e := ev
		e.Kind = PodReady
		w.emit(e)
	}
	if old.DeletionTimestamp == nil && p.DeletionTimestamp != nil {
		e := ev
		e.Kind = PodDeleting
		if g := p.DeletionGracePeriodSeconds; g != nil {
			e.Detail = fmt.Sprintf("grace %ds", *g)
		}
		w.emit(e)
	}
	if ready(old) && !ready(p) {
		e := ev
		e.Kind = PodNotReady
		w.emit(e)
	}
	was := map[string]bool{}
	for _, s := range old.Status.ContainerStatuses {
		was[s.Name] = s.State.Terminated != nil
	}
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil && !was[s.Name] {
			e := ev
			e.Kind = ContainerExited
			e.Detail = fmt.Sprintf("container %s exited %d", s.Name, t.ExitCode)
			if t.Reason != "" && t.Reason != "Completed" && t.Reason != "Error" {
				e.Detail += " (" + t.Reason + ")"
			}
			w.emit(e)
		}
	}
}

func (w *Watcher) podGone(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emit(Event{Kind: PodDeleted, Pod: p.Name, Node: p.Spec.NodeName})
}

func service(s *discoveryv1.EndpointSlice) string { return s.Labels[discoveryv1.LabelServiceName] }

// slice records how the endpoints in one EndpointSlice changed, and emits the target's
// pods', judged per Service: an endpoint moving between two slices of its Service is no change.
func (w *Watcher) slice(o any, initial bool) {
	s, ok := o.(*discoveryv1.EndpointSlice)
	if !ok || service(s) == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := map[string]endpoint{}
	for _, ep := range s.Endpoints {
		ref := ep.TargetRef
		if ref == nil || ref.Kind != "Pod" {
			continue
		}
		e := endpoint{state: EndpointAdded}
		c := ep.Conditions
		switch {
		case c.Terminating != nil && *c.Terminating:
			e.state = EndpointTerminating
		case c.Ready == nil || *c.Ready:
			e.state = EndpointReady
		}
		if len(ep.Addresses) > 0 {
			e.address = ep.Addresses[0]
		}
		now[ref.Name] = e
	}
	w.update(service(s), s.Name, now, initial)
}

func (w *Watcher) sliceGone(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	s, ok := o.(*discoveryv1.EndpointSlice)
	if !ok || service(s) == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.update(service(s), s.Name, nil, false)
}

// update sets one slice's endpoints (nil: the slice is gone) and emits the changes of
// the Service's endpoints as a whole.
func (w *Watcher) update(svc, slice string, now map[string]endpoint, initial bool) {
	before := w.merged(svc)
	if w.endpoints[svc] == nil {
		w.endpoints[svc] = map[string]map[string]endpoint{}
	}
	if now == nil {
		delete(w.endpoints[svc], slice)
	} else {
		w.endpoints[svc][slice] = now
	}
	if initial {
		return
	}
	after := w.merged(svc)
	for _, pod := range slices.Sorted(maps.Keys(after)) {
		if _, ours := w.pods[pod]; ours {
			w.endpointChanged(svc, pod, before[pod], after[pod])
		}
	}
	for _, pod := range slices.Sorted(maps.Keys(before)) {
		if _, still := after[pod]; !still {
			if _, ours := w.pods[pod]; ours {
				w.endpointChanged(svc, pod, before[pod], endpoint{})
			}
		}
	}
}

// endpointsOf emits the endpoints a pod of the target, just seen, already has.
func (w *Watcher) endpointsOf(pod string) {
	for _, svc := range slices.Sorted(maps.Keys(w.endpoints)) {
		if e, ok := w.merged(svc)[pod]; ok {
			w.endpointChanged(svc, pod, endpoint{}, e)
		}
	}
}

// endpointChanged emits how one pod's endpoint in svc went from b to a (state "":
// not in the Service's slices).
func (w *Watcher) endpointChanged(svc, pod string, b, a endpoint) {
	switch {
	case a.state == b.state:
		return
	case a.state == "":
		w.emit(Event{Kind: EndpointRemoved, Pod: pod, Node: w.pods[pod], Service: svc, Detail: b.address})
		return
	case a.state == EndpointAdded && b.state != "":
		a.state = EndpointNotReady // was in, now neither ready nor terminating
	}
	w.emit(Event{Kind: a.state, Pod: pod, Node: w.pods[pod], Service: svc, Detail: a.address})
}

// rank orders endpoint states: where one endpoint is in two slices of a Service for a
// moment, the readier counts.
var rank = map[Kind]int{EndpointTerminating: 1, EndpointAdded: 2, EndpointNotReady: 2, EndpointReady: 3}

func (w *Watcher) merged(svc string) map[string]endpoint {
	out := map[string]endpoint{}
	for _, eps := range w.endpoints[svc] {
		for pod, e := range eps {
			if cur, ok := out[pod]; !ok || rank[e.state] > rank[cur.state] {
				out[pod] = e
			}
		}
	}
	return out
}

// Words say e for a person: "termination began (grace 30s)", "left Service web's
// EndpointSlice", "container app exited 0".
func (e Event) Words() string {
	p, ok := words[e.Kind]
	if !ok {
		p = string(e.Kind)
	}
	if strings.Contains(p, "%s") {
		p = fmt.Sprintf(p, "Service "+e.Service+"'s")
	}
	switch {
	case e.Kind == ContainerExited && e.Detail != "":
		return e.Detail
	case e.Detail != "" && !e.Kind.Endpoint():
		return p + " (" + e.Detail + ")"
	}
	return p
}

var words = map[Kind]string{
	PodCreated:          "created",
	PodReady:            "ready",
	EndpointAdded:       "added to %s EndpointSlice, not ready",
	EndpointReady:       "ready in %s EndpointSlice",
	PodDeleting:         "termination began",
	PodNotReady:         "not ready",
	EndpointNotReady:    "not ready in %s EndpointSlice",
	EndpointTerminating: "terminating in %s EndpointSlice",
	ContainerExited:     "exited",
	EndpointRemoved:     "left %s EndpointSlice",
	PodDeleted:          "deleted",
}

// Endpoint tells whether k is about an endpoint rather than a pod.
func (k Kind) Endpoint() bool { return strings.HasPrefix(string(k), "endpoint-") }

// Mark is how a timeline marks k: probe.MarkServing, MarkLeaving or MarkChange.
func (k Kind) Mark() string {
	switch {
	case k == PodCreated || k == PodReady:
		return probe.MarkServing
	case k.Endpoint():
		return probe.MarkChange
	}
	return probe.MarkLeaving
}

// ProbeEvents are the watcher's events (Stop's) on napctl probe's timeline, which
// starts at start: said in this package's words and marks.
func ProbeEvents(events []Event, start time.Time) []probe.Event {
	out := make([]probe.Event, 0, len(events))
	for _, e := range events {
		off := e.Time.Sub(start)
		out = append(out, probe.Event{Offset: off, Seconds: off.Seconds(), Kind: string(e.Kind), Pod: e.Pod, Node: e.Node,
			Service: e.Service, Detail: e.Detail, Words: e.Words(), Mark: e.Kind.Mark()})
	}
	return out
}
