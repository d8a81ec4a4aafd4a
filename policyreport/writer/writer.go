package writer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/policyreport"
)

// Detect is the format the API server serves (OpenReports first), or ok false.
func Detect(d discovery.DiscoveryInterface) (f policyreport.Format, ok bool, err error) {
	for _, f := range policyreport.Formats {
		l, err := d.ServerResourcesForGroupVersion(f.GroupVersion.String())
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return policyreport.Format{}, false, fmt.Errorf("asking the API server for %s: %w", f.GroupVersion, err)
		}
		for _, r := range l.APIResources {
			if r.Name == f.Resource {
				return f, true, nil
			}
		}
	}
	return policyreport.Format{}, false, nil
}

// content is what a report says, for comparing one written with one wanted.
func content(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" && k != "apiVersion" && k != "kind" {
			out[k] = v
		}
	}
	b, _ := json.Marshal(out) // the API server's and ours, in the same JSON form
	var norm map[string]any
	json.Unmarshal(b, &norm)
	return norm
}

// Writer keeps one report per namespace current. Its methods may be called at once.
type Writer struct {
	Client client.Client
	Format policyreport.Format
	// Owners are the owners every report names (the installation's ClusterRole, as the
	// published ConfigMaps do): uninstalling nap removes its reports. A report an
	// earlier run wrote without them is written again at the next sync.
	Owners []metav1.OwnerReference

	mu      sync.Mutex
	written map[string]map[string]any // namespace → content, as last written or read
}

func (w *Writer) list() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion(w.Format.GroupVersion.String())
	l.SetKind(w.Format.Kind + "List")
	return l
}

// Sync makes the reports say results (by namespace): created, updated where they
// differ, deleted where a namespace has none left; nothing written where nothing
// changed. The first call of Sync or SyncNamespace reads what an earlier run wrote.
func (w *Writer) Sync(ctx context.Context, byNamespace map[string][]policyreport.Result) error {
	if err := w.read(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	namespaces := slices.Collect(maps.Keys(w.written))
	w.mu.Unlock()
	for ns := range byNamespace {
		namespaces = append(namespaces, ns)
	}
	slices.Sort(namespaces)
	var errs []error
	for _, ns := range slices.Compact(namespaces) {
		if err := w.SyncNamespace(ctx, ns, byNamespace[ns]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("writing %s: %v", w.Format.Resource, errs)
	}
	return nil
}

// SyncNamespace makes namespace ns's report say results: created, updated where it
// differs, deleted when there are none; nothing written when nothing changed.
func (w *Writer) SyncNamespace(ctx context.Context, ns string, results []policyreport.Result) error {
	if err := w.read(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	have, ok := w.written[ns]
	w.mu.Unlock()
	if len(results) == 0 {
		if !ok {
			return nil
		}
		if err := w.Client.Delete(ctx, policyreport.Report(w.Format, ns, nil)); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		w.Forget(ns)
		return nil
	}
	want := policyreport.Report(w.Format, ns, results)
	want.SetOwnerReferences(w.Owners)
	c := content(want)
	if ok && reflect.DeepEqual(have, c) {
		return nil
	}
	if err := w.put(ctx, want); err != nil {
		return err
	}
	w.mu.Lock()
	w.written[ns] = c
	w.mu.Unlock()
	return nil
}

// Forget drops what the Writer knows of namespace ns's report, without a write: the
// namespace is gone, and its report with it.
func (w *Writer) Forget(ns string) {
	w.mu.Lock()
	delete(w.written, ns)
	w.mu.Unlock()
}

// Read is what the reports an earlier run wrote say, by namespace (read once, as the
// first Sync does): the Reporter takes up the terminations they count.
func (w *Writer) Read(ctx context.Context) (map[string][]policyreport.Result, error) {
	if err := w.read(ctx); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string][]policyreport.Result, len(w.written))
	var errs []error
	for ns, c := range w.written {
		u := &unstructured.Unstructured{Object: maps.Clone(c)}
		delete(u.Object, unowned)
		u.SetNamespace(ns)
		rs, err := policyreport.Parse(u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[ns] = rs
	}
	return out, errors.Join(errs...)
}

// read reads, once, the reports an earlier run wrote.
func (w *Writer) read(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written != nil {
		return nil
	}
	l := w.list()
	if err := w.Client.List(ctx, l, client.MatchingLabels{policyreport.ManagedLabel: policyreport.ManagedBy}); err != nil {
		return fmt.Errorf("listing %s: %w", w.Format.Resource, err)
	}
	w.written = map[string]map[string]any{}
	for i := range l.Items {
		if l.Items[i].GetName() == policyreport.Name {
			c := content(&l.Items[i])
			if !w.owned(&l.Items[i]) {
				c = maps.Clone(c)
				c[unowned] = true // differs from what any sync wants: written again
			}
			w.written[l.Items[i].GetNamespace()] = c
		}
	}
	return nil
}

// unowned marks the content of a report that lacks the Writer's owners.
const unowned = "nap.dev/unowned"

// owned tells whether u names every owner of the Writer's.
func (w *Writer) owned(u *unstructured.Unstructured) bool {
	for _, want := range w.Owners {
		if !slices.ContainsFunc(u.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == want.UID }) {
			return false
		}
	}
	return true
}

// put creates want, or updates the report there.
func (w *Writer) put(ctx context.Context, want *unstructured.Unstructured) error {
	err := w.Client.Create(ctx, want)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(w.Format.GroupVersion.WithKind(w.Format.Kind))
	if err := w.Client.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		return err
	}
	want.SetResourceVersion(have.GetResourceVersion())
	return w.Client.Update(ctx, want)
}
