package kube

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Door is a kind of front door that nap reads as the API serves it (an unstructured
// object): an object of another project's API that names the Services it sends
// traffic to. Adding one is a row of Doors and its test; traffic.Reaching decides what
// path its Fronts mark is.
type Door struct {
	Group, Resource, Kind string
	// Backends are the Services in the object's own namespace that obj sends to; a
	// Service of another namespace is that namespace's to show, and is not seen here.
	Backends func(obj map[string]any) []string
	// mark is what the door makes of the Fronts of each of its backends.
	mark func(f *Fronts, obj map[string]any)
}

// GVK is d's kind at version.
func (d Door) GVK(version string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: d.Group, Version: version, Kind: d.Kind}
}

// GatewayGroup is the Gateway API's group.
const GatewayGroup = "gateway.networking.k8s.io"

// Doors are the front doors nap reads, each where the API server serves its kind:
//   - the Gateway API's routes (their rules' backendRefs): path gateway-route, HTTP
//     and gRPC ones proxied as an ingress controller proxies;
//   - Traefik's IngressRoute, IngressRouteTCP and IngressRouteUDP, and Contour's
//     HTTPProxy (their routes' services): an ingress controller's own routes, the
//     path ingress;
//   - Istio's VirtualService (its routes' destination hosts that name a Service of its
//     namespace): path mesh-route;
//   - the AWS Load Balancer Controller's TargetGroupBinding (spec.serviceRef): a load
//     balancer the user made outside the cluster, its targets the pods (targetType
//     ip: lb-pods) or the nodes (instance: lb-local or lb-cluster, by the Service's
//     externalTrafficPolicy).
var Doors = []Door{
	gatewayRoute("httproutes", "HTTPRoute", true),
	gatewayRoute("grpcroutes", "GRPCRoute", true),
	gatewayRoute("tlsroutes", "TLSRoute", false),
	gatewayRoute("tcproutes", "TCPRoute", false),
	gatewayRoute("udproutes", "UDPRoute", false),
	traefikRoute("ingressroutes", "IngressRoute"),
	traefikRoute("ingressroutetcps", "IngressRouteTCP"),
	traefikRoute("ingressrouteudps", "IngressRouteUDP"),
	{Group: "projectcontour.io", Resource: "httpproxies", Kind: "HTTPProxy", Backends: contourServices,
		mark: func(f *Fronts, _ map[string]any) { f.Ingress = true }},
	{Group: "networking.istio.io", Resource: "virtualservices", Kind: "VirtualService", Backends: istioHosts,
		mark: func(f *Fronts, _ map[string]any) { f.Mesh = true }},
	{Group: "elbv2.k8s.aws", Resource: "targetgroupbindings", Kind: "TargetGroupBinding", Backends: targetGroupService,
		mark: func(f *Fronts, obj map[string]any) {
			if t := str(obj, "spec", "targetType"); t != "" && f.TargetGroupType != "ip" {
				f.TargetGroupType = t
			}
		}},
}

// DoorOf is the door of group and kind, if nap reads it.
func DoorOf(group, kind string) (Door, bool) {
	for _, d := range Doors {
		if d.Group == group && d.Kind == kind {
			return d, true
		}
	}
	return Door{}, false
}

// AddDoor counts the Services obj, a front door of kind d, names (d.Backends) with
// what it makes of them.
func (f Frontends) AddDoor(d Door, obj map[string]any) {
	for _, name := range d.Backends(obj) {
		fr := f[name]
		d.mark(&fr, obj)
		f[name] = fr
	}
}

func gatewayRoute(resource, kind string, http bool) Door {
	return Door{Group: GatewayGroup, Resource: resource, Kind: kind, Backends: gatewayBackends,
		mark: func(f *Fronts, _ map[string]any) { f.Route, f.RouteHTTP = true, f.RouteHTTP || http }}
}

