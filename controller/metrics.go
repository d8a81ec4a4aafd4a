package controller

import (
	"slices"

	"github.com/nap-k8s/nap/controller/certs"
	"github.com/nap-k8s/nap/controller/evicted"
	"github.com/nap-k8s/nap/controller/report"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The Publisher's and the webhook's metrics, served by the manager's /metrics. Each
// package of the controller defines and registers its own in its metrics.go: this one,
// report (the Reporter), certs and evicted (TestMetricsHome).
var (
	// The Publisher.
	published = prometheus.NewCounter(prometheus.CounterOpts{Name: "nap_configmaps_published_total", Help: "nap ConfigMaps created in namespaces."})
	repaired  = prometheus.NewCounter(prometheus.CounterOpts{Name: "nap_configmaps_repaired_total", Help: "nap ConfigMaps whose content was put back (edited, or of an older version) or that were replaced (immutable)."})
	removed   = prometheus.NewCounter(prometheus.CounterOpts{Name: "nap_configmaps_removed_total", Help: "nap ConfigMaps deleted from namespaces that stopped matching."})
	// tampered counts the copies found wrong after the controller had seen them right:
	// written by someone else (NapConfigMapTampered fires on it).
	tampered = prometheus.NewCounter(prometheus.CounterOpts{Name: "nap_configmaps_tampered_total", Help: "nap ConfigMaps found written by someone other than nap's controller, after it had seen them right (their content was put back)."})

	// The webhook.
	admissions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nap_admissions_total", Help: "Pod admissions by result: injected, unchanged, skipped, audit, error, not-mounted (the namespace's nap ConfigMap was not this build's, or nap does not publish there: the native sleep, or nothing)."}, []string{"result"})
	// auditWouldInject counts, by namespace, the pods the audit policy admitted unchanged
	// that the default policy would have given a delay: what moving to default changes.
	auditWouldInject = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nap_audit_would_inject_total",
		Help: "Pods admitted unchanged under the audit policy that the default policy would give a preStop delay, by namespace."}, []string{"namespace"})
	admissionSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "nap_admission_duration_seconds", Help: "Time to answer a Pod admission.",
		Buckets: []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1}})
	// calibratedDelay is what the calibration kept in the cluster says each measured path
	// needs: what the webhook holds pods for, by their paths (none: no calibration).
	calibratedDelay = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nap_calibration_delay_seconds",
		Help: "The preStop hold each measured path needs, by the calibration kept in the cluster (napctl calibrate --store); absent without one."}, []string{"path"})
	// learnedDelay is what each route (the paths that reach a pod, joined by +) learned
	// from production that its pods need (napctl controller --learn): a handful of routes,
	// not one series a workload.
	learnedDelay = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nap_learned_delay_seconds",
		Help: "The preStop hold each route (the paths that reach a pod, joined by +) needs, as its pods' terminations taught (--learn); absent while nothing was learned."}, []string{"route"})
)

// Collectors are every metric of the controller: this package's and its packages', as
// registered (docs/reference/metrics.md lists them).
func Collectors() []prometheus.Collector {
	return slices.Concat(ownCollectors(), report.Collectors(), certs.Collectors(), evicted.Collectors())
}

func ownCollectors() []prometheus.Collector {
	return []prometheus.Collector{published, repaired, removed, tampered, admissions, auditWouldInject, admissionSeconds, calibratedDelay, learnedDelay}
}

func init() {
	metrics.Registry.MustRegister(ownCollectors()...)
}
