package traffic

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Config is what reaching the paths takes in one cluster.
type Config struct {
	// NodeAddress is the node address of the NodePort path: "" the first node's
	// InternalIP, "-" no NodePort path.
	NodeAddress string
	// IngressClass is the class of the Ingress the ingress path creates; IngressURL is
	// where that controller answers (http://ADDR). Both, or neither and no ingress path.
	IngressClass, IngressURL string
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
		Close: nothing}
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
		Close: nothing}
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
		}}
)

// All is every path, in the order reports list them.
func All() []Path { return []Path{ClusterIP, NodePort, Ingress} }

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
