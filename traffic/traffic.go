package traffic

import (
	"cmp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/kube"
)

// Path is one way traffic reaches the pods: what it is, and which Services' pods it
// reaches. It is pure: napctl calibrate opens and closes a path (calibrate's openers, by
// Name); the webhook, lint, status and the Reporter only classify.
type Path struct {
	Name  string // clusterip, nodeport, ingress: stable, in reports and flags
	Title string // for people
	// NodeChecked: the path sends to nodes and learns which to send to only from their
	// health checks, so only a pod that leaves its node without one (a scale-down, a
	// drain) shows its tail; a rollout keeps every node served.
	NodeChecked bool
	// Remedy is what shortens the path's tail, for a recommendation that is too long.
	Remedy string
	// Reaches tells whether the path leads to the pods of svc, a Service as written
	// (the API's defaults not yet applied); fronts: the front doors that name svc as a
	// backend (an Ingress, a Gateway API route).
	Reaches func(svc *corev1.Service, fronts kube.Fronts) bool
	// Pools, for a path that Reaches the pods of svc, tells whether its clients send
	// requests over connections they keep to each pod (an application load balancer's
	// server pool), so that a pod it still sends to sees no new connection: the adaptive
	// wait must watch requests (nap --requests) to see it. Nil: never.
	Pools func(svc *corev1.Service, fronts kube.Fronts) bool
	// Unmeasurable: napctl calibrate cannot open the path (it would need a front door
	// calibrate does not make), so a pod it reaches holds at least the fleet's wait,
	// always; calibrate's opener for it is never enabled (TestOpeners).
	Unmeasurable bool
}

