package lint

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// Severity ranks findings.
type Severity int

// The severities.
const (
	Warning Severity = iota + 1
	Error
)

func (s Severity) String() string {
	switch s {
	case Warning:
		return "warning"
	case Error:
		return "error"
	}
	return "unknown"
}

// UnmarshalText reads "warning" or "error", in configuration files.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err == nil {
		*s = v
	}
	return err
}

// MarshalText writes "warning" or "error".
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ParseSeverity reads "warning" or "error".
func ParseSeverity(s string) (Severity, error) {
	switch s {
	case "warning":
		return Warning, nil
	case "error":
		return Error, nil
	}
	return 0, fmt.Errorf("severity %q: want warning or error", s)
}

// The check IDs. They are stable: configurations and ignore annotations name them.
const (
	NoReadinessProbe        = "no-readiness-probe"
	NoPreStopDelay          = "no-prestop-delay"
	PreStopNeedsShell       = "prestop-needs-shell"
	GracePeriodTooShort     = "grace-period-too-short"
	NativeSleepExceedsGrace = "native-sleep-exceeds-grace"
	NativeSleepUnsupported  = "native-sleep-unsupported"
	SingleReplica           = "single-replica"
	RecreateStrategy        = "recreate-strategy"
	RolloutAllAtOnce        = "rollout-all-at-once"
	NoPDB                   = "no-pdb"
	PDBBlocksDrain          = "pdb-blocks-drain"
	LivenessEqualsReadiness = "liveness-equals-readiness"
	NapVolumeNotExecutable  = "nap-volume-not-executable"
	NapArchMismatch         = "nap-arch-mismatch"
	NapVolumeMissing        = "nap-volume-missing"
	AdaptiveAllowTooLow     = "adaptive-allow-below-probes"
	NapOnWindows            = "nap-on-windows"
	NapKeyMissing           = "nap-key-missing"
	GRPCReadiness           = "grpc-readiness"
	DelayBelowPath          = "delay-below-path"
	AdaptiveMissesPool      = "adaptive-misses-pool"
	MeshProxyExitsFirst     = "mesh-proxy-exits-first"
)

// Check is one registered check: it looks at one workload and its linked objects.
type Check struct {
	ID       string
	Title    string
	Severity Severity
	Run      func(c *Context, w *Workload) []Finding
}

