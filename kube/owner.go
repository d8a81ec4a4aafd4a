package kube

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Workload names the controller of pods: Deployment, StatefulSet, DaemonSet, an Argo
// Rollout, another controller's kind, or the Pod itself when it has none; with its API
// version, as its pods' owner reference gives it (as Kubernetes' garbage collector reads
// owners), so that events and reports point at an object that exists.
type Workload struct {
	APIVersion, Kind, Namespace, Name string
}

func (w Workload) String() string { return w.Kind + "/" + w.Namespace + "/" + w.Name }

// Reference is w as an object reference (an event's involved object, a report's
// resource). A workload named without its API version (guessed from a gone pod's name,
// or a manifest's built-in kind) gets Kubernetes' own kind's.
func (w Workload) Reference() corev1.ObjectReference {
	api := w.APIVersion
	if api == "" {
		if k, ok := BuiltinKind(w.Kind); ok {
			api = k.APIVersion()
		}
	}
	return corev1.ObjectReference{Kind: w.Kind, APIVersion: api, Namespace: w.Namespace, Name: w.Name}
}

// WorkloadOf is the pod's controller. A ReplicaSet's pods belong to the workload that
// made it: the kind whose template-hash label the pod carries (KindInfo:
// pod-template-hash for a Deployment, rollouts-pod-template-hash for an Argo Rollout),
// named as the ReplicaSet is without that hash. Any other owner is itself, with its
// API version.
func WorkloadOf(p *corev1.Pod) Workload {
	for _, o := range p.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		if o.Kind == "ReplicaSet" {
			for _, k := range Kinds {
				if k.TemplateHashLabel == "" {
					continue
				}
				if h := p.Labels[k.TemplateHashLabel]; h != "" && strings.HasSuffix(o.Name, "-"+h) {
					return Workload{APIVersion: k.APIVersion(), Kind: k.Kind, Namespace: p.Namespace, Name: strings.TrimSuffix(o.Name, "-"+h)}
				}
			}
		}
		return Workload{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: p.Namespace, Name: o.Name}
	}
	return Workload{APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name}
}

// Pod names as their controllers make them, for events of pods that are gone.
var (
	deploymentPod  = regexp.MustCompile(`^(.+)-[a-z0-9]{6,10}-[a-z0-9]{5}$`)
	statefulSetPod = regexp.MustCompile(`^(.+)-[0-9]+$`)
)

// WorkloadOfName guesses a gone pod's workload from its name: name-<hash>-<suffix> is a
// Deployment's, name-<ordinal> a StatefulSet's; else the pod itself.
func WorkloadOfName(ns, pod string) Workload {
	builtin := func(kind, name string) Workload {
		k, _ := BuiltinKind(kind)
		return Workload{APIVersion: k.APIVersion(), Kind: kind, Namespace: ns, Name: name}
	}
	if m := deploymentPod.FindStringSubmatch(pod); m != nil {
		return builtin("Deployment", m[1])
	}
	if m := statefulSetPod.FindStringSubmatch(pod); m != nil {
		return builtin("StatefulSet", m[1])
	}
	return builtin("Pod", pod)
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
