package calibrate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/probe"
	"github.com/nap-k8s/nap/traffic"
)

// PathConfig is what reaching the paths takes in one cluster.
type PathConfig struct {
	// NodeAddress is the node address of the NodePort path: "" the first node's
	// InternalIP, "-" no NodePort path.
	NodeAddress string
	// IngressClass is the class of the Ingress the ingress path creates; IngressURL is
	// where that controller answers (http://ADDR). Both, or neither and no ingress path.
	IngressClass, IngressURL string
	// Gateway is the Gateway (NAMESPACE/NAME) the gateway-route path attaches an
	// HTTPRoute to; GatewayURL is where it answers (http://ADDR). Both, or neither and no
	// gateway-route path.
	Gateway, GatewayURL string
	// LoadBalancers are the externalTrafficPolicies of the load balancer paths: each is a
	// Service of type LoadBalancer of its own, which the cloud (or the lab's load
	// balancer) gives an address.
	LoadBalancers []corev1.ServiceExternalTrafficPolicy
	// LBAnnotations go on those Services: the cloud's load balancer settings (scheme,
	// health check timings).
	LBAnnotations map[string]string
	// PodLBAnnotations, when set, enable the path through a load balancer whose
	// targets are the pods (traffic.LoadBalancerPods): the annotations of the path's own
	// Service that make the cloud's load balancer send to pod addresses (and its
	// settings).
	PodLBAnnotations map[string]string
	// PodLBIngressClass, when set, makes that load balancer an application load
	// balancer for an Ingress of this class (an AWS ALB: alb) that names the path's own
	// Service, of type ClusterIP, both with PodLBAnnotations (the AWS Load Balancer
	// Controller reads a load balancer's settings on the Ingress, a target group's on
	// either, the Service's first); when empty, the path's Service is of type
	// LoadBalancer (an AWS NLB in IP mode).
	PodLBIngressClass string
	// LBWait bounds the wait for a load balancer's address and its first answers;
	// default DefaultLBWait.
	LBWait time.Duration
	// DNS, when set, enables the path through a headless Service's name
	// (traffic.HeadlessDNS): the cluster DNS (ADDR:PORT) that calibrate asks for it at
	// each new connection; ClusterDomain is the cluster's DNS domain (default
	// DefaultClusterDomain).
	DNS, ClusterDomain string
}

