package evicted

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// routed counts the Router's decisions, by result: deleted, or why not.
var routed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nap_evicted_pods_total",
	Help: "Pods a kubelet evicted or stopped for its node's shutdown, by what nap's controller did: deleted (out of their Services at once, their preStop holding), gone (already deleted or stopped), no-hold (no preStop that holds), excluded (a namespace nap leaves alone), error."}, []string{"result"})

// Collectors are the package's metrics, as registered (docs/reference/metrics.md lists
// them).
func Collectors() []prometheus.Collector { return []prometheus.Collector{routed} }

func init() { metrics.Registry.MustRegister(Collectors()...) }
