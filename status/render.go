package status

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/lint"
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

// BareFailure is the whole message of the kubelet's FailedPreStopHook event (1.34 and
// 1.37 alike): it leaves the error out, so that no secret of a hook leaks into events.
const BareFailure = "PreStopHook failed"

// Cause is the part of a FailedPreStopHook message that says what went wrong: the
// runtime's description after a preamble ("exec: \"/bin/sh\": stat /bin/sh: no such
// file or directory"), or the whole message.
func Cause(msg string) string {
	for _, sep := range []string{"desc = ", "failed - error: ", "failed - "} {
		if i := strings.LastIndex(msg, sep); i >= 0 {
			return msg[i+len(sep):]
		}
	}
	return msg
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// HookKind says what a pod's first preStop hook runs: "shell" (sh, bash, or a sleep
// binary the image must have), "nap", "exec" (another command), "http", "native-sleep",
// or "" for none.
func HookKind(spec corev1.PodSpec) string {
	for _, c := range spec.Containers {
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
			continue
		}
		h := c.Lifecycle.PreStop
		switch {
		case h.Sleep != nil:
			return "native-sleep"
		case h.HTTPGet != nil:
			return "http"
		case h.Exec != nil && len(h.Exec.Command) > 0:
			switch base := path.Base(h.Exec.Command[0]); {
			case base == kube.BinaryName:
				return "nap"
			case lint.NeedsShell(h.Exec.Command):
				return "shell"
			}
			return "exec"
		}
	}
	return ""
}

// failureCause is what a workload's latest FailedPreStopHook says went wrong, or, when
// the event gives no reason (the kubelet's own, BareFailure), what its hook runs.
func failureCause(msg string, spec corev1.PodSpec) string {
	if strings.TrimSpace(msg) != BareFailure {
		return Cause(msg)
	}
	var cmd string
	for _, c := range spec.Containers {
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Exec != nil {
			cmd = strings.Join(c.Lifecycle.PreStop.Exec.Command, " ")
			break
		}
	}
	switch HookKind(spec) {
	case "shell":
		return fmt.Sprintf("the kubelet gives no reason; the hook runs %q, which needs a shell or sleep binary the image may not have", cmd)
	case "nap":
		return fmt.Sprintf("the kubelet gives no reason; the hook runs %q: is the nap ConfigMap mounted there?", cmd)
	case "exec":
		return fmt.Sprintf("the kubelet gives no reason; the hook runs %q", cmd)
	case "http":
		return "the kubelet gives no reason; the hook is an httpGet"
	}
	return "the kubelet gives no reason"
}
