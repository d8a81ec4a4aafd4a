package controller

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
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
// Injector.Services: the cache's own objects, not copies, which the webhook only reads.
func ServicesFrom(r client.Reader) func(context.Context, string) ([]corev1.Service, error) {
	return func(ctx context.Context, ns string) ([]corev1.Service, error) {
		var list corev1.ServiceList
		if err := r.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		return list.Items, nil
	}
}

// FrontendsFrom reads a namespace's front doors through r (the manager's cache) for
// Injector.Fronts and the Reporter: the Services its Ingresses and its Gateway API
// routes of the kinds routes (ServedRoutes) name.
func FrontendsFrom(r client.Reader, routes []schema.GroupVersionKind) func(context.Context, string) (kube.Frontends, error) {
	return func(ctx context.Context, ns string) (kube.Frontends, error) {
		var list networkingv1.IngressList
		if err := r.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		out := kube.Frontends{}
		for i := range list.Items {
			out.AddIngress(&list.Items[i])
		}
		for _, gvk := range routes {
			var rl unstructured.UnstructuredList
			rl.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := r.List(ctx, &rl, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
				return nil, err
			}
			for i := range rl.Items {
				out.AddRoute(rl.Items[i].Object)
			}
		}
		return out, nil
	}
}

// FrontKinds are the kinds of the front doors the caches watch: an Ingress, and each of
// routes as an unstructured object.
func FrontKinds(routes []schema.GroupVersionKind) []client.Object {
	out := []client.Object{&networkingv1.Ingress{}}
	for _, gvk := range routes {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		out = append(out, u)
	}
	return out
}

// ServedRoutes are the Gateway API route kinds the API server serves (kube.RouteKinds),
// each at the first version it lists for it (the preferred first): none where the
// Gateway API is not installed. A route kind installed later is read after a restart.
func ServedRoutes(d discovery.DiscoveryInterface) ([]schema.GroupVersionKind, error) {
	groups, err := d.ServerGroups()
	if err != nil {
		return nil, err
	}
	var out []schema.GroupVersionKind
	for _, g := range groups.Groups {
		if g.Name != kube.GatewayGroup {
			continue
		}
		versions := []string{g.PreferredVersion.Version}
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				versions = append(versions, v.Version)
			}
		}
		seen := map[string]bool{}
		for _, v := range versions {
			rl, err := d.ServerResourcesForGroupVersion(kube.GatewayGroup + "/" + v)
			if err != nil {
				return nil, err
			}
			for _, r := range rl.APIResources {
				if _, ok := kube.RouteKinds[r.Name]; ok && !seen[r.Name] {
					seen[r.Name] = true
					out = append(out, kube.RouteGVK(r.Name, v))
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.Kind, b.Kind) })
	return out, nil
}
