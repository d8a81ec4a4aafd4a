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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

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
}

// Optional are listed too where the cluster serves them: the Prometheus operator's
// monitors, which tell lint that a Service is only scraped.
var Optional = []schema.GroupVersionResource{
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"},
	{Group: "monitoring.coreos.com", Version: "v1", Resource: "podmonitors"},
}

// pageSize bounds one list call: a fleet of thousands of namespaces is read in pages.
const pageSize = 500

// Prefix starts the name Read gives each object in place of a file: live:Kind/namespace/name.
const Prefix = "live:"

// Read lists Resources in namespace ("" for every namespace) and returns them as
// manifest objects, sorted by namespace, kind and name. Each is named
// live:Kind/namespace/name, line 1; status and managedFields are dropped. The resources
// are listed side by side, each page turned into objects as it arrives.
func Read(ctx context.Context, cfg *rest.Config, namespace string) ([]*manifest.Object, error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	all := append(slices.Clone(Resources), Optional...)
	got := make([][]*manifest.Object, len(all))
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, r := range all {
		wg.Go(func() {
			got[i], errs[i] = list(ctx, dc.Resource(r).Namespace(namespace))
			if errs[i] != nil && i >= len(Resources) && apierrors.IsNotFound(errs[i]) {
				got[i], errs[i] = nil, nil // not served here
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
	return objs, nil
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
			u := &page.Items[i]
			unstructured.RemoveNestedField(u.Object, "status")
			unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
			o, err := manifest.FromValue(Prefix+u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName(), u.Object)
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
