package scope

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Pod is what the decision reads of a pod (or of a pod template).
type Pod struct {
	Labels        map[string]string
	OwnerKinds    []string // the kinds of its owner references
	RestartPolicy corev1.RestartPolicy
}

// Input is what Decide judges.
type Input struct {
	// Installed is the scope napctl install chose; "" is OptIn.
	Installed Scope
	// Excluded: a namespace nap never mutates (the controller's own, kube-system).
	Excluded        bool
	NamespaceLabels map[string]string
	Pod             Pod
	// Selecting names a Service of the pod's namespace that selects it; called only when
	// the decision depends on it (SelectingService over the namespace's Services does it).
	Selecting func() (name string, ok bool, err error)
}

// Decision is Decide's answer for one pod.
type Decision struct {
	// Scope is the scope in force in the pod's namespace.
	Scope Scope
	// Inject: nap's admission gives the pod a delay.
	Inject bool
	// Audit: under Audit, the pod would get one; it is admitted unchanged and reported.
	Audit bool
	// Explicit: decided by an InjectLabel (of the pod or its namespace), not the scope.
	Explicit bool
	Why      string
}

func (d Decision) String() string {
	if d.Explicit {
		return d.Why
	}
	return "policy " + string(d.Scope) + ": " + d.Why
}

// Decide is the one decision: whether a pod created in a namespace gets nap's delay.
// In order: an excluded namespace never; a pod's own InjectLabel, then its namespace's,
// decide explicitly; otherwise the namespace's scope (Label, else Installed): under a
// scope that decides by Services, a pod that restarts (not a Job's) and that a Service
// selects gets it (Audit: would get it).
func Decide(in Input) (Decision, error) {
	s := in.Installed
	if s == "" {
		s = OptIn
	}
	if l, err := Parse(in.NamespaceLabels[Label]); err == nil {
		s = l
	}
	explicit := func(inject bool, why string) (Decision, error) {
		return Decision{Scope: s, Inject: inject, Explicit: true, Why: why}, nil
	}
	switch {
	case in.Excluded:
		return explicit(false, "its namespace is excluded")
	case in.Pod.Labels[InjectLabel] == Disabled:
		return explicit(false, "the pod is opted out")
	case in.Pod.Labels[InjectLabel] == Enabled:
		return explicit(true, "the pod is opted in")
	case in.NamespaceLabels[InjectLabel] == Disabled:
		return explicit(false, "its namespace is opted out")
	case in.NamespaceLabels[InjectLabel] == Enabled:
		return explicit(true, "its namespace is opted in")
	}
	d := Decision{Scope: s}
	if !s.ByService() {
		d.Why = "not opted in"
		return d, nil
	}
	for _, k := range in.Pod.OwnerKinds {
		if k == "Job" || k == "CronJob" {
			d.Why = "a Job's pod"
			return d, nil
		}
	}
	if r := in.Pod.RestartPolicy; r != "" && r != corev1.RestartPolicyAlways {
		d.Why = "restartPolicy " + string(r)
		return d, nil
	}
	name, ok := "", false
	if in.Selecting != nil {
		var err error
		if name, ok, err = in.Selecting(); err != nil {
			return Decision{}, fmt.Errorf("the Services of its namespace: %w", err)
		}
	}
	if !ok {
		d.Why = "no Service selects it"
		return d, nil
	}
	d.Why = "Service " + name + " selects it"
	d.Inject, d.Audit = s.Injects(), !s.Injects()
	return d, nil
}

// SelectingService is "backing a Service": the first of svcs with a non-empty
// spec.selector that matches the pod's labels (what sends it traffic through
// kube-proxy and the EndpointSlice controller).
func SelectingService(svcs []corev1.Service, podLabels map[string]string) (string, bool) {
	for i := range svcs {
		if Selects(&svcs[i], podLabels) {
			return svcs[i].Name, true
		}
	}
	return "", false
}

// Selecting are the Services of svcs that select a pod with these labels (Selects):
// the Services whose paths reach it.
func Selecting(svcs []corev1.Service, podLabels map[string]string) []*corev1.Service {
	var out []*corev1.Service
	for i := range svcs {
		if Selects(&svcs[i], podLabels) {
			out = append(out, &svcs[i])
		}
	}
	return out
}

// Selects tells whether svc sends traffic to a pod with these labels: its spec.selector
// is not empty and matches them.
func Selects(svc *corev1.Service, podLabels map[string]string) bool {
	return len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(podLabels))
}
