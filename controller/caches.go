package controller

import (
	"bytes"
	"context"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/controller/report"
	"github.com/nap-k8s/nap/kube"
)

// CacheOptions restrict the manager's cache to what nap reads: ConfigMaps of the
// Publisher's name only, so memory does not grow with the cluster's other ConfigMaps,
// and of each Node only its name, labels and kubelet version (for the webhook). No
// object keeps its managedFields: nap never reads them, and they are much of a small
// object's size. Pods and events are as the Reporter needs them (report.CacheByObject).
func CacheOptions(name string) cache.Options {
	by := map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}:     {Field: fields.OneTermEqualSelector("metadata.name", name), Transform: shareBinaries()},
		&corev1.Node{}:          {Transform: slimNode},
		&corev1.Service{}:       {Transform: slimService},
		&networkingv1.Ingress{}: {Transform: slimIngress},
	}
	maps.Copy(by, report.CacheByObject()) // pods, as summaries; events
	return cache.Options{NewInformer: report.NewInformer, DefaultTransform: cache.TransformStripManagedFields(), ByObject: by}
}

// shareBinaries is the cache's transform of nap's ConfigMaps: no managedFields, and
// binaries equal to the last seen under the same key share its bytes, so that 10,000
// namespaces' copies hold the two sleepers once, not 10,000 times. The cache's readers
// get deep copies (Reconcile's edits included); no one writes to the cache's own.
func shareBinaries() func(any) (any, error) {
	var mu sync.Mutex
	last := map[string][]byte{} // per key: one entry per binary name, not per copy
	strip := cache.TransformStripManagedFields()
	return func(o any) (any, error) {
		o, err := strip(o)
		cm, ok := o.(*corev1.ConfigMap)
		if err != nil || !ok {
			return o, err
		}
		mu.Lock()
		defer mu.Unlock()
		for k, b := range cm.BinaryData {
			if prev, ok := last[k]; ok && bytes.Equal(prev, b) {
				cm.BinaryData[k] = prev
			} else {
				last[k] = b
			}
		}
		return cm, nil
	}
}

// slimService keeps what the webhook and the Reporter read of a Service: its selector
// (scope.Selects), and what the paths that reach its pods depend on (traffic.Reaching:
// its type, cluster IP, externalTrafficPolicy, node ports, load balancer class, and
// its annotations, which set a cloud load balancer's health checks), without kubectl's
// copy of the whole object.
func slimService(o any) (any, error) {
	s, ok := o.(*corev1.Service)
	if !ok {
		return o, nil
	}
	slim := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, ResourceVersion: s.ResourceVersion, UID: s.UID}}
	if len(s.Annotations) > 0 {
		slim.Annotations = make(map[string]string, len(s.Annotations))
		for k, v := range s.Annotations {
			if k != corev1.LastAppliedConfigAnnotation {
				slim.Annotations[k] = v
			}
		}
	}
	slim.Spec = corev1.ServiceSpec{Selector: s.Spec.Selector, Type: s.Spec.Type, ClusterIP: s.Spec.ClusterIP, ExternalTrafficPolicy: s.Spec.ExternalTrafficPolicy,
		AllocateLoadBalancerNodePorts: s.Spec.AllocateLoadBalancerNodePorts, LoadBalancerClass: s.Spec.LoadBalancerClass}
	return slim, nil
}

// slimIngress keeps what the webhook and the Reporter read of an Ingress: the Services
// it names (kube.IngressBackends) and the annotations kube.Frontends reads
// (kube.IngressAnnotations).
func slimIngress(o any) (any, error) {
	ing, ok := o.(*networkingv1.Ingress)
	if !ok {
		return o, nil
	}
	slim := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: ing.Name, Namespace: ing.Namespace, ResourceVersion: ing.ResourceVersion, UID: ing.UID}}
	for _, k := range kube.IngressAnnotations {
		if v, ok := ing.Annotations[k]; ok {
			if slim.Annotations == nil {
				slim.Annotations = map[string]string{}
			}
			slim.Annotations[k] = v
		}
	}
	slim.Spec.IngressClassName = ing.Spec.IngressClassName
	for _, name := range kube.IngressBackends(ing) {
		slim.Spec.Rules = append(slim.Spec.Rules, networkingv1.IngressRule{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name}}}}}}})
	}
	return slim, nil
}

// slimNode keeps what kube.NodeOf reads of a Node.
func slimNode(o any) (any, error) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return o, nil
	}
	slim := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, ResourceVersion: n.ResourceVersion, UID: n.UID}}
	slim.Status.NodeInfo.KubeletVersion = n.Status.NodeInfo.KubeletVersion
	return slim, nil
}

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
// Injector.Fronts and the Reporter: the Services its Ingresses (with what their classes
// decide: IngressClassParams at params, a GroupVersionKind the API server serves, or
// none) and its front doors of the kinds doors (ServedDoors) name.
func FrontendsFrom(r client.Reader, doors []schema.GroupVersionKind, params *schema.GroupVersionKind) func(context.Context, string) (kube.Frontends, error) {
	return func(ctx context.Context, ns string) (kube.Frontends, error) {
		var list networkingv1.IngressList
		if err := r.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		out := kube.Frontends{}
		var classes kube.ClassTargets
		if len(list.Items) > 0 {
			var err error
			if classes, err = classTargetsFrom(ctx, r, params); err != nil {
				return nil, err
			}
		}
		for i := range list.Items {
			out.AddIngress(&list.Items[i], classes)
		}
		for _, gvk := range doors {
			d, ok := kube.DoorOf(gvk.Group, gvk.Kind)
			if !ok {
				continue
			}
			var rl unstructured.UnstructuredList
			rl.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := r.List(ctx, &rl, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
				return nil, err
			}
			for i := range rl.Items {
				out.AddDoor(d, rl.Items[i].Object)
			}
		}
		return out, nil
	}
}

// classTargetsFrom reads the IngressClasses and the IngressClassParams (where served)
// through r, for kube.ClassTargetsOf.
func classTargetsFrom(ctx context.Context, r client.Reader, params *schema.GroupVersionKind) (kube.ClassTargets, error) {
	var classes networkingv1.IngressClassList
	if err := r.List(ctx, &classes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	if params == nil || len(classes.Items) == 0 {
		return nil, nil
	}
	var pl unstructured.UnstructuredList
	pl.SetGroupVersionKind(params.GroupVersion().WithKind(params.Kind + "List"))
	if err := r.List(ctx, &pl, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	ps := make([]map[string]any, len(pl.Items))
	for i := range pl.Items {
		ps[i] = pl.Items[i].Object
	}
	return kube.ClassTargetsOf(classes.Items, ps), nil
}

// FrontKinds are the kinds of the front doors the caches watch: an Ingress and its
// class (and the IngressClassParams at params, where served), and each of doors, as
// unstructured objects.
func FrontKinds(doors []schema.GroupVersionKind, params *schema.GroupVersionKind) []client.Object {
	out := []client.Object{&networkingv1.Ingress{}, &networkingv1.IngressClass{}}
	if params != nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(*params)
		out = append(out, u)
	}
	for _, gvk := range doors {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		out = append(out, u)
	}
	return out
}
