package policyreport

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Format is a kind of report nap can write.
type Format struct {
	GroupVersion schema.GroupVersion
	Kind         string
	Resource     string
	// TopSource: the report names its source at the top (OpenReports), not only in
	// each result.
	TopSource bool
}

// The formats, in the order Detect prefers them.
var (
	OpenReports = Format{GroupVersion: schema.GroupVersion{Group: "openreports.io", Version: "v1alpha1"}, Kind: "Report", Resource: "reports", TopSource: true}
	WGPolicy    = Format{GroupVersion: schema.GroupVersion{Group: "wgpolicyk8s.io", Version: "v1alpha2"}, Kind: "PolicyReport", Resource: "policyreports"}
	Formats     = []Format{OpenReports, WGPolicy}
)

// The report's name in each namespace, its source, and the label that marks nap's.
const (
	Name         = "nap"
	Source       = "nap"
	ManagedLabel = "app.kubernetes.io/managed-by"
	ManagedBy    = "nap"
	Category     = "zero-downtime termination"
)

// Detect is the format the API server serves (OpenReports first), or ok false.
func Detect(d discovery.DiscoveryInterface) (f Format, ok bool, err error) {
	for _, f := range Formats {
		l, err := d.ServerResourcesForGroupVersion(f.GroupVersion.String())
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return Format{}, false, fmt.Errorf("asking the API server for %s: %w", f.GroupVersion, err)
		}
		for _, r := range l.APIResources {
			if r.Name == f.Resource {
				return f, true, nil
			}
		}
	}
	return Format{}, false, nil
}

// Result is one workload's finding of one kind.
type Result struct {
	Workload corev1.ObjectReference
	Policy   string // what is wrong: the Reporter's reason or lint's check ID
	Severity string // high or medium
	Message  string
	// Properties say more: the pods it was found on, a hook's cause.
	Properties map[string]string
}

// Report is namespace's report of results in format f: results sorted, every one a
// failure (nap reports what is unprotected), no timestamps (a report that did not
// change is the same object).
func Report(f Format, namespace string, results []Result) *unstructured.Unstructured {
	results = slices.Clone(results)
	slices.SortFunc(results, func(a, b Result) int {
		return cmp.Or(strings.Compare(a.Workload.Kind, b.Workload.Kind), strings.Compare(a.Workload.Name, b.Workload.Name), strings.Compare(a.Policy, b.Policy))
	})
	rep := openreports.Report{Source: Source, Summary: openreports.ReportSummary{Fail: len(results)}}
	for _, r := range results {
		rep.Results = append(rep.Results, openreports.ReportResult{
			Source: Source, Policy: r.Policy, Category: Category, Severity: openreports.ResultSeverity(r.Severity),
			Result: "fail", Subjects: []corev1.ObjectReference{r.Workload}, Description: r.Message, Properties: r.Properties,
		})
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&rep)
	if err != nil {
		panic(err) // a struct of strings and ints
	}
	delete(u, "metadata")
	if !f.TopSource {
		delete(u, "source")
	}
	rs, _ := u["results"].([]any)
	for _, r := range rs {
		delete(r.(map[string]any), "timestamp")
	}
	if len(results) == 0 {
		delete(u, "results")
	}
	obj := &unstructured.Unstructured{Object: u}
	obj.SetAPIVersion(f.GroupVersion.String())
	obj.SetKind(f.Kind)
	obj.SetNamespace(namespace)
	obj.SetName(Name)
	obj.SetLabels(map[string]string{ManagedLabel: ManagedBy})
	return obj
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

// Writer keeps one report per namespace current.
type Writer struct {
	Client client.Client
	Format Format

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
// changed. The first Sync reads what an earlier run wrote.
func (w *Writer) Sync(ctx context.Context, byNamespace map[string][]Result) error {
	if w.written == nil {
		l := w.list()
		if err := w.Client.List(ctx, l, client.MatchingLabels{ManagedLabel: ManagedBy}); err != nil {
			return fmt.Errorf("listing %s: %w", w.Format.Resource, err)
		}
		w.written = map[string]map[string]any{}
		for i := range l.Items {
			if l.Items[i].GetName() == Name {
				w.written[l.Items[i].GetNamespace()] = content(&l.Items[i])
			}
		}
	}
	var errs []error
	for ns := range w.written {
		if len(byNamespace[ns]) > 0 {
			continue
		}
		gone := Report(w.Format, ns, nil)
		if err := w.Client.Delete(ctx, gone); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		delete(w.written, ns)
	}
	for ns, results := range byNamespace {
		if len(results) == 0 {
			continue
		}
		want := Report(w.Format, ns, results)
		c := content(want)
		if have, ok := w.written[ns]; ok && reflect.DeepEqual(have, c) {
			continue
		}
		if err := w.put(ctx, want); err != nil {
			errs = append(errs, err)
			continue
		}
		w.written[ns] = c
	}
	if len(errs) > 0 {
		return fmt.Errorf("writing %s: %v", w.Format.Resource, errs)
	}
	return nil
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

// Reports are the reports of results by namespace, for printing (status -o openreports).
func Reports(f Format, byNamespace map[string][]Result) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		if len(byNamespace[ns]) > 0 {
			out = append(out, Report(f, ns, byNamespace[ns]))
		}
	}
	return out
}
