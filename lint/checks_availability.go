package lint

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Availability during rollouts and drains: replicas, strategy, PodDisruptionBudgets,
// and probes that restart what should only be taken out of service.
func init() {
	register(
		Check{ID: SingleReplica, Title: "One replica behind a Service", Severity: Warning, Run: singleReplica},
		Check{ID: RecreateStrategy, Title: "Deployment strategy Recreate", Severity: Warning, Run: recreateStrategy},
		Check{ID: RolloutAllAtOnce, Title: "A rolling update that lets every pod go at once", Severity: Error, Run: rolloutAllAtOnce},
		Check{ID: NoPDB, Title: "A multi-replica workload without a PodDisruptionBudget", Severity: Warning, Run: noPDB},
		Check{ID: PDBBlocksDrain, Title: "A PodDisruptionBudget that allows no disruption", Severity: Warning, Run: pdbBlocksDrain},
		Check{ID: LivenessEqualsReadiness, Title: "livenessProbe identical to readinessProbe", Severity: Warning, Run: livenessEqualsReadiness},
	)
}

func singleReplica(_ *Context, w *Workload) []Finding {
	if !w.BehindService() || w.PerNode || w.Obj.Kind == "Pod" || w.MinReplicas() != 1 {
		return nil
	}
	what := "replicas is 1"
	if len(w.HPAs) > 0 {
		what = "its HorizontalPodAutoscaler's minReplicas is 1"
	}
	return []Finding{{
		Message: fmt.Sprintf("%s behind Service %s: every rollout, eviction or node drain leaves it with no ready pod", what, w.Services[0].Name),
		Hint:    "run at least 2 replicas",
	}}
}

func recreateStrategy(_ *Context, w *Workload) []Finding {
	if w.Strategy == nil || w.Strategy.Type != "Recreate" {
		return nil
	}
	return []Finding{{
		Message: "strategy Recreate stops every old pod before a new one starts: each rollout is an outage",
		Hint:    "use strategy RollingUpdate",
	}}
}

func rolloutAllAtOnce(_ *Context, w *Workload) []Finding {
	if w.Strategy == nil || w.Strategy.RollingUpdate == nil || w.Strategy.RollingUpdate.MaxUnavailable == nil {
		return nil
	}
	n := int(w.MinReplicas())
	if n < 1 {
		return nil
	}
	unavail, err := intstr.GetScaledValueFromIntOrPercent(w.Strategy.RollingUpdate.MaxUnavailable, n, false)
	if err != nil || unavail < n {
		return nil
	}
	return []Finding{{
		Message: fmt.Sprintf("rollingUpdate.maxUnavailable %s lets all %d pods go at once", w.Strategy.RollingUpdate.MaxUnavailable.String(), n),
		Hint:    "set maxUnavailable below the replica count (e.g. 0 with maxSurge 1, or 25%)",
	}}
}

func noPDB(_ *Context, w *Workload) []Finding {
	if w.PerNode || w.Obj.Kind == "Pod" || w.MinReplicas() < 2 || len(w.PDBs) > 0 {
		return nil
	}
	return []Finding{{
		Message: fmt.Sprintf("%d replicas and no PodDisruptionBudget: a node drain may evict them all at once", w.MinReplicas()),
		Hint:    "add a PodDisruptionBudget with maxUnavailable: 1",
	}}
}

func pdbBlocksDrain(_ *Context, w *Workload) []Finding {
	var out []Finding
	n := int(w.MinReplicas())
	for _, p := range w.PDBs {
		blocked := false
		if mu := p.Spec.MaxUnavailable; mu != nil {
			v, err := intstr.GetScaledValueFromIntOrPercent(mu, max(n, 1), true)
			blocked = err == nil && v == 0
		}
		if ma := p.Spec.MinAvailable; ma != nil && !w.PerNode && n > 0 {
			v, err := intstr.GetScaledValueFromIntOrPercent(ma, n, true)
			blocked = blocked || err == nil && v >= n
		}
		if blocked {
			out = append(out, Finding{
				Message: fmt.Sprintf("PodDisruptionBudget %s allows no disruption of its %d pod(s): node drains block until someone deletes it", p.Obj.Name, n),
				Hint:    "allow at least one: maxUnavailable: 1",
				Line:    p.Obj.Line,
			})
		}
	}
	return out
}

func livenessEqualsReadiness(_ *Context, w *Workload) []Finding {
	var out []Finding
	for _, c := range w.PodSpec.Containers {
		if c.LivenessProbe == nil || c.ReadinessProbe == nil || !equalProbe(c.LivenessProbe.ProbeHandler, c.ReadinessProbe.ProbeHandler) ||
			c.LivenessProbe.FailureThreshold != c.ReadinessProbe.FailureThreshold || c.LivenessProbe.PeriodSeconds != c.ReadinessProbe.PeriodSeconds {
			continue
		}
		out = append(out, Finding{
			Container: c.Name,
			Line:      w.ContainerLine(c.Name),
			Message:   fmt.Sprintf("container %q's livenessProbe is its readinessProbe: a pod that should only leave the endpoints (draining, overloaded) is restarted", c.Name),
			Hint:      "probe liveness on its own endpoint (e.g. /livez) or with a higher failureThreshold",
		})
	}
	return out
}
