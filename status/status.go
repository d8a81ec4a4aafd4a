package status

import (
	"slices"
	"strings"
	"time"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/lint"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/scope"
)

// Means is how a workload's pods get their preStop delay.
type Means string

const (
	Native Means = "native sleep" // lifecycle.preStop.sleep
	Binary Means = "nap binary"   // an exec hook running nap
	// Adaptive is nap's adaptive wait: an exec hook running nap that ends when the
	// pod's traffic has.
	Adaptive Means = "nap adaptive"
	Webhook  Means = "nap webhook" // none in the template; nap's webhook adds it to each pod
	OwnHook  Means = "own hook"    // another exec or httpGet hook
	None     Means = "none"
)

// Event is a FailedPreStopHook event of a pod.
type Event struct {
	Namespace, Pod, Message string
	Time                    time.Time
}

// Input is what Compute judges.
type Input struct {
	Objects []*manifest.Object
	// NamespaceLabels are the labels of the namespaces that have any of nap's
	// (scope.InjectLabel, scope.Label).
	NamespaceLabels map[string]map[string]string
	// WebhookInstalled tells whether nap's webhook is registered: opting in protects
	// nothing without it. Scope is the scope it was installed with.
	WebhookInstalled bool
	Scope            scope.Scope
	Events           []Event
	Lint             lint.Options
	// Terminations are what nap's controller counted of each workload's terminations
	// (its reports' terminations results), by kube.Workload.String() (no APIVersion).
	Terminations map[string]policyreport.Terminations
}

// Workload is one Service-backed workload's coverage.
type Workload struct {
	Namespace string   `json:"namespace"`
	Kind      string   `json:"kind"`
	Name      string   `json:"name"`
	Means     Means    `json:"means"`
	Safe      bool     `json:"safe"`
	Reasons   []string `json:"reasons,omitempty"` // why not safe: "check-id: message"
	// FailedPreStopHooks counts its pods' FailedPreStopHook events; LastFailure is the
	// latest one's message (the cause: no shell, no binary, ...).
	FailedPreStopHooks int    `json:"failedPreStopHooks,omitempty"`
	LastFailure        string `json:"lastFailure,omitempty"`
	// FailureCause is LastFailure's cause; when the event gives none (the kubelet's
	// own never does), what the workload's hook runs.
	FailureCause string `json:"failureCause,omitempty"`
	// Terminations is what its terminations said, as nap's controller counted them
	// (none: none counted); NotObserved, why none can be: its delay runs no nap binary
	// to see them.
	Terminations *policyreport.Terminations `json:"terminations,omitempty"`
	NotObserved  string                     `json:"notObserved,omitempty"`
}

// Namespace is one namespace's coverage.
type Namespace struct {
	Name        string     `json:"name"`
	Workloads   []Workload `json:"workloads"`
	Safe        int        `json:"safe"`
	Unprotected int        `json:"unprotected"`
}

// Report is the whole cluster's coverage.
type Report struct {
	Namespaces  []Namespace   `json:"namespaces"`
	Workloads   int           `json:"workloads"`
	Safe        int           `json:"safe"`
	Unprotected int           `json:"unprotected"`
	ByMeans     map[Means]int `json:"byMeans"` // safe workloads by means
}

// reasonChecks are the lint checks whose findings mean the pods may drop requests when
// they terminate: the termination path and hooks that cannot run.
var reasonChecks = map[string]bool{
	lint.NoReadinessProbe: true, lint.NoPreStopDelay: true, lint.PreStopNeedsShell: true,
	lint.GracePeriodTooShort: true, lint.NativeSleepExceedsGrace: true, lint.NativeSleepUnsupported: true,
	lint.NapVolumeNotExecutable: true, lint.NapArchMismatch: true, lint.NapVolumeMissing: true, lint.NapOnWindows: true,
	lint.DelayBelowPath:     true, // with a calibration (napctl status --calibration)
	lint.AdaptiveMissesPool: true,
}

// webhookWaives are the findings on a template that nap's webhook mends in each pod.
var webhookWaives = map[string]bool{lint.NoPreStopDelay: true, lint.GracePeriodTooShort: true}

