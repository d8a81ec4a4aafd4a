package hook

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/spec"
)

// DefaultProbePeriod is the kubelet's period for a probe that names none.
const DefaultProbePeriod = 10 * time.Second

// BackgroundProbes are the probes whose checks go on while a pod terminates (startup
// probes are over by then), and ConnectingHandlers the handlers of theirs that open a
// connection to the pod (an exec probe opens none): what hook.Background counts. By
// their field names, so that napctl inject (on YAML), lint and the Reporter (on the
// API's types) and the MutatingAdmissionPolicy (CEL) read one list.
var (
	BackgroundProbes   = []string{"readinessProbe", "livenessProbe"}
	ConnectingHandlers = []string{"httpGet", "tcpSocket", "grpc"}
)

// ProbePeriods are the periods of spec's probes that open a connection to the pod
// while it terminates (BackgroundProbes with a ConnectingHandler, of its containers and
// its sidecars: init containers that restart Always).
func ProbePeriods(spec corev1.PodSpec) []time.Duration {
	cs := slices.Clone(spec.Containers)
	for _, c := range spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			cs = append(cs, c)
		}
	}
	var periods []time.Duration
	for _, c := range cs {
		var m map[string]any // the container by its field names
		if b, err := json.Marshal(c); err != nil || json.Unmarshal(b, &m) != nil {
			continue
		}
		for _, kind := range BackgroundProbes {
			pr, _ := m[kind].(map[string]any)
			if !slices.ContainsFunc(ConnectingHandlers, func(h string) bool { return pr[h] != nil }) {
				continue
			}
			period := DefaultProbePeriod
			if s, ok := pr["periodSeconds"].(float64); ok && s > 0 {
				period = time.Duration(s) * time.Second
			}
			periods = append(periods, period)
		}
	}
	return periods
}

// Background is the ALLOW of nap's adaptive wait for a pod whose probes open a new
// connection every period of periods (the kubelet's HTTP, TCP and gRPC readiness and
// liveness probes, which keep running while the pod terminates): in any window of
// quiet, a probe every P opens at most floor(quiet/P)+1 connections.
func Background(quiet time.Duration, periods []time.Duration) int64 {
	var n int64
	for _, p := range periods {
		if p <= 0 {
			p = DefaultProbePeriod
		}
		n += int64(quiet/p) + 1
	}
	return n
}

// Wait is an adaptive wait's bounds: at least Min, until no more than Allow new
// connections reached the pod for Quiet, at most Max (sleeper/spec).
type Wait struct {
	Min, Quiet, Max time.Duration
	Allow           int64
}

// Command is nap's hook for w: /nap/nap [MIN] --quiet QUIET --max MAX --allow N.
func (w Wait) Command() []string {
	cmd := []string{kube.MountPath + "/" + kube.BinaryName}
	if w.Min > 0 {
		cmd = append(cmd, Arg(w.Min))
	}
	return append(cmd, spec.FlagQuiet, Arg(w.Quiet), spec.FlagMax, Arg(w.Max), spec.FlagAllow, fmt.Sprint(w.Allow))
}

// Arg writes d in nap's syntax, in the largest unit that holds it whole: 60s, 1500ms.
func Arg(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return fmt.Sprintf("%dns", d)
}
