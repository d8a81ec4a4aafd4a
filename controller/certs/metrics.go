package certs

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// certNotAfter lets an alert fire long before the webhook's certificate expires, should
// rotation ever stop (it renews with a third of the life left).
var certNotAfter = prometheus.NewGauge(prometheus.GaugeOpts{Name: "nap_webhook_certificate_expiry_timestamp_seconds",
	Help: "When the webhook's serving certificate expires (Unix seconds)."})

// Collectors are the package's metrics, as registered (docs/reference/metrics.md lists
// them).
func Collectors() []prometheus.Collector { return []prometheus.Collector{certNotAfter} }

func init() { metrics.Registry.MustRegister(Collectors()...) }
