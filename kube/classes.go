package kube

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// An Ingress's class may decide where its load balancer sends, above the Ingress's and
// its Service's annotations: the AWS Load Balancer Controller takes an
// IngressClassParams' spec.targetType before the target-type annotations (its
// buildTargetGroupTargetType), for every Ingress of the IngressClass whose
// spec.parameters name it. Both are cluster-scoped.
const (
	IngressClassParamsGroup    = "elbv2.k8s.aws"
	IngressClassParamsResource = "ingressclassparams"
	IngressClassParamsKind     = "IngressClassParams"
	// IngressClassAnnotation names an Ingress's class where spec.ingressClassName does
	// not (before Kubernetes 1.18; still read by the controllers).
	IngressClassAnnotation = "kubernetes.io/ingress.class"
)

// IngressClassParamsGVR is the IngressClassParams resource at version.
func IngressClassParamsGVR(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: IngressClassParamsGroup, Version: version, Resource: IngressClassParamsResource}
}

// ClassTargets are the target types IngressClasses set through their
// IngressClassParams, by IngressClass name: only the classes whose parameters set one.
type ClassTargets map[string]string

// ClassTargetsOf reads ClassTargets from the IngressClasses and the IngressClassParams
// (as the API serves them, unstructured) of a cluster.
func ClassTargetsOf(classes []networkingv1.IngressClass, params []map[string]any) ClassTargets {
	byName := map[string]string{}
	for _, p := range params {
		if t := str(p, "spec", "targetType"); t != "" {
			byName[str(p, "metadata", "name")] = t
		}
	}
	out := ClassTargets{}
	for _, c := range classes {
		ref := c.Spec.Parameters
		if ref == nil || ref.APIGroup == nil || *ref.APIGroup != IngressClassParamsGroup || ref.Kind != IngressClassParamsKind {
			continue
		}
		if t := byName[ref.Name]; t != "" {
			out[c.Name] = t
		}
	}
	return out
}

// IngressClassOf is the class an Ingress names: spec.ingressClassName, else the
// annotation IngressClassAnnotation ("" for none).
func IngressClassOf(ing *networkingv1.Ingress) string {
	if c := ing.Spec.IngressClassName; c != nil && *c != "" {
		return *c
	}
	return ing.Annotations[IngressClassAnnotation]
}
