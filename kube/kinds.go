package kube

import "strings"

// KindInfo is what nap knows of a kind of object: its API group and version, its
// resource, and for a workload where it keeps the pod spec its pods run and whether
// those pods serve (long-lived, replaced while serving) or run to completion.
type KindInfo struct {
	Group, Version, Kind, Resource string
	// PodSpec is the path of the pod spec in the object; none for a kind that is not
	// a workload.
	PodSpec []string
	Serves  bool
	// Builtin: Kubernetes' own kind, taken for an object of its name that names no
	// apiVersion (a fragment; the API server would refuse it).
	Builtin bool
	// TemplateHashLabel, for a kind that runs its pods through ReplicaSets: the label
	// its ReplicaSets and their pods carry, the suffix of the ReplicaSet's name after
	// the workload's.
	TemplateHashLabel string
}

// APIVersion is the kind's group/version, or the version alone for the core group.
func (k KindInfo) APIVersion() string {
	if k.Group == "" {
		return k.Version
	}
	return k.Group + "/" + k.Version
}

var templateSpec = []string{"spec", "template", "spec"}

// Kinds are the kinds nap knows, the one home of that knowledge: manifests' workloads
// (package manifest), the owners of live pods (package hook), the resources read from
// a cluster (package live). Adding a kind whose pods nap should protect is a row here.
var Kinds = []KindInfo{
	{Version: "v1", Kind: "Pod", Resource: "pods", PodSpec: []string{"spec"}, Serves: true, Builtin: true},
	{Version: "v1", Kind: "ReplicationController", Resource: "replicationcontrollers", PodSpec: templateSpec, Serves: true, Builtin: true},
	{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", PodSpec: templateSpec, Serves: true, Builtin: true, TemplateHashLabel: "pod-template-hash"},
	{Group: "apps", Version: "v1", Kind: "StatefulSet", Resource: "statefulsets", PodSpec: templateSpec, Serves: true, Builtin: true},
	{Group: "apps", Version: "v1", Kind: "DaemonSet", Resource: "daemonsets", PodSpec: templateSpec, Serves: true, Builtin: true},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet", Resource: "replicasets", PodSpec: templateSpec, Serves: true, Builtin: true},
	// Manifests older than apps/v1 (Kubernetes 1.16 stopped serving them).
	{Group: "extensions", Version: "v1beta1", Kind: "Deployment", Resource: "deployments", PodSpec: templateSpec, Serves: true},
	{Group: "extensions", Version: "v1beta1", Kind: "DaemonSet", Resource: "daemonsets", PodSpec: templateSpec, Serves: true},
	{Group: "extensions", Version: "v1beta1", Kind: "ReplicaSet", Resource: "replicasets", PodSpec: templateSpec, Serves: true},
	{Group: "batch", Version: "v1", Kind: "Job", Resource: "jobs", PodSpec: templateSpec, Builtin: true},
	{Group: "batch", Version: "v1", Kind: "CronJob", Resource: "cronjobs", PodSpec: []string{"spec", "jobTemplate", "spec", "template", "spec"}, Builtin: true},
	// Pod-template CRDs whose pods serve like a Deployment's.
	{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout", Resource: "rollouts", PodSpec: templateSpec, Serves: true, TemplateHashLabel: "rollouts-pod-template-hash"},
	{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet", Resource: "clonesets", PodSpec: templateSpec, Serves: true},
	{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "DaemonSet", Resource: "daemonsets", PodSpec: templateSpec, Serves: true},
	// OpenShift's DeploymentConfig: a PodTemplateSpec at spec.template, as a Deployment.
	{Group: "apps.openshift.io", Version: "v1", Kind: "DeploymentConfig", Resource: "deploymentconfigs", PodSpec: templateSpec, Serves: true},
	// What lint and status read beside the workloads.
	{Version: "v1", Kind: "Service", Resource: "services", Builtin: true},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget", Resource: "poddisruptionbudgets", Builtin: true},
	{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler", Resource: "horizontalpodautoscalers", Builtin: true},
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress", Resource: "ingresses", Builtin: true},
}

type groupKind struct{ group, kind string }

var byGroupKind, builtin = func() (map[groupKind]KindInfo, map[string]KindInfo) {
	g, b := map[groupKind]KindInfo{}, map[string]KindInfo{}
	for _, k := range Kinds {
		g[groupKind{k.Group, k.Kind}] = k
		if k.Builtin {
			b[k.Kind] = k
		}
	}
	return g, b
}()

// KindFor is what nap knows of kind in API group group ("" for the core group).
func KindFor(group, kind string) (KindInfo, bool) {
	k, ok := byGroupKind[groupKind{group, kind}]
	return k, ok
}

// BuiltinKind is Kubernetes' own kind of that name, for an object that names no
// apiVersion.
func BuiltinKind(kind string) (KindInfo, bool) {
	k, ok := builtin[kind]
	return k, ok
}

// GroupOf is the API group of an apiVersion ("" for the core group's "v1").
func GroupOf(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// KindOfResource is the kind of a built-in resource in group ("deployments" in "apps":
// Deployment), for typed lists, which leave their items' kind empty.
func KindOfResource(group, resource string) (KindInfo, bool) {
	for _, k := range Kinds {
		if k.Builtin && k.Group == group && k.Resource == resource {
			return k, true
		}
	}
	return KindInfo{}, false
}
