package kube

import networkingv1 "k8s.io/api/networking/v1"

// IngressBackends are the names of the Services an Ingress sends to: its default
// backend's and its rules' paths'. The Services it names are ingressed (traffic.Reaching):
// the ingress controller is one more path to their pods.
func IngressBackends(ing *networkingv1.Ingress) []string {
	var out []string
	add := func(b *networkingv1.IngressBackend) {
		if b != nil && b.Service != nil && b.Service.Name != "" {
			out = append(out, b.Service.Name)
		}
	}
	add(ing.Spec.DefaultBackend)
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			add(&p.Backend)
		}
	}
	return out
}

// The calibration kept in the cluster: napctl calibrate --store writes what it measured
// (traffic.Calibration, as JSON) to this ConfigMap in the controller's namespace, and
// the webhook gives each pod the delay of the slowest path that reaches it.
const (
	CalibrationConfigMap = "nap-calibration"
	CalibrationKey       = "calibration.json"
)
