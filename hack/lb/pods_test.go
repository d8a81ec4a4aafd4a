package main

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestALBBackend(t *testing.T) {
	backend := func(name string, port int32) networkingv1.IngressBackend {
		return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port}}}
	}
	rules := func(bs ...networkingv1.IngressBackend) []networkingv1.IngressRule {
		var paths []networkingv1.HTTPIngressPath
		for _, b := range bs {
			paths = append(paths, networkingv1.HTTPIngressPath{Path: "/", Backend: b})
		}
		return []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}}
	}
	for _, tc := range []struct {
		name    string
		spec    networkingv1.IngressSpec
		service string
		err     string
	}{
		{"default backend", networkingv1.IngressSpec{DefaultBackend: ptr.To(backend("web", 80))}, "web", ""},
		{"one rule", networkingv1.IngressSpec{Rules: rules(backend("web", 80))}, "web", ""},
		{"the same backend twice", networkingv1.IngressSpec{DefaultBackend: ptr.To(backend("web", 80)), Rules: rules(backend("web", 80))}, "web", ""},
		{"two Services", networkingv1.IngressSpec{Rules: rules(backend("web", 80), backend("api", 80))}, "", "backends web and api"},
		{"no Service", networkingv1.IngressSpec{}, "", "no Service backend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _, err := albBackend(&networkingv1.Ingress{Spec: tc.spec})
			if svc != tc.service || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("albBackend = %q, %v; want %q, an error with %q", svc, err, tc.service, tc.err)
			}
		})
	}
}

func TestALBListeners(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "http", Port: 8080},
		{Name: "grpc", Port: 9000, AppProtocol: ptr.To("kubernetes.io/h2c")},
		{Name: "metrics", Port: 9090},
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
	}}}
	for _, tc := range []struct {
		name string
		port networkingv1.ServiceBackendPort
		want string // listener→Service port, ...
		err  string
	}{
		{"by number: 80 to it, gRPC at its own", networkingv1.ServiceBackendPort{Number: 8080}, "80→8080 9000→9000", ""},
		{"by name", networkingv1.ServiceBackendPort{Name: "metrics"}, "9000→9000 80→9090", ""},
		{"a port the Service lacks", networkingv1.ServiceBackendPort{Number: 81}, "", "no TCP port 81"},
		{"a UDP port", networkingv1.ServiceBackendPort{Name: "dns"}, "", "no TCP port dns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls, err := albListeners(svc, tc.port)
			var got []string
			for _, l := range ls {
				got = append(got, fmt.Sprintf("%d→%d", l.port, l.to.Port))
			}
			if strings.Join(got, " ") != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("albListeners = %v, %v; want %q, an error with %q", got, err, tc.want, tc.err)
			}
		})
	}
}