// Checks returns every check, by ID: each family's, listed here (no registration as a
// side effect of importing a file).
func Checks() []Check {
	var out []Check
	for _, family := range []func() []Check{terminationChecks, availabilityChecks, napChecks} {
		out = append(out, family()...)
	}
	slices.SortFunc(out, func(a, b Check) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Finding is one problem found.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"-"`
	Object   string   `json:"object"` // Kind/namespace/name (manifest.Object.Ref; JSON: always three parts)
	// Kind, Namespace and Name are Object's parts (Namespace empty when the object names
	// none).
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Container string `json:"container,omitempty"`
	// File and Line are where to change: the workload's, or the object of its that the
	// finding is about (a PodDisruptionBudget in another file).
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// of names o as the finding's object.
func (f *Finding) of(o *manifest.Object) {
	f.Object, f.Kind, f.Namespace, f.Name = o.Ref(), o.Kind, o.Namespace, o.Name
}

// Version is a Kubernetes minor version.
type Version = kube.Version

// ParseVersion reads "1.30" (or "v1.30.2").
func ParseVersion(s string) (Version, error) { return kube.ParseVersion(s) }

// Options configure a run.
type Options struct {
	KubeVersion *Version // the target cluster's version; nil: unknown
	// Nodes are the cluster's nodes with their kubelets; nil: unknown, and a kubelet
	// may be as old as the skew policy allows (kube.OldestKubelet).
	Nodes  []kube.Node
	Config Config
	// Calibration is what napctl calibrate measured on the target cluster (napctl lint
	// --calibration); nil: no delay is held to a path's tail.
	Calibration *traffic.Calibration
	// Waits are the fleet's waits (napctl install's, the controller's): what a pod that
	// an unmeasured path reaches holds at least (traffic.Need.Requires). Zero: nap's
	// defaults.
	Waits wait.Defaults
}

// Context is what checks see besides their workload.
type Context struct {
	Options
}

// DrainMargin is the time, beyond the preStop delay, that the grace period should
// leave the application to finish its requests.
func (c *Context) DrainMargin() time.Duration {
	if c.Config.DrainMargin > 0 {
		return c.Config.DrainMargin
	}
	return 5 * time.Second
}

// IgnoreAnnotation on an object lists check IDs (comma-separated, or "*") not to run on it.
const IgnoreAnnotation = "lint.nap.dev/ignore"

// Lint runs every enabled check on every workload of objs.
func Lint(objs []*manifest.Object, opts Options) []Finding {
	return CheckWorkloads(Workloads(objs), opts)
}

// CheckWorkloads runs every enabled check on workloads that Workloads built: for callers that
// need the workloads too, so that nothing is decoded twice.
func CheckWorkloads(workloads []*Workload, opts Options) []Finding {
	c := &Context{Options: opts}
	checks := Checks()
	var out []Finding
	for _, w := range workloads {
		ignored := ignoredChecks(w.Obj)
		for _, chk := range checks {
			if opts.Config.disabled(chk.ID) || ignored["*"] || ignored[chk.ID] {
				continue
			}
			for _, f := range chk.Run(c, w) {
				f.ID = chk.ID
				f.Severity = opts.Config.severity(chk, f.Severity)
				f.of(w.Obj)
				if f.File == "" { // a finding at another object (a PDB) names its file and line
					f.File, f.Line = w.Obj.File, cmp.Or(f.Line, w.Obj.Line)
				}
				out = append(out, f)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), strings.Compare(a.ID, b.ID), strings.Compare(a.Container, b.Container))
	})
	return out
}

// Pod is one live pod as CheckPod judges it.
type Pod struct {
	Namespace, Name string
	Spec            corev1.PodSpec
	// Services are the Services that select the pod, and Fronts tells which front doors
	// (Ingresses, Gateway API routes) name each: the paths that reach it. Nil: the
	// checks that need a Service find none.
	Services []*corev1.Service
	Fronts   func(service string) kube.Fronts
}

// CheckPod runs the checks named by ids on one live pod, as the controller's Reporter
// does on the pods it watches: no manifest (findings carry no file), the Services and
// front doors the caller read, no ignore annotations, the configured severities.
func CheckPod(p Pod, opts Options, ids ...string) []Finding {
	c := &Context{Options: opts}
	w := &Workload{Obj: &manifest.Object{Kind: "Pod", Namespace: p.Namespace, Name: p.Name}, PodSpec: p.Spec, Replicas: 1,
		typed: p.Services, typedDone: true, frontsOf: p.Fronts}
	var out []Finding
	for _, id := range ids {
		chk, ok := checksByID()[id]
		if !ok || opts.Config.disabled(chk.ID) {
			continue
		}
		for _, f := range chk.Run(c, w) {
			f.ID, f.Severity = chk.ID, opts.Config.severity(chk, f.Severity)
			f.of(w.Obj)
			out = append(out, f)
		}
	}
	return out
}

// checksByID is Checks by ID, made once: CheckPod runs on every pod of a cluster.
var checksByID = sync.OnceValue(func() map[string]Check {
	m := map[string]Check{}
	for _, c := range Checks() {
		m[c.ID] = c
	}
	return m
})

// ignoredChecks are the checks the object's annotation, or its pod template's, names.
func ignoredChecks(o *manifest.Object) map[string]bool {
	out := map[string]bool{}
	lists := []string{o.Node.GetAnnotations(IgnoreAnnotation)[IgnoreAnnotation]}
	if o.Kind != "Pod" {
		if a, err := o.Node.Pipe(yaml.Lookup("spec", "template", "metadata", "annotations", IgnoreAnnotation)); err == nil && a != nil {
			lists = append(lists, yaml.GetValue(a))
		}
	}
	for _, list := range lists {
		for _, id := range strings.Split(list, ",") {
			if id = strings.TrimSpace(id); id != "" {
				out[id] = true
			}
		}
	}
	return out
}
