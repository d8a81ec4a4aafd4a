package traffic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/kube"
)

// Config is what reaching the paths takes in one cluster.
type Config struct {
	// NodeAddress is the node address of the NodePort path: "" the first node's
	// InternalIP, "-" no NodePort path.
	NodeAddress string
	// IngressClass is the class of the Ingress the ingress path creates; IngressURL is
	// where that controller answers (http://ADDR). Both, or neither and no ingress path.
	IngressClass, IngressURL string
	// LoadBalancers are the externalTrafficPolicies of the load balancer paths: each is a
	// Service of type LoadBalancer of its own, which the cloud (or the lab's load
	// balancer) gives an address.
	LoadBalancers []corev1.ServiceExternalTrafficPolicy
	// LBAnnotations go on those Services: the cloud's load balancer settings (scheme,
	// health check timings).
	LBAnnotations map[string]string
	// PodLBAnnotations, when set, enable the path through a load balancer whose
	// targets are the pods (LoadBalancerPods): the annotations that make the cloud's
	// load balancer send to pod addresses (and its settings).
	PodLBAnnotations map[string]string
	// LBWait bounds the wait for a load balancer's address and its first answers;
	// default DefaultLBWait.
	LBWait time.Duration
}

// DefaultLBWait is how long a load balancer path waits for its address and its first
// answers: a cloud provisions a load balancer in minutes.
const DefaultLBWait = 5 * time.Minute

// ParseLoadBalancers reads a list of externalTrafficPolicies, "local,cluster" (any case).
func ParseLoadBalancers(s string) ([]corev1.ServiceExternalTrafficPolicy, error) {
	var out []corev1.ServiceExternalTrafficPolicy
	for _, f := range strings.Split(s, ",") {
		switch strings.ToLower(strings.TrimSpace(f)) {
		case "":
		case "local":
			out = append(out, corev1.ServiceExternalTrafficPolicyLocal)
		case "cluster":
			out = append(out, corev1.ServiceExternalTrafficPolicyCluster)
		default:
			return nil, fmt.Errorf("load balancer %q: want local, cluster or both (local,cluster)", f)
		}
	}
	return out, nil
}

// Validate names what is off.
func (c Config) Validate() error {
	if (c.IngressClass == "") != (c.IngressURL == "") {
		return errors.New("--ingress-class and --ingress-url go together")
	}
	return nil
}

// Target is the workload a path leads to: a Service (its first port) in a namespace.
type Target struct {
	Namespace, Service string
	// Prefix is the URL path the workload answers under where a front door is shared
	// (an ingress routes Prefix to the Service): "/NAME", "/NS/".
	Prefix string
}

// Path is one way traffic reaches the pods.
type Path struct {
	Name  string // clusterip, nodeport, ingress: stable, in reports and flags
	Title string // for people
	// Needs is the Service type the path needs (ClusterIP, NodePort).
	Needs corev1.ServiceType
	// Enabled tells whether cfg asks for the path.
	Enabled func(cfg Config) bool
	// Open creates what the path needs beside the Service (nothing, an Ingress) and
	// returns the URL that reaches the pods through it.
	Open func(ctx context.Context, cs kubernetes.Interface, cfg Config, t Target, svc *corev1.Service) (string, error)
	// Close deletes what Open created; nothing there is no error.
	Close func(ctx context.Context, cs kubernetes.Interface, t Target) error
	// NodeChecked: the path sends to nodes and learns which to send to only from their
	// health checks, so only a pod that leaves its node without one (a scale-down, a
	// drain) shows its tail; a rollout keeps every node served.
	NodeChecked bool
	// Annotations, for a path through a load balancer the cloud provisions (in
	// minutes), are the annotations cfg gives the path's own Service: the load
	// balancer's settings, on which its tail depends. Nil for the other paths.
	Annotations func(cfg Config) map[string]string
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
}

