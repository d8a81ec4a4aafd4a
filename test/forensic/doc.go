// Package forensic reads what a lab measurement recorded beside its probe, and says
// whose a loss was: the ingress's access log (which pod each failed request went to),
// the lab load balancer's connection log (a node it still sent to that refused), and
// each node's kube-proxy programming histogram (how late a node's rules followed a
// pod's change). Its verdicts tell a pod that left while a route still sent to it —
// what a wait prevents — from a loss of the route's own.
//
// It also holds nap's verdicts to the probe's ground truth: each pod that ran nap's
// binary, its verdict beside the requests over new connections that failed after its app
// exited (Attribute), counted into the confusion table of late against lost (Confusion).
//
// It parses and judges records the lab tests fetch (test/e2e): it opens no file and
// calls no API, so that each verdict is held by a table of its own.
package forensic