// Compute judges every Service-backed workload of in.Objects.
func Compute(in Input) Report {
	workloads := lint.Workloads(in.Objects)
	reasons := map[string][]lint.Finding{}
	for _, f := range lint.CheckWorkloads(workloads, in.Lint) {
		if reasonChecks[f.ID] {
			reasons[f.Object] = append(reasons[f.Object], f)
		}
	}
	byNS := map[string]*Namespace{}
	r := Report{ByMeans: map[Means]int{}}
	for _, w := range workloads {
		if !w.BehindService() {
			continue
		}
		s := Workload{Namespace: w.Obj.Namespace, Kind: w.Obj.Kind, Name: w.Obj.Name, Means: means(w)}
		if s.Means == None {
			if d := decide(in, w); d.Inject && in.WebhookInstalled {
				s.Means = Webhook
			} else if d.Inject {
				s.Reasons = append(s.Reasons, "opted in to nap's webhook, which is not installed")
			}
		}
		for _, f := range reasons[w.Obj.Ref()] {
			if s.Means == Webhook && webhookWaives[f.ID] {
				continue
			}
			s.Reasons = append(s.Reasons, f.ID+": "+f.Message)
		}
		s.Safe = s.Means != None && len(s.Reasons) == 0
		var last time.Time
		for _, e := range in.Events {
			if e.Namespace == s.Namespace && kube.PodOf(s.Kind, s.Name, e.Pod) {
				s.FailedPreStopHooks++
				if !e.Time.Before(last) {
					last, s.LastFailure = e.Time, e.Message
				}
			}
		}
		if s.FailedPreStopHooks > 0 {
			s.FailureCause = hook.Explain(s.LastFailure, w.PodSpec)
		}
		s.Terminations, s.NotObserved = observed(in, s)
		ns := byNS[s.Namespace]
		if ns == nil {
			ns = &Namespace{Name: s.Namespace, Workloads: []Workload{}}
			byNS[s.Namespace] = ns
		}
		ns.Workloads = append(ns.Workloads, s)
		r.Workloads++
		if s.Safe {
			ns.Safe++
			r.Safe++
			r.ByMeans[s.Means]++
		} else {
			ns.Unprotected++
			r.Unprotected++
		}
	}
	for _, ns := range byNS {
		slices.SortFunc(ns.Workloads, func(a, b Workload) int { return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name) })
		r.Namespaces = append(r.Namespaces, *ns)
	}
	slices.SortFunc(r.Namespaces, func(a, b Namespace) int { return strings.Compare(a.Name, b.Name) })
	return r
}

// observed is what the workload's terminations said, as nap's controller counted them,
// or why nothing can be: its delay runs no nap binary to see them.
func observed(in Input, s Workload) (*policyreport.Terminations, string) {
	if t, ok := in.Terminations[kube.Workload{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}.String()]; ok {
		return &t, ""
	}
	switch s.Means {
	case Native:
		return nil, "the native sleep runs no nap binary: nothing sees the pod's traffic at its end"
	case OwnHook:
		return nil, "its own hook runs no nap binary: nothing sees the pod's traffic at its end"
	}
	return nil, ""
}

// means is how the workload's serving containers get their delay: the first container
// with a preStop hook decides.
func means(w *lint.Workload) Means {
	h, _ := hook.First(w.PodSpec)
	switch h.Kind {
	case hook.None:
		return None
	case hook.NativeSleep:
		return Native
	case hook.Nap:
		if h.Adaptive() {
			return Adaptive
		}
		return Binary
	}
	return OwnHook
}

// decide is scope.Decide for the workload's pods, as the webhook would decide them when
// its controller creates them: their template's labels; a Service selects them (status
// judges only Service-backed workloads).
func decide(in Input, w *lint.Workload) scope.Decision {
	d, _ := scope.Decide(scope.Input{Installed: in.Scope, NamespaceLabels: in.NamespaceLabels[w.Obj.Namespace],
		Pod:       scope.Pod{Labels: w.Labels, RestartPolicy: w.PodSpec.RestartPolicy},
		Selecting: func() (string, bool, error) { return w.Services[0].Name, true, nil }})
	return d
}
