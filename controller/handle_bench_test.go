package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/kube"
)

// BenchmarkInjectorHandle is one admission of a Deployment's pod as the API server sends
// it (defaulted, a service account volume), injected.
func BenchmarkInjectorHandle(b *testing.B) {
	v := kube.Version{Major: 1, Minor: 34}
	i := &Injector{Options: inject.Options{Kube: &v}, Waits: waits5s}
	raw, err := json.Marshal(benchPod())
	if err != nil {
		b.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop",
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}}}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if r := i.Handle(context.Background(), req); len(r.Patches) == 0 {
			b.Fatalf("not injected: %+v", r)
		}
	}
}

func benchPod() *corev1.Pod {
	grace := int64(30)
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "api-7d9f8b6c5d-", Namespace: "shop",
			Labels:          map[string]string{"app": "api", "pod-template-hash": "7d9f8b6c5d", "app.kubernetes.io/name": "api"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-11-23T10:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "api-7d9f8b6c5d", UID: "0b9d2c1e-0000-4000-8000-000000000001"}}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "api", Image: "registry.example/api:1.2.3", ImagePullPolicy: corev1.PullIfNotPresent,
				Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env:       []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "PORT", Value: "8080"}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
					PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
				VolumeMounts:             []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			}}}}},
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace, DNSPolicy: corev1.DNSClusterFirst,
			ServiceAccountName: "default", SchedulerName: "default-scheduler",
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		},
	}
}

// BenchmarkInjectorHandleNodes is the same admission in a cluster of 5,000 nodes
// (Kubernetes' tested limit), as the webhook reads them at every admission.
func BenchmarkInjectorHandleNodes(b *testing.B) {
	v := kube.Version{Major: 1, Minor: 34}
	nodes := make([]kube.Node, 5000)
	for k := range nodes {
		nodes[k] = kube.Node{Name: fmt.Sprintf("node-%05d", k), Kubelet: v, Labels: map[string]string{"kubernetes.io/os": "linux", "topology.kubernetes.io/zone": fmt.Sprintf("zone-%d", k%3)}}
	}
	i := &Injector{Options: inject.Options{Kube: &v}, Waits: waits5s, Nodes: func(context.Context) ([]kube.Node, error) { return nodes, nil }}
	raw, err := json.Marshal(benchPod())
	if err != nil {
		b.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop",
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}}}
	b.ReportAllocs()
	for b.Loop() {
		if r := i.Handle(context.Background(), req); len(r.Patches) == 0 {
			b.Fatalf("not injected: %+v", r)
		}
	}
}

// BenchmarkInjectorHandleCrafted is one admission of pods shaped to cost: many
// annotations (10,000 is valid: their total stays under the API's 256 KiB; 40,000 is
// just under MaxPodBytes), and a pod near the largest the API server forwards (its env;
// over MaxPodBytes: admitted unchanged unread).
func BenchmarkInjectorHandleCrafted(b *testing.B) {
	v := kube.Version{Major: 1, Minor: 34}
	i := &Injector{Options: inject.Options{Kube: &v}, Waits: waits5s}
	for _, c := range []struct {
		name string
		pod  func() *corev1.Pod
	}{
		{"annotations-10000", func() *corev1.Pod {
			p := benchPod()
			for k := range 10000 {
				p.Annotations[fmt.Sprintf("a%05d", k)] = "v"
			}
			return p
		}},
		{"annotations-40000", func() *corev1.Pod { // just under MaxPodBytes
			p := benchPod()
			for k := range 40000 {
				p.Annotations[fmt.Sprintf("a%06d", k)] = "v"
			}
			return p
		}},
		{"env-2.8MB", func() *corev1.Pod {
			p := benchPod()
			for k := range 40000 {
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: fmt.Sprintf("E%05d", k), Value: "0123456789012345678901234567890123456789"})
			}
			return p
		}},
	} {
		raw, err := json.Marshal(c.pod())
		if err != nil {
			b.Fatal(err)
		}
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop",
			Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}}}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				i.Handle(context.Background(), req)
			}
		})
	}
}