// DefaultClusterDomain is the cluster's DNS domain unless told.
const DefaultClusterDomain = "cluster.local"

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
func (c PathConfig) Validate() error {
	if (c.IngressClass == "") != (c.IngressURL == "") {
		return errors.New("--ingress-class and --ingress-url go together")
	}
	if (c.Gateway == "") != (c.GatewayURL == "") {
		return errors.New("--gateway and --gateway-url go together")
	}
	if ns, name, ok := strings.Cut(c.Gateway, "/"); c.Gateway != "" && (!ok || ns == "" || name == "") {
		return fmt.Errorf("--gateway %q: want NAMESPACE/NAME", c.Gateway)
	}
	if c.DNS != "" {
		if err := probe.CheckDNS(c.DNS); err != nil {
			return fmt.Errorf("--%w", err)
		}
	}
	if c.PodLBIngressClass != "" && c.PodLBAnnotations == nil {
		return errors.New("--lb-pods-ingress-class needs --lb-pods-annotation: the annotations that make its load balancer send to the pods (alb.ingress.kubernetes.io/target-type=ip)")
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

// opener is how calibrate measures one traffic path: what it needs of the Service,
// what it creates beside it and the URL that reaches the pods through it, and how to
// remove what it made.
type opener struct {
	// needs is the Service type the path needs (ClusterIP, NodePort).
	needs corev1.ServiceType
	// enabled tells whether cfg asks for the path.
	enabled func(cfg PathConfig) bool
	// open creates what the path needs beside the Service (nothing, an Ingress) and
	// returns the URL that reaches the pods through it.
	open func(ctx context.Context, cs kubernetes.Interface, cfg PathConfig, t Target, svc *corev1.Service) (string, error)
	// close deletes what open created; nothing there is no error.
	close func(ctx context.Context, cs kubernetes.Interface, t Target) error
	// annotations, for a path through a load balancer the cloud provisions (in
	// minutes), are the annotations cfg gives the path's own Service: the load
	// balancer's settings, on which its tail depends. Nil for the other paths.
	annotations func(cfg PathConfig) map[string]string
}

// openers are the traffic paths' openers, by traffic.Path.Name: one for each of
// traffic.All (TestOpeners).
var openers = map[string]opener{
	traffic.ClusterIP.Name: {needs: corev1.ServiceTypeClusterIP,
		enabled: func(PathConfig) bool { return true },
		open: func(_ context.Context, _ kubernetes.Interface, _ PathConfig, _ Target, svc *corev1.Service) (string, error) {
			if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
				return "", fmt.Errorf("Service %s/%s has no ClusterIP", svc.Namespace, svc.Name)
			}
			return hostURL(svc.Spec.ClusterIP, svc.Spec.Ports[0].Port), nil
		},
		close: nothing},
	traffic.NodePort.Name: {needs: corev1.ServiceTypeNodePort,
		enabled: func(c PathConfig) bool { return c.NodeAddress != "-" },
		open: func(ctx context.Context, cs kubernetes.Interface, c PathConfig, _ Target, svc *corev1.Service) (string, error) {
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
		close: nothing},
	// A headless Service beside the Service, the same pods, reached by its name at the
	// cluster DNS (PathConfig.DNS), resolved at each new connection, at the pods' own
	// port (a headless Service maps no port).
	traffic.HeadlessDNS.Name: {needs: corev1.ServiceTypeClusterIP,
		enabled: func(c PathConfig) bool { return c.DNS != "" },
		open: func(ctx context.Context, cs kubernetes.Interface, c PathConfig, t Target, svc *corev1.Service) (string, error) {
			name := lbService(t, traffic.HeadlessDNS.Name)
			h := besideService(svc, name, corev1.ServiceTypeClusterIP, nil)
			h.Spec.ClusterIP = corev1.ClusterIPNone
			port := svc.Spec.Ports[0].TargetPort
			if port.Type != intstr.Int || port.IntVal == 0 {
				return "", fmt.Errorf("Service %s/%s: the headless-dns path needs its first port's targetPort as a number", svc.Namespace, svc.Name)
			}
			if _, err := cs.CoreV1().Services(t.Namespace).Create(ctx, h, metav1.CreateOptions{}); err != nil {
				return "", fmt.Errorf("creating the headless Service %s/%s: %w", t.Namespace, name, err)
			}
			return hostURL(name+"."+t.Namespace+".svc."+cmp.Or(c.ClusterDomain, DefaultClusterDomain), port.IntVal), nil
		},
		close: func(ctx context.Context, cs kubernetes.Interface, t Target) error {
			return deleteService(ctx, cs, t, lbService(t, traffic.HeadlessDNS.Name))
		}},
	// An Ingress of the configured class routing Target.Prefix to the Service.
	traffic.Ingress.Name: {needs: corev1.ServiceTypeClusterIP,
		enabled: func(c PathConfig) bool { return c.IngressClass != "" },
		open: func(ctx context.Context, cs kubernetes.Interface, c PathConfig, t Target, svc *corev1.Service) (string, error) {
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
		close: func(ctx context.Context, cs kubernetes.Interface, t Target) error {
			err := cs.NetworkingV1().Ingresses(t.Namespace).Delete(ctx, t.Service, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}},
	// An HTTPRoute attached to the configured Gateway, routing Target.Prefix to the
	// Service.
	traffic.GatewayRoute.Name: {needs: corev1.ServiceTypeClusterIP,
		enabled: func(c PathConfig) bool { return c.Gateway != "" },
		open: func(ctx context.Context, cs kubernetes.Interface, c PathConfig, t Target, svc *corev1.Service) (string, error) {
			gwNS, gwName, _ := strings.Cut(c.Gateway, "/")
			route := map[string]any{"apiVersion": kube.GatewayGroup + "/v1", "kind": "HTTPRoute",
				"metadata": map[string]any{"name": t.Service, "namespace": t.Namespace},
				"spec": map[string]any{
					"parentRefs": []any{map[string]any{"name": gwName, "namespace": gwNS}},
					"rules": []any{map[string]any{
						"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": t.Prefix}}},
						"backendRefs": []any{map[string]any{"name": t.Service, "port": svc.Spec.Ports[0].Port}}}}}}
			r := routes(cs, t.Namespace, "")
			if !r.ok() {
				return "", errors.New("the API client cannot create an HTTPRoute")
			}
			if err := r.Post().Body(mustJSON(route)).Do(ctx).Error(); err != nil {
				return "", fmt.Errorf("creating the HTTPRoute %s/%s: %w", t.Namespace, t.Service, err)
			}
			return strings.TrimRight(c.GatewayURL, "/") + t.Prefix, nil
		},
		close: func(ctx context.Context, cs kubernetes.Interface, t Target) error {
			r := routes(cs, t.Namespace, t.Service)
			if !r.ok() { // a client that cannot have made one
				return nil
			}
			err := r.Delete().Do(ctx).Error()
			if apierrors.IsNotFound(err) { // none, or no Gateway API in the cluster
				return nil
			}
			return err
		}},
	// Nor a mesh.
	traffic.MeshRoute.Name: {needs: corev1.ServiceTypeClusterIP,
		enabled: func(PathConfig) bool { return false },
		open: func(context.Context, kubernetes.Interface, PathConfig, Target, *corev1.Service) (string, error) {
			return "", errors.New("napctl calibrate does not measure service mesh routes")
		},
		close: nothing},
	traffic.LoadBalancerLocal.Name:   loadBalancer(traffic.LoadBalancerLocal.Name, corev1.ServiceExternalTrafficPolicyLocal),
	traffic.LoadBalancerCluster.Name: loadBalancer(traffic.LoadBalancerCluster.Name, corev1.ServiceExternalTrafficPolicyCluster),
	traffic.LoadBalancerPods.Name: {needs: corev1.ServiceTypeClusterIP,
		enabled:     func(c PathConfig) bool { return c.PodLBAnnotations != nil },
		annotations: func(c PathConfig) map[string]string { return c.PodLBAnnotations },
		open: func(ctx context.Context, cs kubernetes.Interface, c PathConfig, t Target, svc *corev1.Service) (string, error) {
			name := lbService(t, traffic.LoadBalancerPods.Name)
			if c.PodLBIngressClass != "" {
				return openApplicationLB(ctx, cs, c, t, svc, name)
			}
			return openLoadBalancer(ctx, cs, c, t, svc, name, "", c.PodLBAnnotations)
		},
		close: func(ctx context.Context, cs kubernetes.Interface, t Target) error {
			name := lbService(t, traffic.LoadBalancerPods.Name)
			err := cs.NetworkingV1().Ingresses(t.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				err = nil
			}
			return errors.Join(err, deleteService(ctx, cs, t, name))
		}},
}

// loadBalancer is the opener of the path named name through a Service of type
// LoadBalancer with policy (its Service: lbService).
func loadBalancer(name string, policy corev1.ServiceExternalTrafficPolicy) opener {
	return opener{needs: corev1.ServiceTypeClusterIP,
		annotations: func(c PathConfig) map[string]string { return c.LBAnnotations },
		enabled:     func(c PathConfig) bool { return slices.Contains(c.LoadBalancers, policy) },
		open: func(ctx context.Context, cs kubernetes.Interface, c PathConfig, t Target, svc *corev1.Service) (string, error) {
			return openLoadBalancer(ctx, cs, c, t, svc, lbService(t, name), policy, c.LBAnnotations)
		},
		close: func(ctx context.Context, cs kubernetes.Interface, t Target) error {
			return deleteService(ctx, cs, t, lbService(t, name))
		}}
}

// Enabled is the paths cfg asks for, in traffic.All's order.
func Enabled(cfg PathConfig) []traffic.Path {
	var out []traffic.Path
	for _, p := range traffic.All() {
		if o, ok := openers[p.Name]; ok && o.enabled(cfg) {
			out = append(out, p)
		}
	}
	return out
}

// Open creates what path p needs beside svc, the Service of t (nothing, an Ingress, a
// Service of type LoadBalancer), and returns the URL that reaches the pods through it.
func Open(ctx context.Context, cs kubernetes.Interface, p traffic.Path, cfg PathConfig, t Target, svc *corev1.Service) (string, error) {
	o, ok := openers[p.Name]
	if !ok {
		return "", fmt.Errorf("napctl calibrate cannot open the %s path", p.Name)
	}
	return o.open(ctx, cs, cfg, t, svc)
}

// Close deletes what Open created for p; nothing there is no error.
func Close(ctx context.Context, cs kubernetes.Interface, p traffic.Path, t Target) error {
	o, ok := openers[p.Name]
	if !ok {
		return nil
	}
	return o.close(ctx, cs, t)
}

// Parameters are the annotations that cfg gives path p's own Service, for a path through
// a load balancer: the settings its tail depends on, stored with its measurement
// (traffic.PathTail.Parameters). Nil for the other paths.
func Parameters(p traffic.Path, cfg PathConfig) map[string]string {
	if o := openers[p.Name]; o.annotations != nil {
		return o.annotations(cfg)
	}
	return nil
}

// provisioned tells whether p is a path through a load balancer the cloud provisions:
// its address and first answers take up to PathConfig.LBWait.
func provisioned(name string) bool { return openers[name].annotations != nil }

// LoadBalancerService is the name of the Service of type LoadBalancer that Open makes
// for p, a path through a load balancer, in front of t.
func LoadBalancerService(p traffic.Path, t Target) string { return lbService(t, p.Name) }

// lbService names a path's own Service (of type LoadBalancer, or headless):
// TARGET-PATH, beside the target's own Service.
func lbService(t Target, path string) string { return t.Service + "-" + path }

// serviceType is the Service type that serves every one of paths: the widest any needs.
func serviceType(paths []traffic.Path) corev1.ServiceType {
	rank := map[corev1.ServiceType]int{corev1.ServiceTypeClusterIP: 0, corev1.ServiceTypeNodePort: 1, corev1.ServiceTypeLoadBalancer: 2}
	t := corev1.ServiceTypeClusterIP
	for _, p := range paths {
		if n := openers[p.Name].needs; rank[n] > rank[t] {
			t = n
		}
	}
	return t
}

// openLoadBalancer creates a Service of type LoadBalancer named name beside svc (its
// selector and ports) with policy and annotations, and returns its address's URL once
// it has one.
func openLoadBalancer(ctx context.Context, cs kubernetes.Interface, c PathConfig, t Target, svc *corev1.Service, name string,
	policy corev1.ServiceExternalTrafficPolicy, annotations map[string]string) (string, error) {
	lb := besideService(svc, name, corev1.ServiceTypeLoadBalancer, annotations)
	lb.Spec.ExternalTrafficPolicy = policy
	if _, err := cs.CoreV1().Services(t.Namespace).Create(ctx, lb, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating the Service %s/%s: %w", t.Namespace, lb.Name, err)
	}
	what := fmt.Sprintf("the Service %s/%s of type LoadBalancer", t.Namespace, lb.Name)
	return addressed(ctx, c, what, "a cloud controller, MetalLB", func() (string, error) {
		got, err := cs.CoreV1().Services(t.Namespace).Get(ctx, lb.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		for _, in := range got.Status.LoadBalancer.Ingress {
			if host := cmp.Or(in.IP, in.Hostname); host != "" {
				return hostURL(host, got.Spec.Ports[0].Port), nil
			}
		}
		return "", nil
	})
}

// openApplicationLB creates a Service named name beside svc (its selector and ports,
// type ClusterIP) and an Ingress of the same name and c.PodLBIngressClass whose backend
// it is, both with the pod load balancer's annotations, and returns the Ingress's
// address's URL (port 80, where an application load balancer listens) once it has one.
func openApplicationLB(ctx context.Context, cs kubernetes.Interface, c PathConfig, t Target, svc *corev1.Service, name string) (string, error) {
	own := besideService(svc, name, corev1.ServiceTypeClusterIP, c.PodLBAnnotations)
	if _, err := cs.CoreV1().Services(t.Namespace).Create(ctx, own, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating the Service %s/%s: %w", t.Namespace, own.Name, err)
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: svc.Labels, Annotations: c.PodLBAnnotations}, Spec: networkingv1.IngressSpec{
		IngressClassName: ptr.To(c.PodLBIngressClass),
		DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name,
			Port: networkingv1.ServiceBackendPort{Number: svc.Spec.Ports[0].Port}}}}}
	if _, err := cs.NetworkingV1().Ingresses(t.Namespace).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating the Ingress %s/%s: %w", t.Namespace, name, err)
	}
	what := fmt.Sprintf("the Ingress %s/%s of class %s", t.Namespace, name, c.PodLBIngressClass)
	return addressed(ctx, c, what, "its load balancer controller", func() (string, error) {
		got, err := cs.NetworkingV1().Ingresses(t.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		for _, in := range got.Status.LoadBalancer.Ingress {
			if host := cmp.Or(in.IP, in.Hostname); host != "" {
				return hostURL(host, 80), nil
			}
		}
		return "", nil
	})
}

