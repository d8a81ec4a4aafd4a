package hook

import (
	"fmt"
	"time"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/spec"
)

// DefaultProbePeriod is the kubelet's period for a probe that names none.
const DefaultProbePeriod = 10 * time.Second

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
		cmd = append(cmd, duration(w.Min))
	}
	return append(cmd, spec.FlagQuiet, duration(w.Quiet), spec.FlagMax, duration(w.Max), spec.FlagAllow, fmt.Sprint(w.Allow))
}

// duration writes d in nap's syntax, in the largest unit that holds it whole: 60s,
// 1500ms.
func duration(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return fmt.Sprintf("%dns", d)
}
