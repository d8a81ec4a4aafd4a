package controller

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/kube"
)

// TestSlimIngress: the cache keeps of an Ingress what kube.Frontends reads, the same
// front doors as the whole object gives, and nothing else.
func TestSlimIngress(t *testing.T) {
	pathType := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ResourceVersion: "7",
		Annotations: map[string]string{kube.ALBTargetType: "ip", "alb.ingress.kubernetes.io/scheme": "internal", "kubectl.kubernetes.io/last-applied-configuration": "{...}"},
		Labels:      map[string]string{"app": "web"}},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("alb-ip"),
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
	classes := kube.ClassTargets{"alb-ip": "ip"}
	whole.AddIngress(ing, classes)
	kept.AddIngress(slim, classes)
	for _, name := range []string{"web", "api"} {
		if whole.Of(name) != kept.Of(name) || kept.Of(name).ClassTargetType != "ip" {
			t.Errorf("%s: the slim Ingress gives %+v, the whole %+v", name, kept.Of(name), whole.Of(name))
		}
	}
	// Without a class that decides, the annotation: kept too.
	classless, annotated := kube.Frontends{}, kube.Frontends{}
	classless.AddIngress(slim, nil)
	annotated.AddIngress(ing, nil)
	if classless.Of("web") != annotated.Of("web") || classless.Of("web").IngressTargetType != "ip" {
		t.Errorf("the slim Ingress without its class: %+v, the whole %+v", classless.Of("web"), annotated.Of("web"))
	}
	if w, k := whole.Of("web"), kept.Of("web"); k.ClassTargetType != "ip" || w != k {
		t.Errorf("the slim Ingress's class: %+v, the whole's %+v", k, w)
	}
	if len(slim.Annotations) != 1 || slim.Labels != nil || slim.Spec.Rules[0].Host != "" {
		t.Errorf("the slim Ingress keeps more than it reads: %+v", slim)
	}
}
