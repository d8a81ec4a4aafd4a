package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/lint"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/wait"
)

// Reason is why a workload's pods may drop requests when they terminate, as the Reporter
// finds it on live pods.
type Reason string

const (
	// NotInjected: the webhook should have given the pod a delay (opted in, or the
	// default policy and a Service selects it) and the pod has none: it was admitted
	// while the webhook was down, unreachable or not yet trusted (failurePolicy Ignore).
	NotInjected Reason = "not-injected"
	// DelayExceedsGrace: the grace period does not cover the preStop delay and a drain
	// (lint's grace-period-too-short and native-sleep-exceeds-grace): the kubelet kills
	// the container mid-sleep or mid-drain.
	DelayExceedsGrace Reason = "delay-exceeds-grace"
	// NativeSleepUnsupported: the native sleep action on a node whose kubelet does not
	// have it (before 1.30; lint's native-sleep-unsupported): the hook fails and the
	// container stops at once.
	NativeSleepUnsupported Reason = "native-sleep-unsupported"
	// Refused: the pod has no delay because the webhook leaves it unchanged on purpose
	// (a bad nap.dev/delay or nap.dev/wait, the pod's own nap volume, an architecture
	// without a binary...; Injector.Refusal says why): rolling it would not help, and
	// it is never rolled.
	Refused Reason = "refused"
	// FailedPreStopHook: the kubelet reported that a pod's preStop hook failed.
	FailedPreStopHook Reason = "failed-prestop-hook"
	// DelayBelowPath: by the calibration kept in the cluster, a path that reaches the
	// pods (a LoadBalancer Service or an Ingress added after they were admitted) sends
	// to them for longer than their hook holds them (lint's delay-below-path): a rollout
	// gives the new pods the longer wait.
	DelayBelowPath Reason = "delay-below-path"
	// AdaptiveMissesPool: the pods' adaptive wait watches new connections alone, and a
	// client that pools its connections reaches them (traffic.Need.MissesPool: an
	// application load balancer with the pods as targets): the wait can end while that
	// client still sends. Admitted before the path existed, or under the
	// MutatingAdmissionPolicy, which cannot read Services; needs no calibration.
	AdaptiveMissesPool Reason = "adaptive-misses-pool"
)

// reasons are every Reason, each with the Warning event the Reporter puts on a workload
// for it and, for those nap_pods_unprotected counts (all but FailedPreStopHook, which
// nap_prestop_hook_failures counts), what it means in that metric's help.
//
// A path's reason is one whose remedy is a roll (roll: what the Reporter adds to lint's
// finding, what gives the pods the wait their paths need now): the pods were admitted
// before their paths were what they are. A path's change (a calibration stored, a
// learned route raised, a front door added) gives it to every workload the path
// reaches at once: one change, as many findings as workloads. Its events are told from
// the pace's spare tokens alone, after the workloads' own findings, and never booked
// for later (events.go); the finding stays in nap_pods_unprotected, the namespace's
// Report and napctl status.
var reasons = []struct {
	reason Reason
	event  string
	help   string
	roll   string
}{
	{NotInjected, "NapNotInjected", "admitted while the webhook was down", ""},
	{Refused, "NapRefused", "the webhook leaves them unchanged: a bad annotation, their own nap volume...", ""},
	{DelayExceedsGrace, "NapDelayExceedsGrace", "the grace period does not cover the delay and a drain", ""},
	{NativeSleepUnsupported, "NapNativeSleepUnsupported", "a native sleep their kubelet lacks", ""},
	{DelayBelowPath, "NapDelayBelowPath", "a path that reaches them sends longer than their hook holds",
		"; roll the workload (nap's webhook gives new pods the wait of their paths)"},
	{AdaptiveMissesPool, "NapAdaptiveMissesPool", "an adaptive wait blind to a client that pools its connections",
		fmt.Sprintf("; roll the workload (nap's webhook gives new pods --%s %s), or, under the MutatingAdmissionPolicy, which cannot read Services, give the fleet's wait --%s %s (napctl install)",
			wait.FlagRequests, wait.Arg(wait.PooledRequests), wait.FlagRequests, wait.Arg(wait.PooledRequests))},
	{FailedPreStopHook, "NapFailedPreStopHook", "", ""},
}