// besideService is a Service named name of type typ with annotations, svc's labels,
// selector and ports.
func besideService(svc *corev1.Service, name string, typ corev1.ServiceType, annotations map[string]string) *corev1.Service {
	out := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: svc.Labels, Annotations: annotations},
		Spec: corev1.ServiceSpec{Type: typ, Selector: svc.Spec.Selector}}
	for _, p := range svc.Spec.Ports {
		out.Spec.Ports = append(out.Spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, TargetPort: p.TargetPort, AppProtocol: p.AppProtocol})
	}
	return out
}

// addressed polls url every 500 ms until it gives the URL of what's address, for at
// most c.LBWait; who is what provisions it, named in the error when it does not.
func addressed(ctx context.Context, c PathConfig, what, who string, url func() (string, error)) (string, error) {
	limit := cmp.Or(c.LBWait, DefaultLBWait)
	deadline := time.Now().Add(limit)
	for {
		u, err := url()
		if err != nil || u != "" {
			return u, err
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%s has no address after %v: does the cluster provision load balancers (%s)?", what, limit, who)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// deleteService deletes the Service name of a path of its own (openLoadBalancer's, the
// headless one); none there is no error.
func deleteService(ctx context.Context, cs kubernetes.Interface, t Target, name string) error {
	err := cs.CoreV1().Services(t.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func nothing(context.Context, kubernetes.Interface, Target) error { return nil }

// routes is a request builder for the HTTPRoutes of namespace (name: one of them), by
// the API server's own path: the Gateway API is not in client-go's typed clients.
func routes(cs kubernetes.Interface, namespace, name string) routeRequests {
	return routeRequests{rc: cs.Discovery().RESTClient(), path: "/apis/" + kube.GatewayGroup + "/v1/namespaces/" + namespace + "/httproutes/" + name}
}

type routeRequests struct {
	rc   rest.Interface
	path string
}

// ok tells whether the client can make requests by path (a fake one cannot).
func (r routeRequests) ok() bool { return r.rc != nil && !reflect.ValueOf(r.rc).IsNil() }

func (r routeRequests) Post() *rest.Request {
	return r.rc.Post().AbsPath(strings.TrimSuffix(r.path, "/")).SetHeader("Content-Type", "application/json")
}
func (r routeRequests) Delete() *rest.Request { return r.rc.Delete().AbsPath(r.path) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

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
