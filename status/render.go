package status

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Text writes the report for a person: a line per Service-backed workload, the
// unprotected ones with their reasons, the failed hooks, then the totals.
func Text(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tWORKLOAD\tMEANS\tSAFE\tFAILED PRESTOP HOOKS")
	for _, ns := range r.Namespaces {
		for _, wl := range ns.Workloads {
			safe, failed := "yes", ""
			if !wl.Safe {
				safe = "NO"
			}
			if wl.FailedPreStopHooks > 0 {
				failed = fmt.Sprintf("%d, last: %s", wl.FailedPreStopHooks, oneLine(wl.FailureCause))
			}
			fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\n", ns.Name, wl.Kind, wl.Name, wl.Means, safe, failed)
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
		}
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

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
