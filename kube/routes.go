package kube

import (
	networkingv1 "k8s.io/api/networking/v1"
)

// Fronts are the front doors that name a Service as a backend: each is one more path
// to its pods (traffic.Reaching).
type Fronts struct {
	// Ingress: an Ingress, or an ingress controller's own route (Doors: Traefik's
	// IngressRoute, Contour's HTTPProxy).
	Ingress bool
	Route   bool // a Gateway API route (Doors)
	// RouteHTTP: a Gateway API route of HTTP (HTTPRoute, GRPCRoute), which its Gateway
	// proxies as an HTTP proxy does; the others pass connections through.
	RouteHTTP bool
	Mesh      bool // a service mesh's route (Doors: Istio's VirtualService)
	// IngressTargetType is ALBTargetType as an Ingress that names the Service sets it:
	// "ip" where any does, else the value one sets, "" where none does (only the
	// Ingresses whose class does not decide it: ClassTargetType).
	IngressTargetType string
	// ClassTargetType is the target type the IngressClassParams of an Ingress's class
	// sets (ClassTargets), which no annotation overrides: "ip" where any does, else the
	// value one sets. ClassOnly: every Ingress that names the Service has its class
	// decide, so that the Service's annotation counts for none.
	ClassTargetType string
	ClassOnly       bool
	// TargetGroupType is the targetType of an AWS TargetGroupBinding that names the
	// Service ("ip": the pods are the load balancer's targets; "instance": the nodes):
	// "ip" where any does.
	TargetGroupType string
}

// ALBTargetType is the AWS Load Balancer Controller's annotation by which an Ingress's
// ALB sends to the pods ("ip") or to the nodes ("instance", its default). The
// controller reads it on the Service first, then on the Ingress (traffic.LoadBalancerPods
// decides); IngressAnnotations keeps it.
const ALBTargetType = "alb.ingress.kubernetes.io/target-type"

// IngressAnnotations are the annotations of an Ingress that Frontends read: all a cache
// of Ingresses needs to keep of them.
var IngressAnnotations = []string{ALBTargetType, IngressClassAnnotation}

// Frontends are a namespace's Services by the front doors that name them.
type Frontends map[string]Fronts

// Of is what names service (nothing: the zero Fronts).
func (f Frontends) Of(service string) Fronts { return f[service] }

// AddIngress counts the Services ing names: its default backend's and its rules' paths',
// with the target type it sets, or its class sets (classes: nil for none known).
func (f Frontends) AddIngress(ing *networkingv1.Ingress, classes ClassTargets) {
	tt, ct := ing.Annotations[ALBTargetType], classes[IngressClassOf(ing)]
	for _, name := range IngressBackends(ing) {
		fr := f[name]
		first := !fr.Ingress
		fr.Ingress = true
		switch {
		case ct != "":
			if fr.ClassTargetType != "ip" {
				fr.ClassTargetType = ct
			}
			fr.ClassOnly = first || fr.ClassOnly
		default:
			fr.ClassOnly = false
			if tt != "" && fr.IngressTargetType != "ip" {
				fr.IngressTargetType = tt
			}
		}
		f[name] = fr
	}
}

// IngressBackends are the names of the Services an Ingress sends to: its default
// backend's and its rules' paths'.
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

// The waits learned from production (traffic.Learned, as JSON): nap's controller keeps
// them in this ConfigMap in its namespace when it learns (napctl controller --learn),
// and its webhook gives each pod what its route learned.
const (
	LearnedConfigMap = "nap-learned"
	LearnedKey       = "learned.json"
)
