package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/kube"
)

// NamespaceLabelsFrom reads a namespace's labels through r (the manager's cache) for
// Injector.NamespaceLabels.
func NamespaceLabelsFrom(r client.Reader) func(context.Context, string) (map[string]string, error) {
	return func(ctx context.Context, name string) (map[string]string, error) {
		var ns corev1.Namespace
		if err := r.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
			return nil, err
		}
		return ns.Labels, nil
	}
}

// ServicesFrom lists a namespace's Services through r (the manager's cache) for
// Injector.Services.
func ServicesFrom(r client.Reader) func(context.Context, string) ([]corev1.Service, error) {
	return func(ctx context.Context, ns string) ([]corev1.Service, error) {
		var list corev1.ServiceList
		if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		return list.Items, nil
	}
}

// IngressedFrom lists a namespace's Ingresses through r (the manager's cache) for
// Injector.Ingressed: the Services they name.
func IngressedFrom(r client.Reader) func(context.Context, string) (map[string]bool, error) {
	return func(ctx context.Context, ns string) (map[string]bool, error) {
		var list networkingv1.IngressList
		if err := r.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for i := range list.Items {
			for _, name := range kube.IngressBackends(&list.Items[i]) {
				out[name] = true
			}
		}
		return out, nil
	}
}
