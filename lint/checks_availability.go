package lint

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Availability during rollouts and drains: replicas, strategy, PodDisruptionBudgets,
// and probes that restart what should only be taken out of service.
func availabilityChecks() []Check {
	return []Check{
		Check{ID: SingleReplica, Title: "One replica behind a Service", Severity: Warning, Run: singleReplica},
		Check{ID: RecreateStrategy, Title: "Deployment strategy Recreate", Severity: Warning, Run: recreateStrategy},
		Check{ID: RolloutAllAtOnce, Title: "A rolling update that lets every pod go at once", Severity: Error, Run: rolloutAllAtOnce},
		Check{ID: NoPDB, Title: "A multi-replica workload without a PodDisruptionBudget", Severity: Warning, Run: noPDB},
		Check{ID: PDBBlocksDrain, Title: "A PodDisruptionBudget that allows no disruption", Severity: Warning, Run: pdbBlocksDrain},
		Check{ID: LivenessEqualsReadiness, Title: "livenessProbe identical to readinessProbe", Severity: Warning, Run: livenessEqualsReadiness},
	}
}

func singleReplica(_ *Context, w *Workload) []Finding {
	if !w.BehindService() || w.PerNode || w.Obj.Kind == "Pod" || w.MinReplicas() != 1 {
		return nil
	}
	what, hint := "replicas is 1", "run at least 2 replicas"
	if n := len(w.HPAs); n > 0 {
		what, hint = "its HorizontalPodAutoscaler's minReplicas is 1", "set the HorizontalPodAutoscaler's minReplicas to 2 or more"
		if h := w.HPAs[n-1]; h.Kind == "ScaledObject" {
			what, hint = "its KEDA ScaledObject "+h.Name+" lets it scale to 1 (minReplicaCount)", "set the ScaledObject's minReplicaCount to 2 or more"
		}
	}
	// Only where this workload is a Service's one pod: one of several Deployments
	// behind a Service (versions, canaries) never empties it.
	for i, s := range w.Services {
		if w.ServiceBackends[i] <= 1 {
			return []Finding{{
				Message: fmt.Sprintf("%s behind Service %s, its only backend: every rollout, eviction or node drain leaves it with no ready pod", what, s.Name),
				Hint:    hint,
			}}
		}
	}
	return nil
}

func recreateStrategy(_ *Context, w *Workload) []Finding {
	// Only a Deployment that clients reach through a Service has an outage to speak of.
	if w.Strategy == nil || w.Strategy.Type != "Recreate" || !w.BehindService() {
		return nil
	}
	hint := "use strategy RollingUpdate"
	for _, v := range w.PodSpec.Volumes {
		if v.PersistentVolumeClaim != nil {
			// RollingUpdate would start the new pod while the old one holds the claim:
			// with ReadWriteOnce on another node it never starts (Multi-Attach).
			hint = fmt.Sprintf("the pods mount PersistentVolumeClaim %s: if it is ReadWriteOnce, a RollingUpdate's new pod cannot start while the old one holds it; give each pod its own volume (a StatefulSet), or accept the outage (annotation lint.nap.dev/ignore: %s)", v.PersistentVolumeClaim.ClaimName, RecreateStrategy)
			break
		}
	}
	return []Finding{{
		Message: "strategy Recreate stops every old pod before a new one starts: each rollout is an outage",
		Hint:    hint,
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
				File:    p.Obj.File, // where to change it, which may be another file
				Line:    p.Obj.Line,
			})
		}
	}
	return out
}

func livenessEqualsReadiness(_ *Context, w *Workload) []Finding {
	var out []Finding
	for _, c := range w.PodSpec.Containers {
		if c.LivenessProbe == nil || c.ReadinessProbe == nil {
			continue
		}
		// The same endpoint, as often and as patient: the pod is restarted exactly when it
		// would only have left the endpoints. Defaults filled in first.
		l, r := withProbeDefaults(*c.LivenessProbe), withProbeDefaults(*c.ReadinessProbe)
		if !reflect.DeepEqual(l.ProbeHandler, r.ProbeHandler) || l.PeriodSeconds != r.PeriodSeconds || l.FailureThreshold != r.FailureThreshold {
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

// withProbeDefaults fills in what the API server defaults, so that a probe spelling
// out periodSeconds: 10 equals one that leaves it out.
func withProbeDefaults(p corev1.Probe) corev1.Probe {
	p = *p.DeepCopy()
	def := func(v *int32, d int32) {
		if *v == 0 {
			*v = d
		}
	}
	def(&p.TimeoutSeconds, 1)
	def(&p.PeriodSeconds, 10)
	def(&p.SuccessThreshold, 1)
	def(&p.FailureThreshold, 3)
	if h := p.HTTPGet; h != nil {
		if h.Scheme == "" {
			h.Scheme = corev1.URISchemeHTTP
		}
		if h.Path == "" {
			h.Path = "/"
		}
		if len(h.HTTPHeaders) == 0 {
			h.HTTPHeaders = nil
		}
	}
	if g := p.GRPC; g != nil && g.Service == nil {
		g.Service = new(string)
	}
	return p
}
