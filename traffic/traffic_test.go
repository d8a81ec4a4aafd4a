package traffic

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestEnabledAndServiceType(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		names string
		typ   corev1.ServiceType
	}{
		{cfg: Config{NodeAddress: "-"}, names: "clusterip", typ: corev1.ServiceTypeClusterIP},
		{cfg: Config{}, names: "clusterip,nodeport", typ: corev1.ServiceTypeNodePort},
		{cfg: Config{NodeAddress: "-", IngressClass: "traefik", IngressURL: "http://10.0.0.1"}, names: "clusterip,ingress", typ: corev1.ServiceTypeClusterIP},
		{cfg: Config{IngressClass: "traefik", IngressURL: "http://10.0.0.1"}, names: "clusterip,nodeport,ingress", typ: corev1.ServiceTypeNodePort},
	} {
		var names []string
		paths := Enabled(tc.cfg)
		for _, p := range paths {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, ","); got != tc.names {
			t.Errorf("Enabled(%+v) = %s, want %s", tc.cfg, got, tc.names)
		}
		if got := ServiceType(paths); got != tc.typ {
			t.Errorf("ServiceType(%s) = %s, want %s", tc.names, got, tc.typ)
		}
	}
	if err := (Config{IngressClass: "traefik"}).Validate(); err == nil {
		t.Error("an ingress class without a URL is accepted")
	}
}

// TestOpenClose: each path's URL, and what it creates and removes, on a fake clientset.
func TestOpenClose(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "n1"}, {Type: corev1.NodeInternalIP, Address: "10.77.0.1"}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}, Spec: corev1.ServiceSpec{ClusterIP: "10.79.0.20",
		Ports: []corev1.ServicePort{{Port: 80, NodePort: 30123}}}}
	cs := fake.NewClientset(node)
	cfg := Config{IngressClass: "traefik", IngressURL: "http://10.79.0.5/"}
	tgt := Target{Namespace: "shop", Service: "app", Prefix: "/shop/"}
	want := map[string]string{"clusterip": "http://10.79.0.20/", "nodeport": "http://10.77.0.1:30123/", "ingress": "http://10.79.0.5/shop/"}
	for _, p := range Enabled(cfg) {
		url, err := p.Open(ctx, cs, cfg, tgt, svc)
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
	for _, p := range All() {
		if err := p.Close(ctx, cs, tgt); err != nil {
			t.Errorf("%s: Close: %v", p.Name, err)
		}
		if err := p.Close(ctx, cs, tgt); err != nil {
			t.Errorf("%s: Close again: %v", p.Name, err)
		}
	}
	if _, err := cs.NetworkingV1().Ingresses("shop").Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Ingress after Close: %v", err)
	}
	if _, err := NodePort.Open(ctx, fake.NewClientset(), Config{}, tgt, svc); err == nil || !strings.Contains(err.Error(), "InternalIP") {
		t.Errorf("NodePort with no node: %v", err)
	}
	if url, _ := NodePort.Open(ctx, cs, Config{NodeAddress: "fd00::1"}, tgt, svc); url != "http://[fd00::1]:30123/" {
		t.Errorf("NodePort on an IPv6 address: %s", url)
	}
}