// The paths. Adding one: an entry here and in All, its test, and its opener in
// calibrate (calibrate/paths.go) where calibrate can measure it.
var (
	// ClusterIP: the Service's virtual IP, through the kube-proxy of the node the
	// client is on.
	ClusterIP = Path{Name: "clusterip", Title: "ClusterIP", Remedy: remedyProxy,
		Reaches: func(svc *corev1.Service, _ kube.Fronts) bool {
			return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
		}}
	// HeadlessDNS: a headless Service's name, which the cluster DNS answers with the
	// addresses of its ready pods: clients connect to the pods themselves (gRPC's
	// round_robin over dns:///, a StatefulSet's peers, database and cache clients). The
	// cluster DNS learns of a pod's end from the EndpointSlices; a client learns of it
	// when it resolves the name again, after any cache it keeps (the answer's TTL: 30 s
	// on a kubeadm cluster). A client that resolves per connection stops opening
	// connections to the pod then; one that pins its connections keeps sending over
	// them until the app closes them, whatever the wait: the app's drain (GOAWAY,
	// Connection: close) ends those. calibrate measures the first kind, Go's resolver,
	// which keeps no cache.
	HeadlessDNS = Path{Name: "headless-dns", Title: "headless Service (DNS)",
		Remedy: "The cluster DNS answers from the EndpointSlices at once (kubeadm's Corefile caches nothing of cluster.local); " +
			"a long tail here is the clients' own: a DNS cache they keep past the answer (its TTL, 30 s on kubeadm's Corefile: " +
			"the kubernetes plugin's ttl), or connections they pin, which only the app's drain (GOAWAY, Connection: close) ends. " +
			"gRPC's round_robin over dns:/// learns of new pods only when it resolves again, at a lost connection and at most every 30 s: " +
			"a rollout within 30 s of its last resolution leaves it no pod unless each old pod waits past that, with the drain.",
		Reaches: func(svc *corev1.Service, _ kube.Fronts) bool {
			return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP == corev1.ClusterIPNone
		}}
	// NodePort: a node's address and the Service's NodePort, through that node's
	// kube-proxy (what an external load balancer sends to).
	NodePort = Path{Name: "nodeport", Title: "NodePort", Remedy: remedyProxy,
		Reaches: func(svc *corev1.Service, _ kube.Fronts) bool {
			return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
				(svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts)
		}}
	// Ingress: an Ingress routing to the Service; the controller routes to pod IPs from
	// the EndpointSlices it watches.
	Ingress = Path{Name: "ingress", Title: "ingress",
		Remedy: "The ingress controller routes from the EndpointSlices it watches, on its own schedule " +
			"(a reload, a throttle on changes): look at how it applies endpoint changes.",
		Reaches: func(_ *corev1.Service, f kube.Fronts) bool { return f.Ingress },
		// An ingress controller is an HTTP proxy that keeps connections to the pods
		// (Traefik, ingress-nginx, Envoy's): a pod it still sends to sees no new
		// connection. With its reaction slowed to 8 s the adaptive wait on new
		// connections alone lost 616 requests, with the request signal 0
		// (docs/adaptive.md).
		Pools: func(_ *corev1.Service, f kube.Fronts) bool { return f.Ingress }}
	// GatewayRoute: a Gateway API route (HTTPRoute, GRPCRoute, ...) naming the Service,
	// served by whichever Gateway implementation the cluster runs; calibrate measures it
	// through an HTTPRoute attached to a Gateway it is given (--gateway).
	GatewayRoute = Path{Name: "gateway-route", Title: "Gateway API route",
		Remedy: "The Gateway's implementation routes from the EndpointSlices it watches, on its own schedule: " +
			"look at how it applies endpoint changes.",
		Reaches: func(_ *corev1.Service, f kube.Fronts) bool { return f.Route },
		// An HTTPRoute's or a GRPCRoute's Gateway is an HTTP proxy that keeps connections
		// to the pods, as an ingress controller is (the lab's Traefik serves both from
		// the same load balancer and transport); a TCP, TLS or UDP route's passes each
		// connection through.
		Pools: func(_ *corev1.Service, f kube.Fronts) bool { return f.RouteHTTP }}
	// MeshRoute: a service mesh's route naming the Service (Istio's VirtualService): the
	// mesh's proxies (each client's sidecar, its gateways) learn of a pod's end from the
	// mesh's control plane, on its own schedule, and send over connections they keep.
	// Calibrate does not open it: it is never measured, so a pod it reaches holds at
	// least the fleet's wait.
	MeshRoute = Path{Name: "mesh-route", Title: "service mesh route", Unmeasurable: true,
		Remedy: "The mesh's proxies learn of a pod's end from its control plane (Istio's istiod pushes endpoints to every " +
			"sidecar and gateway): measure the tail through the mesh with napctl probe during a rollout, and keep the fleet's " +
			"wait at least that long.",
		Reaches: func(_ *corev1.Service, f kube.Fronts) bool { return f.Mesh },
		Pools:   func(_ *corev1.Service, f kube.Fronts) bool { return f.Mesh }}
	// LoadBalancerLocal: an external load balancer in front of a Service with
	// externalTrafficPolicy Local. It sends to the NodePorts of nodes whose health check
	// (the Service's healthCheckNodePort, served by kube-proxy) passes: a node has a
	// ready pod of the Service. When a node's last pod terminates, kube-proxy fails the
	// check and keeps sending to the terminating pod; the load balancer stops sending to
	// the node only after its own checks fail (an AWS NLB's defaults: 3 checks 10 s
	// apart), the longest tail users meet.
	LoadBalancerLocal = loadBalancer(corev1.ServiceExternalTrafficPolicyLocal, "lb-local", "load balancer (Local)",
		"The load balancer keeps sending to a node until its health checks of the Service's healthCheckNodePort fail "+
			"(interval × unhealthy threshold: 30 s on an AWS NLB's defaults). Shorten them (AWS: the "+
			"service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval and -unhealthy-threshold annotations), "+
			"or use externalTrafficPolicy Cluster (the load balancer then checks kube-proxy, and every node routes to "+
			"ready pods), or a load balancer that sends to pods and gates their readiness on its own state (the AWS "+
			"Load Balancer Controller's pod readiness gate, GKE's container-native load balancing).")
	// LoadBalancerCluster: the same with externalTrafficPolicy Cluster: the load
	// balancer checks kube-proxy itself (:10256/healthz) and keeps sending to every node,
	// whose kube-proxy routes to any ready pod of the Service.
	LoadBalancerCluster = loadBalancer(corev1.ServiceExternalTrafficPolicyCluster, "lb-cluster", "load balancer (Cluster)",
		"The load balancer sends to every node whose kube-proxy is healthy, and each node's kube-proxy routes to "+
			"ready pods: a long tail here is kube-proxy's (see the NodePort path), not the load balancer's checks.")
)

// loadBalancer is the path through a load balancer that sends to the nodes, in front of
// a Service with policy: the Service's own (type LoadBalancer), or one an AWS
// TargetGroupBinding in instance mode registers the nodes' NodePorts with.
func loadBalancer(policy corev1.ServiceExternalTrafficPolicy, name, title, remedy string) Path {
	return Path{Name: name, Title: title, NodeChecked: true, Remedy: remedy,
		Reaches: func(svc *corev1.Service, f kube.Fronts) bool {
			// The API's default policy is Cluster.
			own := cmp.Or(svc.Spec.ExternalTrafficPolicy, corev1.ServiceExternalTrafficPolicyCluster) == policy
			return own && (svc.Spec.Type == corev1.ServiceTypeLoadBalancer && !TargetsPods(svc) || f.TargetGroupType == "instance")
		}}
}