// The paths. Adding one: an entry here and in All, and its test.
var (
	// ClusterIP: the Service's virtual IP, through the kube-proxy of the node the
	// client is on.
	ClusterIP = Path{Name: "clusterip", Title: "ClusterIP", Needs: corev1.ServiceTypeClusterIP,
		Enabled: func(Config) bool { return true },
		Open: func(_ context.Context, _ kubernetes.Interface, _ Config, _ Target, svc *corev1.Service) (string, error) {
			if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
				return "", fmt.Errorf("Service %s/%s has no ClusterIP", svc.Namespace, svc.Name)
			}
			return hostURL(svc.Spec.ClusterIP, svc.Spec.Ports[0].Port), nil
		},
		Close: nothing, Remedy: remedyProxy,
		Reaches: func(svc *corev1.Service, _ kube.Fronts) bool {
			return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
		}}
	// NodePort: a node's address and the Service's NodePort, through that node's
	// kube-proxy (what an external load balancer sends to).
	NodePort = Path{Name: "nodeport", Title: "NodePort", Needs: corev1.ServiceTypeNodePort,
		Enabled: func(c Config) bool { return c.NodeAddress != "-" },
		Open: func(ctx context.Context, cs kubernetes.Interface, c Config, _ Target, svc *corev1.Service) (string, error) {
			addr := c.NodeAddress
			if addr == "" {
				var err error
				if addr, err = firstNodeIP(ctx, cs); err != nil {
					return "", err
				}
			}
			if svc.Spec.Ports[0].NodePort == 0 {
				return "", fmt.Errorf("Service %s/%s has no NodePort", svc.Namespace, svc.Name)
			}
			return hostURL(addr, svc.Spec.Ports[0].NodePort), nil
		},
		Close: nothing, Remedy: remedyProxy,
		Reaches: func(svc *corev1.Service, _ kube.Fronts) bool {
			return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
				(svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts)
		}}
	// Ingress: an Ingress of the configured class routing Target.Prefix to the Service;
	// the controller routes to pod IPs from the EndpointSlices it watches.
	Ingress = Path{Name: "ingress", Title: "ingress", Needs: corev1.ServiceTypeClusterIP,
		Enabled: func(c Config) bool { return c.IngressClass != "" },
		Open: func(ctx context.Context, cs kubernetes.Interface, c Config, t Target, svc *corev1.Service) (string, error) {
			ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: t.Service}, Spec: networkingv1.IngressSpec{
				IngressClassName: ptr.To(c.IngressClass),
				Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{Path: t.Prefix, PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
						Service: &networkingv1.IngressServiceBackend{Name: t.Service, Port: networkingv1.ServiceBackendPort{Number: svc.Spec.Ports[0].Port}}}}}}}}}}}
			if _, err := cs.NetworkingV1().Ingresses(t.Namespace).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
				return "", fmt.Errorf("creating the Ingress %s/%s: %w", t.Namespace, t.Service, err)
			}
			return strings.TrimRight(c.IngressURL, "/") + t.Prefix, nil
		},
		Close: func(ctx context.Context, cs kubernetes.Interface, t Target) error {
			err := cs.NetworkingV1().Ingresses(t.Namespace).Delete(ctx, t.Service, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		},
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
	// served by whichever Gateway implementation the cluster runs. Calibrate does not
	// open it (the lab has no Gateway): it is never measured, so a pod it reaches holds
	// at least the fleet's wait.
	GatewayRoute = Path{Name: "gateway-route", Title: "Gateway API route", Needs: corev1.ServiceTypeClusterIP,
		Enabled: func(Config) bool { return false },
		Open: func(context.Context, kubernetes.Interface, Config, Target, *corev1.Service) (string, error) {
			return "", errors.New("napctl calibrate does not measure Gateway API routes")
		},
		Close: nothing,
		Remedy: "The Gateway's implementation routes from the EndpointSlices it watches, on its own schedule: " +
			"look at how it applies endpoint changes.",
		Reaches: func(_ *corev1.Service, f kube.Fronts) bool { return f.Route }}
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

// LoadBalancerService is the name of the Service of type LoadBalancer that p, a path
// through a load balancer, opens in front of t.
func (p Path) LoadBalancerService(t Target) string { return lbService(t, p.Name) }

// lbService names a path's Service of type LoadBalancer: TARGET-PATH, beside the
// target's own Service.
func lbService(t Target, path string) string { return t.Service + "-" + path }

// loadBalancer is the path through a Service of type LoadBalancer with policy (its
// Service: lbService).
func loadBalancer(policy corev1.ServiceExternalTrafficPolicy, name, title, remedy string) Path {
	svcName := func(t Target) string { return lbService(t, name) }
	return Path{Name: name, Title: title, Needs: corev1.ServiceTypeClusterIP, NodeChecked: true, Remedy: remedy,
		Annotations: func(c Config) map[string]string { return c.LBAnnotations },
		Enabled:     func(c Config) bool { return slices.Contains(c.LoadBalancers, policy) },
		Reaches: func(svc *corev1.Service, _ kube.Fronts) bool {
			// The API's default policy is Cluster.
			return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && !TargetsPods(svc) &&
				cmp.Or(svc.Spec.ExternalTrafficPolicy, corev1.ServiceExternalTrafficPolicyCluster) == policy
		},
		Open: func(ctx context.Context, cs kubernetes.Interface, c Config, t Target, svc *corev1.Service) (string, error) {
			return openLoadBalancer(ctx, cs, c, t, svc, svcName(t), policy, c.LBAnnotations)
		},
		Close: func(ctx context.Context, cs kubernetes.Interface, t Target) error {
			return closeLoadBalancer(ctx, cs, t, svcName(t))
		}}
}

// LoadBalancerPods: a load balancer whose targets are the pods themselves (an AWS ALB
// or NLB in IP mode, GCP's container-native load balancing with network endpoint
// groups, the lab's application load balancer): its controller learns of a pod's end
// from the EndpointSlices and deregisters the pod through the cloud's API, seconds to
// minutes later; an application (L7) load balancer meanwhile sends requests over
// server connections it keeps, so that the pod sees no new connection.
var LoadBalancerPods = Path{Name: "lb-pods", Title: "load balancer to pods", Needs: corev1.ServiceTypeClusterIP,
	Remedy: "The load balancer's controller deregisters a pod some time after its endpoint leaves the EndpointSlices " +
		"(the cloud's API, its reconcile queue): gate the pods' readiness on the load balancer (the AWS Load Balancer " +
		"Controller's pod readiness gate) and measure the lag behind it with napctl calibrate.",
	Enabled:     func(c Config) bool { return c.PodLBAnnotations != nil },
	Annotations: func(c Config) map[string]string { return c.PodLBAnnotations },
	Reaches: func(svc *corev1.Service, f kube.Fronts) bool {
		return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && TargetsPods(svc) || f.Ingress && ingressToPods(svc)
	},
	// An application load balancer (the lab's, GCP's for an Ingress) pools; a network
	// load balancer in IP mode (AWS's NLB) passes each client's connection through.
	Pools: func(svc *corev1.Service, f kube.Fronts) bool {
		return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Annotations[LabPodTargets] == LabPodTargetsValue || f.Ingress && ingressToPods(svc)
	},
	Open: func(ctx context.Context, cs kubernetes.Interface, c Config, t Target, svc *corev1.Service) (string, error) {
		return openLoadBalancer(ctx, cs, c, t, svc, lbService(t, "lb-pods"), "", c.PodLBAnnotations)
	},
	Close: func(ctx context.Context, cs kubernetes.Interface, t Target) error {
		return closeLoadBalancer(ctx, cs, t, lbService(t, "lb-pods"))
	}}

// LabPodTargets is the annotation, with its value, by which the lab's load balancer
// (hack/lb) sends to a Service's pods: an application load balancer.
const LabPodTargets, LabPodTargetsValue = "lb.lab.nap.dev/targets", "pods"

// PodTargetAnnotations are the Service annotations, each with its value, by which a
// Service's load balancer sends to the pods' addresses rather than to the nodes.
var PodTargetAnnotations = map[string]string{
	LabPodTargets: LabPodTargetsValue,
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
// endpoint groups (cloud.google.com/neg: {"ingress": true}), or an AWS ALB in IP mode,
// set on the Service (alb.ingress.kubernetes.io/target-type: ip, which the AWS Load
// Balancer Controller reads on the Service before the Ingress; set on the Ingress alone,
// it is not seen here).
func ingressToPods(svc *corev1.Service) bool {
	v := strings.ReplaceAll(svc.Annotations["cloud.google.com/neg"], " ", "")
	return strings.Contains(v, `"ingress":true`) || svc.Annotations["alb.ingress.kubernetes.io/target-type"] == "ip"
}

// openLoadBalancer creates a Service of type LoadBalancer named name beside svc (its
// selector and ports) with policy and annotations, and returns its address's URL once
// it has one.
func openLoadBalancer(ctx context.Context, cs kubernetes.Interface, c Config, t Target, svc *corev1.Service, name string,
	policy corev1.ServiceExternalTrafficPolicy, annotations map[string]string) (string, error) {
	lb := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: svc.Labels, Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: policy, Selector: svc.Spec.Selector}}
	for _, p := range svc.Spec.Ports {
		lb.Spec.Ports = append(lb.Spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, TargetPort: p.TargetPort, AppProtocol: p.AppProtocol})
	}
	if _, err := cs.CoreV1().Services(t.Namespace).Create(ctx, lb, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating the Service %s/%s: %w", t.Namespace, lb.Name, err)
	}
	wait := cmp.Or(c.LBWait, DefaultLBWait)
	deadline := time.Now().Add(wait)
	for {
		got, err := cs.CoreV1().Services(t.Namespace).Get(ctx, lb.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		for _, in := range got.Status.LoadBalancer.Ingress {
			if host := cmp.Or(in.IP, in.Hostname); host != "" {
				return hostURL(host, got.Spec.Ports[0].Port), nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the Service %s/%s of type LoadBalancer has no address after %v: does the cluster provision load balancers (a cloud controller, MetalLB)?", t.Namespace, lb.Name, wait)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// closeLoadBalancer deletes the Service name of openLoadBalancer.
func closeLoadBalancer(ctx context.Context, cs kubernetes.Interface, t Target, name string) error {
	err := cs.CoreV1().Services(t.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// All is every path, in the order reports list them.
func All() []Path {
	return []Path{ClusterIP, NodePort, Ingress, GatewayRoute, LoadBalancerLocal, LoadBalancerCluster, LoadBalancerPods}
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

// Lookup is the path named name (Path.Name).
func Lookup(name string) (Path, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return Path{}, false
}

// Enabled is the paths cfg asks for.
func Enabled(cfg Config) []Path {
	var out []Path
	for _, p := range All() {
		if p.Enabled(cfg) {
			out = append(out, p)
		}
	}
	return out
}

// ServiceType is the Service type that serves every one of paths: the widest any needs.
func ServiceType(paths []Path) corev1.ServiceType {
	rank := map[corev1.ServiceType]int{corev1.ServiceTypeClusterIP: 0, corev1.ServiceTypeNodePort: 1, corev1.ServiceTypeLoadBalancer: 2}
	t := corev1.ServiceTypeClusterIP
	for _, p := range paths {
		if rank[p.Needs] > rank[t] {
			t = p.Needs
		}
	}
	return t
}

func nothing(context.Context, kubernetes.Interface, Target) error { return nil }

// remedyProxy is the ClusterIP's and the NodePort's: kube-proxy's.
const remedyProxy = "kube-proxy applies EndpointSlice changes at most once per minSyncPeriod (1 s by default), " +
	"and a large rule set takes long to sync: look at its sync duration (kubeproxy_sync_proxy_rules_duration_seconds)."

func hostURL(host string, port int32) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == 80 {
		return "http://" + host + "/"
	}
	return fmt.Sprintf("http://%s:%d/", host, port)
}

func firstNodeIP(ctx context.Context, cs kubernetes.Interface) (string, error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing nodes for the NodePort path: %w", err)
	}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				return a.Address, nil
			}
		}
	}
	return "", errors.New("no node has an InternalIP for the NodePort path (--nodeport ADDR names one, - skips it)")
}
