package controller

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podSummary is what the controller's cache holds of a pod: what the Reporter decides
// on, and nothing else. The cache holds every pod of the cluster, 150,000 at
// Kubernetes' tested limits, so each byte here is paid for that many times: a
// corev1.Pod is 1,144 bytes before any of its fields are set, a summary a third of
// that, and its labels are a slice of pairs rather than a map (a map of two labels is
// about 300 bytes). Namespaces and label keys are interned (unique.Make): the same
// few strings, shared by every pod.
//
// The embedded ObjectMeta carries the name, the namespace and the deletion mark only:
// it makes a summary a metav1.Object for the informer's keys, its namespace index and
// the Reporter's handlers. Nothing but the Reporter reads pods from the cache; a
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
}

type podOwner struct {
	kind, name string
	controller bool
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
	s := &podSummary{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: intern(p.Namespace), DeletionTimestamp: p.DeletionTimestamp},
		node: p.Spec.NodeName, restart: p.Spec.RestartPolicy, grace: p.Spec.TerminationGracePeriodSeconds, phase: p.Status.Phase}
	if len(p.Labels) > 0 {
		s.labels = make([]string, 0, 2*len(p.Labels))
		for k, v := range p.Labels {
			s.labels = append(s.labels, intern(k), v)
		}
	}
	if len(p.OwnerReferences) > 0 {
		s.owners = make([]podOwner, len(p.OwnerReferences))
		for i, r := range p.OwnerReferences {
			s.owners[i] = podOwner{kind: intern(r.Kind), name: r.Name, controller: r.Controller != nil && *r.Controller}
		}
	}
	for _, c := range p.Spec.Containers {
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			s.hooks = append(s.hooks, containerHook{container: c.Name, preStop: c.Lifecycle.PreStop})
		}
	}
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
		r := metav1.OwnerReference{Kind: o.kind, Name: o.name}
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
