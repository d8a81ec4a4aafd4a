// Package report is the controller's Reporter: it finds on live pods what makes nap's
// protection fail silently (pods the webhook missed, hooks that cannot work, preStop
// hooks that failed) and reports it on the workloads (events), as metrics and as
// policy reports. It is shaped as Kubernetes' small controllers are: the informers'
// handlers put a namespace on a work queue, a sync judges one namespace from the
// caches, a rate-limited queue retries. Its pod cache holds summaries
// (CacheByObject, NewInformer): 150,000 pods fit the controller's memory limit.
package report
