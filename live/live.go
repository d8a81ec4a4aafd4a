package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
)

// Resources are what Read lists, in this order: the workloads lint checks, then what
// lint links to them.
var Resources = []schema.GroupVersionResource{
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Version: "v1", Resource: "services"},
	{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
	{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
}

// pageSize bounds one list call: a fleet of thousands of namespaces is read in pages.
const pageSize = 500

// Prefix starts the name Read gives each object in place of a file: live:Kind/namespace/name.
const Prefix = "live:"

// Read lists Resources and the front doors the API server serves (ServedDoors) in
// namespace ("" for every namespace) and returns them as manifest objects, sorted by
// namespace, kind and name. Each is named live:Kind/namespace/name, line 1; status and
// managedFields are dropped. The resources are listed side by side, each page turned
// into objects as it arrives; the built-in ones as protobuf (much cheaper than JSON for
// the API server to write and for us to read, on a fleet of thousands of workloads),
// the optional ones as JSON. A front door's kind that the caller may not list is left
// out and named in an Unread error, returned with the objects.
func Read(ctx context.Context, cfg *rest.Config, namespace string) ([]*manifest.Object, error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	pb := rest.CopyConfig(cfg)
	pb.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(pb)
	if err != nil {
		return nil, err
	}
	typed := typedListers(cs, namespace)
	doors, err := ServedDoors(cs.Discovery())
	if err != nil {
		return nil, fmt.Errorf("the front doors the API server serves: %w", err)
	}
	all := slices.Clone(Resources)
	for _, gvk := range doors {
		all = append(all, doorResource(gvk))
	}
	// The Ingresses' classes, which may decide where their load balancers send (cluster
	// objects: read whole, whatever the namespace).
	optional := len(Resources)
	classes := []schema.GroupVersionResource{{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses"}}
	if v, err := ServedClassParams(cs.Discovery()); err != nil {
		return nil, fmt.Errorf("the IngressClassParams the API server serves: %w", err)
	} else if v != "" {
		classes = append(classes, kube.IngressClassParamsGVR(v))
	}
	cluster := len(all)
	all = append(all, classes...)
	got := make([][]*manifest.Object, len(all))
	errs := make([]error, len(all))
	var unread Unread
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, r := range all {
		wg.Go(func() {
			switch l, ok := typed[r]; {
			case ok:
				got[i], errs[i] = listTyped(ctx, r, l)
			case i >= cluster:
				got[i], errs[i] = list(ctx, dc.Resource(r))
			default:
				got[i], errs[i] = list(ctx, dc.Resource(r).Namespace(namespace))
			}
			if i >= optional && apierrors.IsForbidden(errs[i]) {
				mu.Lock()
				unread = append(unread, r.GroupResource())
				mu.Unlock()
				errs[i] = nil
			}
			if errs[i] != nil {
				errs[i] = fmt.Errorf("listing %s: %w", r.GroupResource(), errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	objs := slices.Concat(got...)
	slices.SortStableFunc(objs, func(a, b *manifest.Object) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
	})
	if len(unread) > 0 {
		slices.SortFunc(unread, func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
		return objs, unread
	}
	return objs, nil
}

// typedLister lists one page of a built-in resource: its items, and the continue token.
type typedLister func(ctx context.Context, opts metav1.ListOptions) ([]runtime.Object, string, error)

// listerOf makes a typedLister of a typed client's List.
func listerOf[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error)) typedLister {
	return func(ctx context.Context, opts metav1.ListOptions) ([]runtime.Object, string, error) {
		l, err := list(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, "", err
		}
		acc, err := meta.ListAccessor(l)
		if err != nil {
			return nil, "", err
		}
		return items, acc.GetContinue(), nil
	}
}

// typedListers are the typed clients of Resources, by resource.
func typedListers(cs kubernetes.Interface, ns string) map[schema.GroupVersionResource]typedLister {
	return map[schema.GroupVersionResource]typedLister{
		Resources[0]: listerOf(cs.AppsV1().Deployments(ns).List),
		Resources[1]: listerOf(cs.AppsV1().StatefulSets(ns).List),
		Resources[2]: listerOf(cs.AppsV1().DaemonSets(ns).List),
		Resources[3]: listerOf(cs.CoreV1().Services(ns).List),
		Resources[4]: listerOf(cs.PolicyV1().PodDisruptionBudgets(ns).List),
		Resources[5]: listerOf(cs.AutoscalingV2().HorizontalPodAutoscalers(ns).List),
		Resources[6]: listerOf(cs.NetworkingV1().Ingresses(ns).List),
	}
}

// listTyped reads one built-in resource page by page and makes each item the value a
// JSON list would have given.
func listTyped(ctx context.Context, r schema.GroupVersionResource, l typedLister) ([]*manifest.Object, error) {
	var objs []*manifest.Object
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		items, cont, err := l(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			v, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
			if err != nil {
				return nil, err
			}
			u := unstructured.Unstructured{Object: v}
			u.SetAPIVersion(r.GroupVersion().String())
			k, _ := kube.KindOfResource(r.Group, r.Resource) // typed lists leave their items' kind empty
			u.SetKind(k.Kind)
			o, err := object(&u)
			if err != nil {
				return nil, err
			}
			objs = append(objs, o)
		}
		if opts.Continue = cont; cont == "" {
			return objs, nil
		}
	}
}

// object makes the manifest object of u, without its status and managedFields.
func object(u *unstructured.Unstructured) (*manifest.Object, error) {
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	return manifest.FromValue(Prefix+u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName(), u.Object)
}

// list reads one resource, page by page.
func list(ctx context.Context, ri dynamic.ResourceInterface) ([]*manifest.Object, error) {
	var objs []*manifest.Object
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		page, err := ri.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range page.Items {
			o, err := object(&page.Items[i])
			if err != nil {
				return nil, err
			}
			objs = append(objs, o)
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return objs, nil
		}
	}
}
