package kube

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Fronts are the front doors that name a Service as a backend: each is one more path
// to its pods (traffic.Reaching).
type Fronts struct {
	Ingress bool // an Ingress
	Route   bool // a Gateway API route (RouteKinds)
	// IngressTargetType is ALBTargetType as an Ingress that names the Service sets it:
	// "ip" where any does, else the value one sets, "" where none does.
	IngressTargetType string
}

// ALBTargetType is the AWS Load Balancer Controller's annotation by which an Ingress's
// ALB sends to the pods ("ip") or to the nodes ("instance", its default). The
// controller reads it on the Service first, then on the Ingress (traffic.LoadBalancerPods
// decides); IngressAnnotations keeps it.
const ALBTargetType = "alb.ingress.kubernetes.io/target-type"

// IngressAnnotations are the annotations of an Ingress that Frontends read: all a cache
// of Ingresses needs to keep of them.
var IngressAnnotations = []string{ALBTargetType}

// Frontends are a namespace's Services by the front doors that name them.
type Frontends map[string]Fronts

// Of is what names service (nothing: the zero Fronts).
func (f Frontends) Of(service string) Fronts { return f[service] }

// AddIngress counts the Services ing names: its default backend's and its rules' paths',
// with the target type it sets.
func (f Frontends) AddIngress(ing *networkingv1.Ingress) {
	tt := ing.Annotations[ALBTargetType]
	for _, name := range IngressBackends(ing) {
		fr := f[name]
		fr.Ingress = true
		if tt != "" && fr.IngressTargetType != "ip" {
			fr.IngressTargetType = tt
		}
		f[name] = fr
	}
}

// AddRoute counts the Services a Gateway API route names (RouteBackends), given as the
// API serves it (an unstructured object's content).
func (f Frontends) AddRoute(route map[string]any) {
	for _, name := range RouteBackends(route) {
		fr := f[name]
		fr.Route = true
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

// GatewayGroup is the Gateway API's group.
const GatewayGroup = "gateway.networking.k8s.io"

// RouteKinds are the Gateway API routes whose backendRefs send to Services, by their
// resource names.
var RouteKinds = map[string]string{"httproutes": "HTTPRoute", "grpcroutes": "GRPCRoute", "tlsroutes": "TLSRoute", "tcproutes": "TCPRoute", "udproutes": "UDPRoute"}

// RouteBackends are the names of the Services in a Gateway API route's own namespace
// that its rules' backendRefs name (kind Service, the default, of the core group): a
// reference to another namespace is that namespace's (and needs a ReferenceGrant there).
func RouteBackends(route map[string]any) []string {
	meta, _ := route["metadata"].(map[string]any)
	own, _ := meta["namespace"].(string)
	spec, _ := route["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	var out []string
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		refs, _ := rule["backendRefs"].([]any)
		for _, b := range refs {
			ref, _ := b.(map[string]any)
			group, _ := ref["group"].(string)
			kind, _ := ref["kind"].(string)
			name, _ := ref["name"].(string)
			ns, _ := ref["namespace"].(string)
			if group == "" && (kind == "" || kind == "Service") && name != "" && (ns == "" || ns == own) {
				out = append(out, name)
			}
		}
	}
	return out
}

// RouteGVK is the kind of a Gateway API route resource at version.
func RouteGVK(resource, version string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: GatewayGroup, Version: version, Kind: RouteKinds[resource]}
}

// The calibration kept in the cluster: napctl calibrate --store writes what it measured
// (traffic.Calibration, as JSON) to this ConfigMap in the controller's namespace, and
// the webhook gives each pod the delay of the slowest path that reaches it.
const (
	CalibrationConfigMap = "nap-calibration"
	CalibrationKey       = "calibration.json"
)