func traefikRoute(resource, kind string) Door {
	return Door{Group: "traefik.io", Resource: resource, Kind: kind, Backends: traefikServices,
		mark: func(f *Fronts, _ map[string]any) { f.Ingress = true }}
}

// gatewayBackends are the Services in a Gateway API route's own namespace that its
// rules' backendRefs name (kind Service, the default, of the core group): a reference
// to another namespace is that namespace's (and needs a ReferenceGrant there).
func gatewayBackends(route map[string]any) []string {
	own := str(route, "metadata", "namespace")
	var out []string
	for _, r := range list(route, "spec", "rules") {
		for _, ref := range list(r, "backendRefs") {
			name, ns := str(ref, "name"), str(ref, "namespace")
			if str(ref, "group") == "" && (str(ref, "kind") == "" || str(ref, "kind") == "Service") && name != "" && (ns == "" || ns == own) {
				out = append(out, name)
			}
		}
	}
	return out
}

// traefikServices are the Services of an IngressRoute's (TCP, UDP) routes: kind
// Service, the default (not a TraefikService), in its own namespace.
func traefikServices(obj map[string]any) []string {
	own := str(obj, "metadata", "namespace")
	var out []string
	for _, r := range list(obj, "spec", "routes") {
		for _, s := range list(r, "services") {
			name, ns, kind := str(s, "name"), str(s, "namespace"), str(s, "kind")
			if name != "" && (kind == "" || kind == "Service") && (ns == "" || ns == own) {
				out = append(out, name)
			}
		}
	}
	return out
}

// contourServices are the Services of an HTTPProxy's routes and of its TCP proxy, in
// its own namespace (Contour's rule).
func contourServices(obj map[string]any) []string {
	var out []string
	services := func(parent any) {
		for _, s := range list(parent, "services") {
			if name := str(s, "name"); name != "" {
				out = append(out, name)
			}
		}
	}
	for _, r := range list(obj, "spec", "routes") {
		services(r)
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		if tcp, ok := spec["tcpproxy"].(map[string]any); ok {
			services(tcp)
		}
	}
	return out
}

// istioHosts are the Services of a VirtualService's own namespace that its HTTP, TCP
// and TLS routes send to (their destinations' hosts; an HTTP route's mirrors too): a
// short name (Istio reads it in the VirtualService's namespace) or NAME.NAMESPACE.svc
// with any cluster domain after it.
func istioHosts(obj map[string]any) []string {
	own := str(obj, "metadata", "namespace")
	var out []string
	add := func(host string) {
		parts := strings.Split(host, ".")
		switch {
		case host == "" || strings.Contains(host, "*"):
		case len(parts) == 1:
			out = append(out, host)
		case len(parts) >= 3 && parts[1] == own && parts[2] == "svc":
			out = append(out, parts[0])
		}
	}
	for _, kind := range []string{"http", "tcp", "tls"} {
		for _, r := range list(obj, "spec", kind) {
			for _, d := range list(r, "route") {
				add(str(d, "destination", "host"))
			}
			add(str(r, "mirror", "host"))
			for _, m := range list(r, "mirrors") {
				add(str(m, "destination", "host"))
			}
		}
	}
	return out
}

// targetGroupService is the Service a TargetGroupBinding's target group sends to
// (spec.serviceRef, in its own namespace).
func targetGroupService(obj map[string]any) []string {
	if name := str(obj, "spec", "serviceRef", "name"); name != "" {
		return []string{name}
	}
	return nil
}

// str is the string at path in an unstructured object ("" where there is none).
func str(obj any, path ...string) string {
	for _, k := range path {
		m, ok := obj.(map[string]any)
		if !ok {
			return ""
		}
		obj = m[k]
	}
	s, _ := obj.(string)
	return s
}

// list is the list at path in an unstructured object.
func list(obj any, path ...string) []any {
	for _, k := range path {
		m, ok := obj.(map[string]any)
		if !ok {
			return nil
		}
		obj = m[k]
	}
	l, _ := obj.([]any)
	return l
}
