// Package report is the controller's Reporter: it finds on live pods what makes nap's
// protection fail silently (pods the webhook missed, hooks that cannot work, preStop
// hooks that failed) and reports it on the workloads (events), as metrics and as
// policy reports. It is shaped as Kubernetes' small controllers are: the informers'
// handlers put a namespace on a work queue, a sync judges one namespace from the
// caches, a rate-limited queue retries. Its pod cache holds summaries
// (CacheByObject, NewInformer): 150,000 pods fit the controller's memory limit.
//
// One file a concern: the Reporter and its state (reporter.go); the reasons it finds,
// each with its event and metric text (reasons.go); the work queue of namespaces
// (queue.go); the scan of one namespace, its Services and front doors read once and
// lint's checks run on each pod (scan.go); the watches that enqueue (watch.go); the
// events and gauges (events.go); the roll of missed pods (roll.go); each termination's
// verdict, counted (verdicts.go); the pod cache (cache.go, pods.go); the metrics
// (metrics.go).
package report
