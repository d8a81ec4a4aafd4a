package calibrate

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/traffic"
)

// TestOpeners: every traffic path has an opener, complete, and no opener is of a path
// that does not exist: a path added to traffic.All is one calibrate knows.
func TestOpeners(t *testing.T) {
	for _, p := range traffic.All() {
		o, ok := openers[p.Name]
		if !ok || o.enabled == nil || o.open == nil || o.close == nil || o.needs == "" {
			t.Errorf("path %q: no opener, or an incomplete one", p.Name)
		}
	}
	for name := range openers {
		if _, ok := traffic.Lookup(name); !ok {
			t.Errorf("an opener of no path: %q", name)
		}
	}
}

func TestEnabledAndServiceType(t *testing.T) {
	for _, tc := range []struct {
		cfg   PathConfig
		names string
		typ   corev1.ServiceType
	}{
		{cfg: PathConfig{NodeAddress: "-"}, names: "clusterip", typ: corev1.ServiceTypeClusterIP},
		{cfg: PathConfig{}, names: "clusterip,nodeport", typ: corev1.ServiceTypeNodePort},
		{cfg: PathConfig{NodeAddress: "-", IngressClass: "traefik", IngressURL: "http://10.0.0.1"}, names: "clusterip,ingress", typ: corev1.ServiceTypeClusterIP},
		{cfg: PathConfig{IngressClass: "traefik", IngressURL: "http://10.0.0.1"}, names: "clusterip,nodeport,ingress", typ: corev1.ServiceTypeNodePort},
		{cfg: PathConfig{NodeAddress: "-", PodLBAnnotations: map[string]string{"service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip"}}, names: "clusterip,lb-pods", typ: corev1.ServiceTypeClusterIP},
		{cfg: PathConfig{NodeAddress: "-", PodLBIngressClass: "alb", PodLBAnnotations: map[string]string{"alb.ingress.kubernetes.io/target-type": "ip"}}, names: "clusterip,lb-pods", typ: corev1.ServiceTypeClusterIP},
		{cfg: PathConfig{NodeAddress: "-", DNS: "10.79.0.10:53"}, names: "clusterip,headless-dns", typ: corev1.ServiceTypeClusterIP},
	} {
		var names []string
		paths := Enabled(tc.cfg)
		for _, p := range paths {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, ","); got != tc.names {
			t.Errorf("Enabled(%+v) = %s, want %s", tc.cfg, got, tc.names)
		}
		if got := serviceType(paths); got != tc.typ {
			t.Errorf("serviceType(%s) = %s, want %s", tc.names, got, tc.typ)
		}
	}
	if err := (PathConfig{IngressClass: "traefik"}).Validate(); err == nil {
		t.Error("an ingress class without a URL is accepted")
	}
	for _, dns := range []string{"10.79.0.10", "kube-dns", ":"} {
		if err := (PathConfig{DNS: dns}).Validate(); err == nil || !strings.Contains(err.Error(), "--dns") {
			t.Errorf("--dns %q: %v, want an error naming --dns", dns, err)
		}
	}
}

