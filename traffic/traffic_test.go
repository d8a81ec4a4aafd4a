package traffic

import (
	"strings"
	"testing"

	"github.com/nap-k8s/nap/kube"
	corev1 "k8s.io/api/core/v1"
)

// Every path says what shortens its tail (calibrate's advice), and has a unique name.
func TestPathsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range All() {
		if p.Remedy == "" || p.Title == "" || p.Reaches == nil || seen[p.Name] {
			t.Errorf("path %q: incomplete or a duplicate name", p.Name)
		}
		seen[p.Name] = true
	}
}

func TestReaching(t *testing.T) {
	svc := func(typ corev1.ServiceType, policy corev1.ServiceExternalTrafficPolicy, clusterIP string) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Type: typ, ExternalTrafficPolicy: policy, ClusterIP: clusterIP}}
	}
	noNodePorts := svc(corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, "")
	noNodePorts.Spec.AllocateLoadBalancerNodePorts = new(bool)
	annotated := func(s *corev1.Service, k, v string) *corev1.Service {
		s.Annotations = map[string]string{k: v}
		return s
	}
	for _, c := range []struct {
		name   string
		svc    *corev1.Service
		fronts kube.Fronts
		want   string
	}{
		{"a Service of no type", svc("", "", ""), kube.Fronts{}, "clusterip"},
		{"ClusterIP, behind an Ingress", svc(corev1.ServiceTypeClusterIP, "", ""), kube.Fronts{Ingress: true}, "clusterip ingress"},
		{"headless", svc(corev1.ServiceTypeClusterIP, "", corev1.ClusterIPNone), kube.Fronts{}, "headless-dns"},
		{"headless, behind an Ingress", svc("", "", corev1.ClusterIPNone), kube.Fronts{Ingress: true}, "headless-dns ingress"},
		{"ExternalName", svc(corev1.ServiceTypeExternalName, "", ""), kube.Fronts{}, ""},
		{"NodePort", svc(corev1.ServiceTypeNodePort, "", ""), kube.Fronts{}, "clusterip nodeport"},
		{"LoadBalancer, the default policy", svc(corev1.ServiceTypeLoadBalancer, "", ""), kube.Fronts{}, "clusterip nodeport lb-cluster"},
		{"LoadBalancer, Local", svc(corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, ""), kube.Fronts{}, "clusterip nodeport lb-local"},
		{"LoadBalancer, Cluster, behind an Ingress", svc(corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyCluster, ""), kube.Fronts{Ingress: true}, "clusterip nodeport ingress lb-cluster"},
		{"LoadBalancer, Local, no NodePorts", noNodePorts, kube.Fronts{}, "clusterip lb-local"},
		{"ClusterIP, behind a Gateway API route", svc(corev1.ServiceTypeClusterIP, "", ""), kube.Fronts{Route: true}, "clusterip gateway-route"},
		{"ClusterIP, behind an Ingress and a route", svc("", "", ""), kube.Fronts{Ingress: true, Route: true}, "clusterip ingress gateway-route"},
		{"ClusterIP, an AWS ALB in IP mode for an Ingress", annotated(svc(corev1.ServiceTypeClusterIP, "", ""), "alb.ingress.kubernetes.io/target-type", "ip"),
			kube.Fronts{Ingress: true}, "clusterip ingress lb-pods"},
		{"ClusterIP, an AWS ALB in instance mode for an Ingress", annotated(svc(corev1.ServiceTypeNodePort, "", ""), "alb.ingress.kubernetes.io/target-type", "instance"),
			kube.Fronts{Ingress: true}, "clusterip nodeport ingress"},
		{"LoadBalancer, an AWS NLB in IP mode", annotated(svc(corev1.ServiceTypeLoadBalancer, "", ""), "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type", "ip"),
			kube.Fronts{}, "clusterip nodeport lb-pods"},
		{"LoadBalancer, an AWS NLB in instance mode", annotated(svc(corev1.ServiceTypeLoadBalancer, "", ""), "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type", "instance"),
			kube.Fronts{}, "clusterip nodeport lb-cluster"},
		{"ClusterIP, an AWS ALB in IP mode set on the Ingress", svc(corev1.ServiceTypeClusterIP, "", ""),
			kube.Fronts{Ingress: true, IngressTargetType: "ip"}, "clusterip ingress lb-pods"},
		{"the Service's target type first: instance over the Ingress's ip", annotated(svc(corev1.ServiceTypeClusterIP, "", ""), "alb.ingress.kubernetes.io/target-type", "instance"),
			kube.Fronts{Ingress: true, IngressTargetType: "ip"}, "clusterip ingress"},
		{"the Service's target type first: ip over the Ingress's instance", annotated(svc(corev1.ServiceTypeClusterIP, "", ""), "alb.ingress.kubernetes.io/target-type", "ip"),
			kube.Fronts{Ingress: true, IngressTargetType: "instance"}, "clusterip ingress lb-pods"},
		{"ClusterIP, behind an Istio VirtualService", svc(corev1.ServiceTypeClusterIP, "", ""), kube.Fronts{Mesh: true}, "clusterip mesh-route"},
		{"ClusterIP, an AWS TargetGroupBinding to the pods", svc(corev1.ServiceTypeClusterIP, "", ""), kube.Fronts{TargetGroupType: "ip"}, "clusterip lb-pods"},
		{"NodePort, an AWS TargetGroupBinding to the nodes", svc(corev1.ServiceTypeNodePort, "", ""), kube.Fronts{TargetGroupType: "instance"}, "clusterip nodeport lb-cluster"},
		{"NodePort Local, an AWS TargetGroupBinding to the nodes", svc(corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyLocal, ""), kube.Fronts{TargetGroupType: "instance"},
			"clusterip nodeport lb-local"},
		{"ALB's pod targets, no Ingress: no load balancer", annotated(svc(corev1.ServiceTypeClusterIP, "", ""), "alb.ingress.kubernetes.io/target-type", "ip"),
			kube.Fronts{}, "clusterip"},
		{"an NLB's pod targets on a ClusterIP Service: no load balancer", annotated(svc(corev1.ServiceTypeClusterIP, "", ""), "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type", "ip"),
			kube.Fronts{}, "clusterip"},
		{"GKE's network endpoint groups, behind an Ingress", annotated(svc(corev1.ServiceTypeClusterIP, "", ""), "cloud.google.com/neg", `{"ingress": true}`),
			kube.Fronts{Ingress: true}, "clusterip ingress lb-pods"},
		{"GKE's network endpoint groups, no Ingress", annotated(svc(corev1.ServiceTypeClusterIP, "", ""), "cloud.google.com/neg", `{"ingress": true}`),
			kube.Fronts{}, "clusterip"},
	} {
		var got []string
		for _, p := range Reaching(c.svc, c.fronts) {
			got = append(got, p.Name)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
