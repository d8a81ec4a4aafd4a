package kube

import (
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pod's workload is the object that its controller is, with the API version its owner
// reference gives (or, through a ReplicaSet, the kind whose template hash it carries).
func TestWorkloadOf(t *testing.T) {
	yes := true
	pod := func(name string, labels map[string]string, owner *metav1.OwnerReference) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels}}
		if owner != nil {
			owner.Controller = &yes
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "not-the-controller"}, *owner}
		}
		return p
	}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want Workload
	}{
		{"a Deployment's", pod("web-5d8f7c9b6-x2x4q", map[string]string{"pod-template-hash": "5d8f7c9b6"},
			&metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f7c9b6"}),
			Workload{"apps/v1", "Deployment", "shop", "web"}},
		{"an Argo Rollout's", pod("web-6c7d8e9f5-q9w8e", map[string]string{"rollouts-pod-template-hash": "6c7d8e9f5"},
			&metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-6c7d8e9f5"}),
			Workload{"argoproj.io/v1alpha1", "Rollout", "shop", "web"}},
		{"a bare ReplicaSet's", pod("rs-abcde", nil, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs"}),
			Workload{"apps/v1", "ReplicaSet", "shop", "rs"}},
		{"a ReplicationController's", pod("old-abcde", nil, &metav1.OwnerReference{APIVersion: "v1", Kind: "ReplicationController", Name: "old"}),
			Workload{"v1", "ReplicationController", "shop", "old"}},
		{"a StatefulSet's", pod("db-0", nil, &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"}),
			Workload{"apps/v1", "StatefulSet", "shop", "db"}},
		{"an OpenKruise CloneSet's", pod("api-x7k2p", nil, &metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "api"}),
			Workload{"apps.kruise.io/v1alpha1", "CloneSet", "shop", "api"}},
		{"a bare pod", pod("debug", nil, nil), Workload{"v1", "Pod", "shop", "debug"}},
	} {
		got := WorkloadOf(c.pod)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		if ref := got.Reference(); ref.APIVersion != c.want.APIVersion || ref.Kind != c.want.Kind || ref.Name != c.want.Name {
			t.Errorf("%s: reference %+v", c.name, ref)
		}
	}
	// Named without its API version (a gone pod's name; a manifest's built-in kind):
	// Kubernetes' own kind's.
	for _, c := range []struct{ kind, api string }{{"Deployment", "apps/v1"}, {"ReplicationController", "v1"}, {"CronJob", "batch/v1"}, {"Pod", "v1"}} {
		if ref := (Workload{Kind: c.kind, Name: "x"}).Reference(); ref.APIVersion != c.api {
			t.Errorf("%s: %s, want %s", c.kind, ref.APIVersion, c.api)
		}
	}
}

// PodOf: the names each controller gives its pods, and the near misses.
func TestPodOf(t *testing.T) {
	for _, tc := range []struct {
		kind, name, pod string
		want            bool
	}{
		{kind: "Deployment", name: "api", pod: "api-5d9f8c6b5-x7k2p", want: true},
		{kind: "Deployment", name: "api", pod: "api-canary-5d9f8c6b5-x7k2p", want: false},
		{kind: "Deployment", name: "api", pod: "api-x7k2p", want: false},
		{kind: "Deployment", name: "api", pod: "apix-5d9f8c6b5-x7k2p", want: false},
		{kind: "StatefulSet", name: "db", pod: "db-0", want: true},
		{kind: "StatefulSet", name: "db", pod: "db-12", want: true},
		{kind: "StatefulSet", name: "db", pod: "db-a", want: false},
		{kind: "StatefulSet", name: "db", pod: "db-", want: false},
		{kind: "DaemonSet", name: "agent", pod: "agent-x7k2p", want: true},
		{kind: "DaemonSet", name: "agent", pod: "agent-5d9f8c6b5-x7k2p", want: false},
		{kind: "ReplicaSet", name: "rs", pod: "rs-x7k2p", want: false},
	} {
		if got := PodOf(tc.kind, tc.name, tc.pod); got != tc.want {
			t.Errorf("PodOf(%s %s, %s) = %v, want %v", tc.kind, tc.name, tc.pod, got, tc.want)
		}
	}
}

func TestWorkloadOfName(t *testing.T) {
	for pod, want := range map[string]string{
		"api-7d9f8c6b5-abcde": "Deployment/ns/api",
		"web-0":               "StatefulSet/ns/web",
		"standalone":          "Pod/ns/standalone",
	} {
		if got := WorkloadOfName("ns", pod).String(); got != want {
			t.Errorf("WorkloadOfName(%q) = %s, want %s", pod, got, want)
		}
	}
}

func TestLiveKey(t *testing.T) {
	long := strings.Repeat("a", 253)
	for _, tc := range []struct {
		w    Workload
		want string
	}{
		{Workload{Kind: "Deployment", Name: "web"}, "deployment.web"},
		{Workload{Kind: "StatefulSet", Name: "db.v2"}, "statefulset.db.v2"},
		{Workload{Kind: "Rollout", Name: "shop"}, "rollout.shop"},
	} {
		if got := LiveKey(tc.w); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.w, got, tc.want)
		}
	}
	a, b := LiveKey(Workload{Kind: "Deployment", Name: long}), LiveKey(Workload{Kind: "Deployment", Name: long[:252] + "b"})
	if len(a) != LiveKeyMax || len(b) != LiveKeyMax || a == b {
		t.Errorf("long names: %q and %q, want %d characters each, different", a, b, LiveKeyMax)
	}
	// Every key is one a ConfigMap takes.
	valid := regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
	for _, k := range []string{a, b, LiveKey(Workload{Kind: "Pod", Name: "x"})} {
		if !valid.MatchString(k) {
			t.Errorf("%q is no ConfigMap key", k)
		}
	}
}
