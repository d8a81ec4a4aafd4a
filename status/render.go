package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/policyreport"
)

// Text writes the report for a person: a line per Service-backed workload, the
// unprotected ones with their reasons, the failed hooks, then the totals.
func Text(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tWORKLOAD\tMEANS\tSAFE\tTERMINATIONS\tFAILED PRESTOP HOOKS")
	notObserved := 0
	for _, ns := range r.Namespaces {
		for _, wl := range ns.Workloads {
			safe, terminations, failed := "yes", "", ""
			if !wl.Safe {
				safe = "NO"
			}
			switch {
			case wl.Terminations != nil:
				terminations = wl.Terminations.Short()
			case wl.NotObserved != "":
				terminations = "not observed"
				notObserved++
			}
			if wl.FailedPreStopHooks > 0 {
				failed = fmt.Sprintf("%d, last: %s", wl.FailedPreStopHooks, oneLine(wl.FailureCause))
			}
			fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%s\n", ns.Name, wl.Kind, wl.Name, wl.Means, safe, terminations, failed)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, ns := range r.Namespaces {
		for _, wl := range ns.Workloads {
			for _, reason := range wl.Reasons {
				fmt.Fprintf(w, "%s %s/%s: %s\n", ns.Name, wl.Kind, wl.Name, reason)
			}
			if t := wl.Terminations; t != nil && t.Outcome() != policyreport.Pass {
				fmt.Fprintf(w, "%s %s/%s: %s\n", ns.Name, wl.Kind, wl.Name, t)
			}
		}
	}
	if notObserved > 0 {
		fmt.Fprintf(w, "%d workloads' terminations not observed: the native sleep and hooks of their own run no nap binary to see the pod's traffic at its end (napctl inject --mode binary, or the adaptive wait, gives each a verdict)\n", notObserved)
	}
	var means []string
	for m, n := range r.ByMeans {
		means = append(means, fmt.Sprintf("%s %d", m, n))
	}
	slices.Sort(means)
	_, err := fmt.Fprintf(w, "%d Service-backed workloads in %d namespaces: %d safe (%s), %d unprotected\n",
		r.Workloads, len(r.Namespaces), r.Safe, strings.Join(means, ", "), r.Unprotected)
	return err
}

// JSON writes the report as indented JSON.
func JSON(w io.Writer, r Report) error {
	if r.Namespaces == nil {
		r.Namespaces = []Namespace{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// YAML is the report as JSON writes it, in YAML (kubectl's -o yaml).
func YAML(w io.Writer, r Report) error {
	var b bytes.Buffer
	if err := JSON(&b, r); err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(b.Bytes())
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// PolicyResults are r's unprotected workloads as policy report results, by namespace:
// one per reason (lint's check ID; not-installed-webhook; failed-prestop-hook), and
// one per workload whose terminations nap's controller counted, the vocabulary of the
// controller's reports where they overlap.
func PolicyResults(r Report) map[string][]policyreport.Result {
	out := map[string][]policyreport.Result{}
	for _, ns := range r.Namespaces {
		for _, w := range ns.Workloads {
			ref := kube.Workload{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}.Reference()
			if w.Terminations != nil {
				out[w.Namespace] = append(out[w.Namespace], w.Terminations.Result(ref))
			}
			if w.Safe {
				continue
			}
			severity := policyreport.Medium
			if w.Means == None || w.FailedPreStopHooks > 0 {
				severity = policyreport.High // no delay at all
			}
			props := map[string]string{"means": string(w.Means)}
			for _, reason := range w.Reasons {
				policy, msg, ok := strings.Cut(reason, ": ")
				if !ok {
					policy, msg = "webhook-not-installed", reason
				}
				out[w.Namespace] = append(out[w.Namespace], policyreport.Result{Workload: ref, Policy: policy, Severity: severity, Message: msg, Properties: props})
			}
			if w.FailedPreStopHooks > 0 {
				out[w.Namespace] = append(out[w.Namespace], policyreport.Result{Workload: ref, Policy: "failed-prestop-hook", Severity: policyreport.High, Message: w.LastFailure,
					Properties: map[string]string{"means": string(w.Means), "events": fmt.Sprint(w.FailedPreStopHooks), "cause": w.FailureCause}})
			}
		}
	}
	return out
}

// PolicyReports writes r as policy reports of format f, one YAML document each.
func PolicyReports(w io.Writer, r Report, f policyreport.Format) error {
	for i, rep := range policyreport.Reports(f, PolicyResults(r)) {
		b, err := yaml.Marshal(rep.Object)
		if err != nil {
			return err
		}
		if i > 0 {
			io.WriteString(w, "---\n")
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