// LoadBalancerPods: a load balancer whose targets are the pods themselves (an AWS ALB
// or NLB in IP mode, GCP's container-native load balancing with network endpoint
// groups): its controller learns of a pod's end from the EndpointSlices and
// deregisters the pod through the cloud's API, seconds to minutes later; an
// application (L7) load balancer meanwhile sends requests over server connections it
// keeps, so that the pod sees no new connection.
var LoadBalancerPods = Path{Name: "lb-pods", Title: "load balancer to pods",
	Remedy: "The load balancer's controller deregisters a pod some time after its endpoint leaves the EndpointSlices " +
		"(the cloud's API, its reconcile queue): gate the pods' readiness on the load balancer (the AWS Load Balancer " +
		"Controller's pod readiness gate) and measure the lag behind it with napctl calibrate.",
	Reaches: func(svc *corev1.Service, f kube.Fronts) bool {
		return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && TargetsPods(svc) || f.Ingress && ingressToPods(svc, f) ||
			f.TargetGroupType == "ip"
	},
	// An application load balancer (an Ingress's: AWS's ALB, GCP's) pools; a network
	// load balancer in IP mode (a Service's: AWS's NLB) passes each client's connection
	// through. A TargetGroupBinding does not say whose its target group is, an ALB's or
	// an NLB's: counted as pooling, the safe side (the request signal then holds the
	// wait until the requests stop, whichever it is).
	Pools: func(svc *corev1.Service, f kube.Fronts) bool {
		return f.Ingress && ingressToPods(svc, f) || f.TargetGroupType == "ip"
	}}

// PodTargetAnnotations are the Service annotations, each with its value, by which a
// Service's load balancer sends to the pods' addresses rather than to the nodes.
var PodTargetAnnotations = map[string]string{
	"service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
}

// TargetsPods tells whether svc's load balancer sends to its pods' addresses.
func TargetsPods(svc *corev1.Service) bool {
	for k, v := range PodTargetAnnotations {
		if svc.Annotations[k] == v {
			return true
		}
	}
	return false
}

// ingressToPods: the Ingress that names svc is an application load balancer whose
// targets are svc's pods: GKE's container-native load balancing, the pods in network
// endpoint groups (cloud.google.com/neg: {"ingress": true}, on the Service), or an AWS
// ALB in IP mode, which the AWS Load Balancer Controller reads from the IngressClassParams
// of the Ingress's class first (f.ClassTargetType), then kube.ALBTargetType on the
// Service, then on the Ingress (f).
func ingressToPods(svc *corev1.Service, f kube.Fronts) bool {
	v := strings.ReplaceAll(svc.Annotations["cloud.google.com/neg"], " ", "")
	if strings.Contains(v, `"ingress":true`) || f.ClassTargetType == "ip" {
		return true
	}
	if f.ClassOnly { // every Ingress's class decided, and none said ip
		return false
	}
	if tt, ok := svc.Annotations[kube.ALBTargetType]; ok {
		return tt == "ip"
	}
	return f.IngressTargetType == "ip"
}

// All is every path, in the order reports list them.
func All() []Path {
	return []Path{ClusterIP, HeadlessDNS, NodePort, Ingress, GatewayRoute, MeshRoute, LoadBalancerLocal, LoadBalancerCluster, LoadBalancerPods}
}

// Reaching is every path that leads to the pods of svc (Path.Reaches), in All's order;
// fronts: the front doors that name svc as a backend.
func Reaching(svc *corev1.Service, fronts kube.Fronts) []Path {
	var out []Path
	for _, p := range All() {
		if p.Reaches(svc, fronts) {
			out = append(out, p)
		}
	}
	return out
}

// PathsOf are the paths that reach a pod through svcs, the Services that select it
// (fronts tells which front doors name each), once each, in All's order.
func PathsOf(svcs []*corev1.Service, fronts func(service string) kube.Fronts) []Path {
	var out []Path
	for _, p := range All() {
		for _, svc := range svcs {
			if p.Reaches(svc, fronts(svc.Name)) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// Names are every path's name, in All's order.
func Names() []string {
	var out []string
	for _, p := range All() {
		out = append(out, p.Name)
	}
	return out
}

// Lookup is the path named name (Path.Name).
func Lookup(name string) (Path, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return Path{}, false
}

// remedyProxy is the ClusterIP's and the NodePort's: kube-proxy's.
const remedyProxy = "kube-proxy applies EndpointSlice changes at most once per minSyncPeriod (1 s by default), " +
	"and a large rule set takes long to sync: look at its sync duration (kubeproxy_sync_proxy_rules_duration_seconds)."
