package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Policy says which pods the webhook gives a delay without an explicit opt-in: chosen at
// install (napctl install --policy) and per namespace with PolicyLabel.
type Policy string

const (
	// PolicyOptIn: only pods and namespaces labelled InjectLabel=enabled.
	PolicyOptIn Policy = "opt-in"
	// PolicyDefault: also every pod that backs a Service (see serviceBacked), unless it
	// or its namespace is labelled InjectLabel=disabled.
	PolicyDefault Policy = "default"
	// PolicyAudit: the pods PolicyDefault would change are admitted unchanged, with a
	// warning, a metric and an event saying what it would add.
	PolicyAudit Policy = "audit"
)

// PolicyLabel on a namespace overrides the installed policy there.
const PolicyLabel = "nap.dev/policy"

// ParsePolicy reads a policy's name.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case PolicyOptIn, PolicyDefault, PolicyAudit:
		return p, nil
	}
	return "", fmt.Errorf("policy %q: want %s, %s or %s", s, PolicyOptIn, PolicyDefault, PolicyAudit)
}

// serviceBacked is "backing a Service": a Service in the pod's namespace with a
// non-empty spec.selector that matches the pod's labels (what sends it traffic through
// kube-proxy and the EndpointSlice controller).
func serviceBacked(svcs []corev1.Service, podLabels map[string]string) (string, bool) {
	for _, s := range svcs {
		if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(podLabels)) {
			return s.Name, true
		}
	}
	return "", false
}

// NamespaceLabelsFrom reads a namespace's labels through r (the manager's cache) for
// Injector.NamespaceLabels.
func NamespaceLabelsFrom(r client.Reader) func(context.Context, string) (map[string]string, error) {
	return func(ctx context.Context, name string) (map[string]string, error) {
		var ns corev1.Namespace
		if err := r.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
			return nil, err
		}
		return ns.Labels, nil
	}
}

// ServicesFrom lists a namespace's Services through r (the manager's cache) for
// Injector.Services.
func ServicesFrom(r client.Reader) func(context.Context, string) ([]corev1.Service, error) {
	return func(ctx context.Context, ns string) ([]corev1.Service, error) {
		var list corev1.ServiceList
		if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		return list.Items, nil
	}
}
