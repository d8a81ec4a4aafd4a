package controller

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/kube"
)

// TestSlimIngress: the cache keeps of an Ingress what kube.Frontends reads, the same
// front doors as the whole object gives, and nothing else.
func TestSlimIngress(t *testing.T) {
	pathType := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ResourceVersion: "7",
		Annotations: map[string]string{kube.ALBTargetType: "ip", "alb.ingress.kubernetes.io/scheme": "internal", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
		Labels:      map[string]string{"app": "web"}},
		Spec: networkingv1.IngressSpec{IngressClassName: new(string),
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}},
			Rules: []networkingv1.IngressRule{{Host: "shop.example", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/api", PathType: &pathType, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "api", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	o, err := slimIngress(ing)
	if err != nil {
		t.Fatal(err)
	}
	slim := o.(*networkingv1.Ingress)
	whole, kept := kube.Frontends{}, kube.Frontends{}
	whole.AddIngress(ing)
	kept.AddIngress(slim)
	for _, name := range []string{"web", "api"} {
		if whole.Of(name) != kept.Of(name) || kept.Of(name).IngressTargetType != "ip" {
			t.Errorf("%s: the slim Ingress gives %+v, the whole %+v", name, kept.Of(name), whole.Of(name))
		}
	}
	if len(slim.Annotations) != 1 || slim.Labels != nil || slim.Spec.IngressClassName != nil || slim.Spec.Rules[0].Host != "" {
		t.Errorf("the slim Ingress keeps more than it reads: %+v", slim)
	}
}
