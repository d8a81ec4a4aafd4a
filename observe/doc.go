// Package observe watches what Kubernetes does to the pods behind a target while a
// prober measures them: the pods (created, ready, termination begun, containers exited,
// deleted) and their endpoints in every EndpointSlice (ready, terminating, removed), as
// events stamped with the watcher's clock, to be put on the probe's timeline next to the
// failures they explain.
package observe
