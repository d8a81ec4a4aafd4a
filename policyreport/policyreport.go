package policyreport

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nap-k8s/nap/kube"
	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// The formats, in the order writer.Detect prefers them.
var (
	OpenReports = Format{GroupVersion: schema.GroupVersion{Group: "openreports.io", Version: "v1alpha1"}, Kind: "Report", Resource: "reports", TopSource: true}
	WGPolicy    = Format{GroupVersion: schema.GroupVersion{Group: "wgpolicyk8s.io", Version: "v1alpha2"}, Kind: "PolicyReport", Resource: "policyreports"}
	Formats     = []Format{OpenReports, WGPolicy}
)

// The report's name in each namespace, its source, and the label that marks nap's.
const (
	Name         = "nap"
	Source       = "nap"
	ManagedLabel = kube.ManagedByLabel
	ManagedBy    = "nap"
	Category     = "zero-downtime termination"
)

// The severities nap gives: High where the pods get no delay at all, Medium where the
// delay they get falls short.
const (
	High   = "high"
	Medium = "medium"
)

// The outcomes of a result: what is unprotected fails; a workload's terminations
// (Terminations.Outcome) pass, warn or fail.
const (
	Pass = "pass"
	Warn = "warn"
	Fail = "fail"
)

// Result is one workload's finding of one kind.
type Result struct {
	Workload corev1.ObjectReference
	Policy   string // what is wrong: the Reporter's reason or lint's check ID
	Severity string // high or medium
	Outcome  string // Pass, Warn or Fail; "": Fail
	Message  string
	// Properties say more: the pods it was found on, a hook's cause.
	Properties map[string]string
}

// Report is namespace's report of results in format f: results sorted, each a failure
// unless it says otherwise (nap reports what is unprotected, and what terminations
// said), no timestamps (a report that did not change is the same object).
func Report(f Format, namespace string, results []Result) *unstructured.Unstructured {
	results = slices.Clone(results)
	slices.SortFunc(results, func(a, b Result) int {
		return cmp.Or(strings.Compare(a.Workload.Kind, b.Workload.Kind), strings.Compare(a.Workload.Name, b.Workload.Name), strings.Compare(a.Policy, b.Policy))
	})
	rep := openreports.Report{Source: Source}
	for _, r := range results {
		outcome := cmp.Or(r.Outcome, Fail)
		switch outcome {
		case Pass:
			rep.Summary.Pass++
		case Warn:
			rep.Summary.Warn++
		default:
			rep.Summary.Fail++
		}
		rep.Results = append(rep.Results, openreports.ReportResult{
			Source: Source, Policy: r.Policy, Category: Category, Severity: openreports.ResultSeverity(r.Severity),
			Result: openreports.Result(outcome), Subjects: []corev1.ObjectReference{r.Workload}, Description: r.Message, Properties: r.Properties,
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

// Parse is the results of a report nap wrote (either format): what Report was given,
// each with its outcome.
func Parse(u *unstructured.Unstructured) ([]Result, error) {
	var rep openreports.Report
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &rep); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	var out []Result
	for _, r := range rep.Results {
		res := Result{Policy: r.Policy, Severity: string(r.Severity), Outcome: string(r.Result), Message: r.Description, Properties: r.Properties}
		if len(r.Subjects) > 0 {
			res.Workload = r.Subjects[0]
		}
		out = append(out, res)
	}
	return out, nil
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
