package kube

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFrontends: the Services an Ingress and a Gateway API route name, as the API
// serves a route (its backendRefs: kind Service by default, of the core group, in the
// route's own namespace unless it names another).
func TestFrontends(t *testing.T) {
	route := map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "r", "namespace": "shop"},
		"spec": map[string]any{"rules": []any{
			map[string]any{"backendRefs": []any{
				map[string]any{"name": "web", "port": int64(80)},
				map[string]any{"kind": "Service", "name": "api", "namespace": "shop"},
				map[string]any{"name": "other", "namespace": "elsewhere"},
				map[string]any{"group": "example.com", "kind": "Bucket", "name": "static"},
			}},
			map[string]any{"matches": []any{}}, // a rule with no backend
		}},
	}
	if got := gatewayBackends(route); strings.Join(got, " ") != "web api" {
		t.Errorf("gatewayBackends: %q, want web api", got)
	}
	ing := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{
		DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}},
		Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "site"}}}}}}}}}}
	f := Frontends{}
	f.AddIngress(ing)
	httpRoute, _ := DoorOf(GatewayGroup, "HTTPRoute")
	f.AddDoor(httpRoute, route)
	// An ALB's target type, set on an Ingress: ip where any Ingress naming the Service says so.
	alb := func(tt string, backend string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ALBTargetType: tt}}, Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: backend}}}}
	}
	f.AddIngress(alb("ip", "site"))
	f.AddIngress(alb("instance", "site"))
	f.AddIngress(alb("instance", "cart"))
	for name, want := range map[string]Fronts{"web": {Ingress: true, Route: true, RouteHTTP: true}, "site": {Ingress: true, IngressTargetType: "ip"},
		"cart": {Ingress: true, IngressTargetType: "instance"}, "api": {Route: true, RouteHTTP: true}, "other": {}} {
		if got := f.Of(name); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if (Frontends)(nil).Of("web") != (Fronts{}) {
		t.Error("no front doors: something named")
	}
}
