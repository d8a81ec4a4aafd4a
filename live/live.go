package live

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

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
// live:Kind/namespace/name, line 1; status and managedFields are dropped.
func Read(ctx context.Context, cfg *rest.Config, namespace string) ([]*manifest.Object, error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	var items []unstructured.Unstructured
	for i, r := range append(slices.Clone(Resources), Optional...) {
		opts := metav1.ListOptions{Limit: pageSize}
		for {
			list, err := dc.Resource(r).Namespace(namespace).List(ctx, opts)
			if err != nil && i >= len(Resources) && apierrors.IsNotFound(err) {
				break // not served here
			}
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", r.GroupResource(), err)
			}
			items = append(items, list.Items...)
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	slices.SortStableFunc(items, func(a, b unstructured.Unstructured) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetKind()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetKind()+"/"+b.GetName())
	})
	objs := make([]*manifest.Object, 0, len(items))
	for i := range items {
		u := &items[i]
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		data, err := json.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		name := Prefix + u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		read, err := manifest.Read(name, data)
		if err != nil {
			return nil, err
		}
		objs = append(objs, read...)
	}
	return objs, nil
}
