package kube

import (
	"maps"
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
	f.AddIngress(ing, nil)
	httpRoute, _ := DoorOf(GatewayGroup, "HTTPRoute")
	f.AddDoor(httpRoute, route)
	// An ALB's target type, set on an Ingress: ip where any Ingress naming the Service says so.
	alb := func(tt string, backend string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ALBTargetType: tt}}, Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: backend}}}}
	}
	f.AddIngress(alb("ip", "site"), nil)
	f.AddIngress(alb("instance", "site"), nil)
	f.AddIngress(alb("instance", "cart"), nil)
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

// An IngressClassParams' targetType decides for every Ingress of its class, above their
// annotations; the classes whose parameters are not IngressClassParams decide nothing.
func TestClassTargets(t *testing.T) {
	group, other := IngressClassParamsGroup, "example.com"
	class := func(name, group, kind, params string) networkingv1.IngressClass {
		c := networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if kind != "" {
			c.Spec.Parameters = &networkingv1.IngressClassParametersReference{APIGroup: &group, Kind: kind, Name: params}
		}
		return c
	}
	params := func(name, tt string) map[string]any {
		p := map[string]any{"apiVersion": IngressClassParamsGroup + "/v1beta1", "kind": IngressClassParamsKind, "metadata": map[string]any{"name": name}, "spec": map[string]any{}}
		if tt != "" {
			p["spec"].(map[string]any)["targetType"] = tt
		}
		return p
	}
	got := ClassTargetsOf([]networkingv1.IngressClass{class("alb-ip", group, IngressClassParamsKind, "ip-params"), class("alb", group, IngressClassParamsKind, "plain"),
		class("alb-instance", group, IngressClassParamsKind, "inst"), class("other", other, IngressClassParamsKind, "ip-params"), class("nginx", "", "", "")},
		[]map[string]any{params("ip-params", "ip"), params("plain", ""), params("inst", "instance")})
	if want := (ClassTargets{"alb-ip": "ip", "alb-instance": "instance"}); !maps.Equal(got, want) {
		t.Errorf("ClassTargetsOf: %v, want %v", got, want)
	}
	ing := func(class, annotation, backend string, byAnnotation bool) *networkingv1.Ingress {
		i := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}, Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: backend}}}}
		if annotation != "" {
			i.Annotations[ALBTargetType] = annotation
		}
		if byAnnotation {
			i.Annotations[IngressClassAnnotation] = class
		} else if class != "" {
			i.Spec.IngressClassName = &class
		}
		return i
	}
	f := Frontends{}
	f.AddIngress(ing("alb-ip", "instance", "web", false), got)     // the class wins
	f.AddIngress(ing("alb-instance", "ip", "cart", true), got)     // the class wins, named by the old annotation
	f.AddIngress(ing("alb-instance", "", "mixed", false), got)     // one decided by its class...
	f.AddIngress(ing("alb", "ip", "mixed", false), got)            // ...one by its annotation
	f.AddIngress(ing("alb-instance", "", "classonly", false), got) // every one by its class
	f.AddIngress(ing("alb-instance", "", "classonly", false), got)
	for name, want := range map[string]Fronts{"web": {Ingress: true, ClassTargetType: "ip", ClassOnly: true},
		"cart":      {Ingress: true, ClassTargetType: "instance", ClassOnly: true},
		"mixed":     {Ingress: true, ClassTargetType: "instance", IngressTargetType: "ip"},
		"classonly": {Ingress: true, ClassTargetType: "instance", ClassOnly: true}} {
		if got := f.Of(name); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
}
