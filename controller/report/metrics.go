package report

import (
	"fmt"
	"strings"

	"github.com/nap-k8s/nap/traffic"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The Reporter's metrics: what it finds now (gauges, set per namespace at each sync),
// and its evictions. They are served with the controller's others.
var (
	unprotected = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nap_pods_unprotected",
		Help: unprotectedHelp()}, []string{"namespace", "reason"})
	hookFailures = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nap_prestop_hook_failures",
		Help: "Pods with a FailedPreStopHook event the API server still holds, by namespace, workload (Kind/name) and cause: from the message (no-shell, no-binary, non-zero-exit, http, refused, other), or, as the kubelet gives none, what the hook runs (hook-shell, hook-nap, hook-exec, hook-http, unknown)."}, []string{"namespace", "workload", "cause"})
	eventsDelayed = prometheus.NewCounter(prometheus.CounterOpts{Name: "nap_reporter_events_delayed_total",
		Help: fmt.Sprintf("Warning events the Reporter wrote late, counted once each when written, having waited for the events' pace (by default %d a second past a burst of %d, across every namespace): many workloads told of one change at once.", DefaultEventRate, DefaultEventBurst)})
	eventsWaiting = prometheus.NewGauge(prometheus.GaugeOpts{Name: "nap_reporter_events_waiting",
		Help: "Findings of a workload's own whose Warning event waits for its turn at the events' pace: 0 once every workload has been told. A path's findings (delay-below-path, adaptive-misses-pool) never wait: they take the tokens spare."})
	rolled = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nap_pods_rolled_total",
		Help: "Pods the webhook missed that the controller evicted (--roll-missed) so that they are recreated with a delay, by namespace."}, []string{"namespace"})
)

// terminations is the metric of every termination counted, by kind only: a label per
// workload or namespace would make a series of each of a fleet's thousands.
var terminations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nap_terminations_total",
	Help: "Container terminations whose nap wait left its verdict in the pod's final status, by verdict: quiet (no traffic at the end), sparse (quiet, but too little traffic over the pod's life to tell), late (traffic still arrived in the last QUIET: a route outran the wait), blind (nap could not read the pod's traffic), cut (the wait never ended: the grace period or a node shutdown ran out)."},
	[]string{"verdict"})

// pathTerminations and pathTails are every termination again, by the traffic paths that
// reached its pod (traffic.PathsOf): a termination reached by two paths is counted for
// each, so their sum over paths is not the number of terminations. Paths and verdicts
// are a short fixed list: no per-workload label.
var (
	pathTerminations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nap_path_terminations_total",
		Help: "Container terminations whose nap wait left its verdict, by each traffic path that reached the pod (" + strings.Join(traffic.Names(), ", ") + ") and verdict: a termination counts once for every path that reached it."},
		[]string{"path", "verdict"})
	pathTails = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nap_path_termination_tail_seconds",
		Help:    "The observed tail of quiet terminations (seconds from the hook's start to the last connection or request beyond the probes'), by each traffic path that reached the pod: how long that path still sent to a terminating pod.",
		Buckets: []float64{0.25, 0.5, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89}}, []string{"path"})
)

// Collectors are the package's metrics, as registered (docs/reference/metrics.md lists
// them).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{unprotected, hookFailures, eventsDelayed, eventsWaiting, rolled, terminations, pathTerminations, pathTails}
}

func init() {
	metrics.Registry.MustRegister(Collectors()...)
	for _, k := range Verdicts {
		terminations.WithLabelValues(k) // every series from the start, at 0
	}
}
