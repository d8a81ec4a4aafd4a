package hook

import (
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// SidecarRestartPolicy is the restartPolicy that makes an init container a sidecar
// (KEP-753): it runs beside the pod's containers and stops after them.
const SidecarRestartPolicy = string(corev1.ContainerRestartPolicyAlways)

// IsSidecar tells whether an init container with this restartPolicy is a sidecar.
func IsSidecar(restartPolicy string) bool { return restartPolicy == SidecarRestartPolicy }

// ProbePeriods are the periods of spec's probes that open a connection to the pod
// while it terminates (BackgroundProbes with a ConnectingHandler, of its containers and
// its sidecars: init containers that restart Always).
func ProbePeriods(spec corev1.PodSpec) []time.Duration {
	cs := slices.Clone(spec.Containers)
	for _, c := range spec.InitContainers {
		if c.RestartPolicy != nil && IsSidecar(string(*c.RestartPolicy)) {
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
