package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
