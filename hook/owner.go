package hook

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Workload names the controller of pods: Deployment, StatefulSet, DaemonSet, ReplicaSet,
// another controller's kind, or the Pod itself when it has none.
type Workload struct {
	Kind, Namespace, Name string
}

func (w Workload) String() string { return w.Kind + "/" + w.Namespace + "/" + w.Name }

// Reference is w as an object reference (an event's involved object, a report's
// resource): its API version from its kind.
func (w Workload) Reference() corev1.ObjectReference {
	api := "apps/v1"
	switch w.Kind {
	case "Pod":
		api = "v1"
	case "Job", "CronJob":
		api = "batch/v1"
	}
	return corev1.ObjectReference{Kind: w.Kind, APIVersion: api, Namespace: w.Namespace, Name: w.Name}
}

// WorkloadOf is the pod's controller; a ReplicaSet's pods belong to its Deployment,
// whose name is the ReplicaSet's without the pod-template-hash suffix.
func WorkloadOf(p *corev1.Pod) Workload {
	for _, o := range p.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		if o.Kind == "ReplicaSet" {
			if h := p.Labels["pod-template-hash"]; h != "" && strings.HasSuffix(o.Name, "-"+h) {
				return Workload{Kind: "Deployment", Namespace: p.Namespace, Name: strings.TrimSuffix(o.Name, "-"+h)}
			}
		}
		return Workload{Kind: o.Kind, Namespace: p.Namespace, Name: o.Name}
	}
	return Workload{Kind: "Pod", Namespace: p.Namespace, Name: p.Name}
}

// Pod names as their controllers make them, for events of pods that are gone.
var (
	deploymentPod  = regexp.MustCompile(`^(.+)-[a-z0-9]{6,10}-[a-z0-9]{5}$`)
	statefulSetPod = regexp.MustCompile(`^(.+)-[0-9]+$`)
)

// WorkloadOfName guesses a gone pod's workload from its name: name-<hash>-<suffix> is a
// Deployment's, name-<ordinal> a StatefulSet's; else the pod itself.
func WorkloadOfName(ns, pod string) Workload {
	if m := deploymentPod.FindStringSubmatch(pod); m != nil {
		return Workload{Kind: "Deployment", Namespace: ns, Name: m[1]}
	}
	if m := statefulSetPod.FindStringSubmatch(pod); m != nil {
		return Workload{Kind: "StatefulSet", Namespace: ns, Name: m[1]}
	}
	return Workload{Kind: "Pod", Namespace: ns, Name: pod}
}

// PodOf tells whether pod is named as the controller kind/name names its pods:
// name-<template hash>-<suffix> (Deployment), name-<ordinal> (StatefulSet),
// name-<suffix> (DaemonSet). The pods of a failed hook are often gone: the name is
// what the event keeps.
func PodOf(kind, name, pod string) bool {
	rest, ok := strings.CutPrefix(pod, name+"-")
	if !ok || rest == "" {
		return false
	}
	parts := strings.Split(rest, "-")
	switch kind {
	case "Deployment":
		return len(parts) == 2
	case "StatefulSet":
		return len(parts) == 1 && strings.Trim(rest, "0123456789") == ""
	case "DaemonSet":
		return len(parts) == 1
	}
	return false
}