// rollRemedy are the paths' reasons (see reasons) and what the Reporter adds to lint's
// finding of each.
var rollRemedy = func() map[Reason]string {
	m := map[Reason]string{}
	for _, r := range reasons {
		if r.roll != "" {
			m[r.reason] = r.roll
		}
	}
	return m
}()

// eventReasons are the Warning events the Reporter puts on workloads, by reason.
var eventReasons = func() map[Reason]string {
	m := map[Reason]string{}
	for _, r := range reasons {
		m[r.reason] = r.event
	}
	return m
}()

// unprotectedHelp is nap_pods_unprotected's help: every reason it counts, said.
func unprotectedHelp() string {
	var b strings.Builder
	b.WriteString("Pods that may drop requests when they terminate, by namespace and reason:")
	sep := " "
	for _, r := range reasons {
		if r.help != "" {
			fmt.Fprintf(&b, "%s%s (%s)", sep, r.reason, r.help)
			sep = ", "
		}
	}
	return b.String() + "."
}

// reasonOfCheck are lint's termination checks the Reporter runs on live pods, and the
// reason each finding is reported under.
var reasonOfCheck = map[string]Reason{
	lint.GracePeriodTooShort:     DelayExceedsGrace,
	lint.NativeSleepExceedsGrace: DelayExceedsGrace,
	lint.NativeSleepUnsupported:  NativeSleepUnsupported,
	lint.DelayBelowPath:          DelayBelowPath,
	lint.AdaptiveMissesPool:      AdaptiveMissesPool,
}

// reporterChecks are reasonOfCheck's IDs, listed once (the scan runs them on every pod).
var reporterChecks = slices.Sorted(maps.Keys(reasonOfCheck))

// Finding is one workload's problem of one reason.
type Finding struct {
	Workload kube.Workload
	Reason   Reason
	Pods     []string // the pods it was found on (for FailedPreStopHook: named in events)
	Cause    string   // FailedPreStopHook: what went wrong (hook.CauseLabel)
	Message  string
}

type findingKey struct {
	workload kube.Workload
	reason   Reason
	cause    string
}

// sortFindings sorts findings by workload, reason and cause, taken as one string made
// once for each.
func sortFindings(fs []Finding) []Finding {
	type keyed struct {
		key string
		f   Finding
	}
	ks := make([]keyed, len(fs))
	for i, f := range fs {
		ks[i] = keyed{f.Workload.String() + string(f.Reason) + f.Cause, f}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for i := range ks {
		fs[i] = ks[i].f
	}
	return fs
}

// addFinding adds pod (if any) to the finding of key, made with msg if new.
func addFinding(byKey map[findingKey]*Finding, k findingKey, pod, msg string) {
	f := byKey[k]
	if f == nil {
		f = &Finding{Workload: k.workload, Reason: k.reason, Cause: k.cause, Message: msg}
		byKey[k] = f
	}
	if pod != "" && !slices.Contains(f.Pods, pod) {
		f.Pods = append(f.Pods, pod)
	}
}

// Results are the findings as policy report results, by namespace: one per workload,
// reason and cause.
func Results(found []Finding) map[string][]policyreport.Result {
	out := map[string][]policyreport.Result{}
	for _, f := range found {
		severity := policyreport.Medium
		if f.Reason == NotInjected || f.Reason == Refused || f.Reason == FailedPreStopHook {
			severity = policyreport.High // no delay at all
		}
		props := map[string]string{"pods": fmt.Sprint(len(f.Pods))}
		if f.Cause != "" {
			props["cause"] = f.Cause
		}
		out[f.Workload.Namespace] = append(out[f.Workload.Namespace], policyreport.Result{
			Workload: f.Workload.Reference(), Policy: string(f.Reason), Severity: severity, Message: f.Message, Properties: props})
	}
	return out
}