// TestOpenClose: each path's URL, and what it creates and removes, on a fake clientset.
func TestOpenClose(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "n1"}, {Type: corev1.NodeInternalIP, Address: "10.77.0.1"}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}, Spec: corev1.ServiceSpec{ClusterIP: "10.79.0.20",
		Selector: map[string]string{"app": "app"}, Ports: []corev1.ServicePort{{Port: 80, NodePort: 30123, TargetPort: intstr.FromInt32(8080)}}}}
	cs := fake.NewClientset(node)
	cfg := PathConfig{IngressClass: "traefik", IngressURL: "http://10.79.0.5/", DNS: "10.79.0.10:53"}
	tgt := Target{Namespace: "shop", Service: "app", Prefix: "/shop/"}
	want := map[string]string{"clusterip": "http://10.79.0.20/", "nodeport": "http://10.77.0.1:30123/", "ingress": "http://10.79.0.5/shop/",
		// The pods' own port: a headless Service maps none.
		"headless-dns": "http://app-headless-dns.shop.svc.cluster.local:8080/"}
	for _, p := range Enabled(cfg) {
		url, err := Open(ctx, cs, p, cfg, tgt, svc)
		if err != nil || url != want[p.Name] {
			t.Errorf("%s: Open = %q, %v; want %q", p.Name, url, err, want[p.Name])
		}
	}
	ing, err := cs.NetworkingV1().Ingresses("shop").Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := ing.Spec.Rules[0].HTTP.Paths[0]; *ing.Spec.IngressClassName != "traefik" || r.Path != "/shop/" || r.Backend.Service.Name != "app" || r.Backend.Service.Port.Number != 80 {
		t.Errorf("the Ingress: %+v", ing.Spec)
	}
	headless, err := cs.CoreV1().Services("shop").Get(ctx, "app-headless-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !traffic.HeadlessDNS.Reaches(headless, kube.Fronts{}) || headless.Spec.Selector["app"] != "app" || headless.Spec.Ports[0].TargetPort.IntVal != 8080 {
		t.Errorf("the headless Service: %+v", headless.Spec)
	}
	for _, p := range traffic.All() {
		if err := Close(ctx, cs, p, tgt); err != nil {
			t.Errorf("%s: Close: %v", p.Name, err)
		}
		if err := Close(ctx, cs, p, tgt); err != nil {
			t.Errorf("%s: Close again: %v", p.Name, err)
		}
	}
	if _, err := cs.NetworkingV1().Ingresses("shop").Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Ingress after Close: %v", err)
	}
	if _, err := cs.CoreV1().Services("shop").Get(ctx, "app-headless-dns", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the headless Service after Close: %v", err)
	}
	named := svc.DeepCopy()
	named.Spec.Ports[0].TargetPort = intstr.FromString("http")
	if _, err := Open(ctx, fake.NewClientset(), traffic.HeadlessDNS, cfg, tgt, named); err == nil || !strings.Contains(err.Error(), "targetPort") {
		t.Errorf("headless-dns with a named targetPort: %v", err)
	}
	if _, err := Open(ctx, fake.NewClientset(), traffic.NodePort, PathConfig{}, tgt, svc); err == nil || !strings.Contains(err.Error(), "InternalIP") {
		t.Errorf("NodePort with no node: %v", err)
	}
	if url, _ := Open(ctx, cs, traffic.NodePort, PathConfig{NodeAddress: "fd00::1"}, tgt, svc); url != "http://[fd00::1]:30123/" {
		t.Errorf("NodePort on an IPv6 address: %s", url)
	}
}

// TestLoadBalancer: each load balancer path creates its own Service of type LoadBalancer
// with its externalTrafficPolicy and the annotations, waits for the address the cloud
// writes, and deletes the Service; with no cloud, it says so within LBWait.
func TestLoadBalancer(t *testing.T) {
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop", Labels: map[string]string{"app": "app"}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.79.0.20", Selector: map[string]string{"app": "app"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30123, TargetPort: intstr.FromInt32(8080)}}}}
	tgt := Target{Namespace: "shop", Service: "app"}
	cfg := PathConfig{NodeAddress: "-", LoadBalancers: []corev1.ServiceExternalTrafficPolicy{"Local", "Cluster"},
		LBAnnotations: map[string]string{"lb.example/scheme": "internal"}, LBWait: 5 * time.Second,
		PodLBAnnotations: map[string]string{"lb.example/scheme": "internal", "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip"}}
	cs := fake.NewClientset()
	// The cloud: an address for every Service of type LoadBalancer, a moment after it exists.
	cloud, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for n := 1; cloud.Err() == nil; time.Sleep(20 * time.Millisecond) {
			l, _ := cs.CoreV1().Services("shop").List(cloud, metav1.ListOptions{})
			for _, s := range l.Items {
				if s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) == 0 {
					s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("10.77.1.%d", 10+n)}}
					n++
					cs.CoreV1().Services("shop").UpdateStatus(cloud, &s, metav1.UpdateOptions{})
				}
			}
		}
	}()
	var names []string
	for _, p := range Enabled(cfg) {
		names = append(names, p.Name)
		if p.Name == traffic.ClusterIP.Name {
			continue
		}
		url, err := Open(ctx, cs, p, cfg, tgt, svc)
		if err != nil || !strings.HasPrefix(url, "http://10.77.1.") {
			t.Errorf("%s: Open = %q, %v", p.Name, url, err)
			continue
		}
		lb, err := cs.CoreV1().Services("shop").Get(ctx, "app-"+p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]corev1.ServiceExternalTrafficPolicy{"lb-local": "Local", "lb-cluster": "Cluster"}[p.Name]
		if pods := p.Name == traffic.LoadBalancerPods.Name; pods != traffic.TargetsPods(lb) || !p.Reaches(lb, kube.Fronts{}) {
			t.Errorf("%s: its Service's load balancer targets pods: %v; the path reaches it: %v", p.Name, traffic.TargetsPods(lb), p.Reaches(lb, kube.Fronts{}))
		}
		if lb.Spec.Type != corev1.ServiceTypeLoadBalancer || lb.Spec.ExternalTrafficPolicy != want || lb.Annotations["lb.example/scheme"] != "internal" ||
			lb.Spec.Selector["app"] != "app" || len(lb.Spec.Ports) != 1 || lb.Spec.Ports[0].NodePort != 0 || lb.Spec.Ports[0].TargetPort.IntVal != 8080 {
			t.Errorf("%s: the Service: %+v %v", p.Name, lb.Spec, lb.Annotations)
		}
		if err := Close(ctx, cs, p, tgt); err != nil {
			t.Errorf("%s: Close: %v", p.Name, err)
		}
		if got := LoadBalancerService(p, tgt); got != "app-"+p.Name {
			t.Errorf("%s: LoadBalancerService = %s", p.Name, got)
		}
		if _, err := cs.CoreV1().Services("shop").Get(ctx, "app-"+p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the Service after Close: %v", p.Name, err)
		}
	}
	if got := strings.Join(names, ","); got != "clusterip,lb-local,lb-cluster,lb-pods" {
		t.Errorf("Enabled = %s", got)
	}
	stop()
	cfg.LBWait = 300 * time.Millisecond
	if _, err := Open(ctx, fake.NewClientset(), traffic.LoadBalancerLocal, cfg, tgt, svc); err == nil || !strings.Contains(err.Error(), "no address after 300ms") {
		t.Errorf("no cloud: %v", err)
	}
}

// TestApplicationLoadBalancer: with an Ingress class, the path through a load balancer
// with pod targets is an Ingress of that class naming a ClusterIP Service of its own
// with the annotations (an AWS ALB in IP mode): Open waits for the address the
// controller writes to the Ingress and answers at port 80; the path's rule reads the
// pair as pods reached through a pooling load balancer; Close deletes both.
func TestApplicationLoadBalancer(t *testing.T) {
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop", Labels: map[string]string{"app": "app"}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.79.0.20", Selector: map[string]string{"app": "app"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 8000, TargetPort: intstr.FromInt32(8080)}}}}
	tgt := Target{Namespace: "shop", Service: "app"}
	cfg := PathConfig{NodeAddress: "-", PodLBIngressClass: "alb", LBWait: 5 * time.Second,
		PodLBAnnotations: map[string]string{"alb.ingress.kubernetes.io/target-type": "ip", "alb.ingress.kubernetes.io/healthcheck-interval-seconds": "5"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset()
	cloud, stop := context.WithCancel(ctx)
	defer stop()
	go func() { // the load balancer controller: an address for every Ingress of class alb
		for ; cloud.Err() == nil; time.Sleep(20 * time.Millisecond) {
			l, _ := cs.NetworkingV1().Ingresses("shop").List(cloud, metav1.ListOptions{})
			for _, ing := range l.Items {
				if ing.Spec.IngressClassName != nil && *ing.Spec.IngressClassName == "alb" && len(ing.Status.LoadBalancer.Ingress) == 0 {
					ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "k8s-shop-app.elb.example"}}
					cs.NetworkingV1().Ingresses("shop").UpdateStatus(cloud, &ing, metav1.UpdateOptions{})
				}
			}
		}
	}()
	url, err := Open(ctx, cs, traffic.LoadBalancerPods, cfg, tgt, svc)
	if err != nil || url != "http://k8s-shop-app.elb.example/" {
		t.Fatalf("Open = %q, %v; want the Ingress's address at port 80", url, err)
	}
	own, err := cs.CoreV1().Services("shop").Get(ctx, "app-lb-pods", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing, err := cs.NetworkingV1().Ingresses("shop").Get(ctx, "app-lb-pods", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if own.Spec.Type != corev1.ServiceTypeClusterIP || own.Annotations["alb.ingress.kubernetes.io/target-type"] != "ip" || own.Spec.Selector["app"] != "app" ||
		len(own.Spec.Ports) != 1 || own.Spec.Ports[0].Port != 8000 {
		t.Errorf("the path's Service: %+v %v", own.Spec, own.Annotations)
	}
	if b := ing.Spec.DefaultBackend; b == nil || b.Service.Name != "app-lb-pods" || b.Service.Port.Number != 8000 ||
		ing.Annotations["alb.ingress.kubernetes.io/healthcheck-interval-seconds"] != "5" {
		t.Errorf("the Ingress: %+v %v", ing.Spec, ing.Annotations)
	}
	fe := kube.Frontends{}
	fe.AddIngress(ing, nil)
	fronts := fe.Of(own.Name)
	if names := traffic.Reaching(own, fronts); !slices.ContainsFunc(names, func(p traffic.Path) bool { return p.Name == traffic.LoadBalancerPods.Name }) ||
		!traffic.LoadBalancerPods.Pools(own, fronts) {
		t.Errorf("the path's Service and Ingress are reached by %v; want lb-pods, pooled", names)
	}
	if err := Close(ctx, cs, traffic.LoadBalancerPods, tgt); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.NetworkingV1().Ingresses("shop").Get(ctx, "app-lb-pods", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Ingress after Close: %v", err)
	}
	if _, err := cs.CoreV1().Services("shop").Get(ctx, "app-lb-pods", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Service after Close: %v", err)
	}
	if err := (PathConfig{PodLBIngressClass: "alb"}).Validate(); err == nil || !strings.Contains(err.Error(), "--lb-pods-annotation") {
		t.Errorf("a class without annotations: %v", err)
	}
}

func TestParseLoadBalancers(t *testing.T) {
	for in, want := range map[string]string{"": "", "local": "Local", "Cluster": "Cluster", "local, cluster": "Local,Cluster", "nlb": "error"} {
		ps, err := ParseLoadBalancers(in)
		got := fmt.Sprint(ps)
		if err != nil {
			got = "error"
		} else {
			got = strings.Trim(strings.ReplaceAll(got, " ", ","), "[]")
		}
		if got != want {
			t.Errorf("ParseLoadBalancers(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestGatewayRoute: the gateway-route path attaches an HTTPRoute to the Gateway it is
// given, routing the target's prefix to its Service, on a real API server with the
// Gateway API's own CRDs (the version the lab's Traefik implements); Close removes it,
// and closing twice, or where no Gateway API is installed, is no error.
func TestGatewayRoute(t *testing.T) {
	ctx := context.Background()
	cfg := kubeenv.APIServer(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	p := PathConfig{NodeAddress: "-", Gateway: "nap-ingress/nap", GatewayURL: "http://10.79.0.5"}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if names := Enabled(p); len(names) != 2 || names[1].Name != traffic.GatewayRoute.Name {
		t.Fatalf("Enabled = %v", names)
	}
	tgt := Target{Namespace: "default", Service: "app", Prefix: "/default/"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}}}
	if err := Close(ctx, cs, traffic.GatewayRoute, tgt); err != nil {
		t.Errorf("Close with no Gateway API: %v", err)
	}
	gw := kubeenv.ModuleDir(t, "sigs.k8s.io/gateway-api@"+kubeenv.HackVersion(t, "gateway-api-version"))
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join(gw, "config/crd/standard/gateway.networking.k8s.io_httproutes.yaml")}}); err != nil {
		t.Fatal(err)
	}
	url, err := Open(ctx, cs, traffic.GatewayRoute, p, tgt, svc)
	if err != nil || url != "http://10.79.0.5/default/" {
		t.Fatalf("Open = %q, %v", url, err)
	}
	dc := dynamic.NewForConfigOrDie(cfg)
	res := schema.GroupVersionResource{Group: kube.GatewayGroup, Version: "v1", Resource: "httproutes"}
	route, err := dc.Resource(res).Namespace("default").Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fe := kube.Frontends{}
	d, _ := kube.DoorOf(kube.GatewayGroup, "HTTPRoute")
	fe.AddDoor(d, route.Object)
	parent, _, _ := unstructured.NestedSlice(route.Object, "spec", "parentRefs")
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	if !fe.Of("app").Route || fmt.Sprint(parent) != "[map[group:gateway.networking.k8s.io kind:Gateway name:nap namespace:nap-ingress]]" ||
		!strings.Contains(fmt.Sprint(rules), "value:/default/") || !strings.Contains(fmt.Sprint(rules), "port:8080") {
		t.Errorf("the HTTPRoute: %v %v", parent, rules)
	}
	for range 2 {
		if err := Close(ctx, cs, traffic.GatewayRoute, tgt); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	if _, err := dc.Resource(res).Namespace("default").Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the HTTPRoute after Close: %v", err)
	}
	for _, bad := range []PathConfig{{Gateway: "nap", GatewayURL: "http://x"}, {Gateway: "nap-ingress/nap"}, {GatewayURL: "http://x"}} {
		if bad.Validate() == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
}
