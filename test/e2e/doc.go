// Package e2e runs nap on the real two-node lab (hack/cluster.sh, `make cluster-up`):
// the preStop hooks that napctl writes run in shell-less pods, and the usual `sh -c
// sleep` does not; the downtime pairs count the requests each traffic path loses with
// and without nap. Without a running cluster the tests fail (in CI) with the make target
// that starts one.
//
// Order: make test (hack/test.sh) runs them in lanes that hack/e2e-lanes names, each
// held to its rule by TestLanes. First the early lane, beside the unit tests, as soon as
// the lab is up: they check admission, the controller's rollouts and outage, hooks, the
// quick start, stale connection tracking entries and a node shutdown's budget, and time
// no route. Then the two side lanes at once, in two processes:
// downtime pairs, calibrations and verdicts that change nothing of the lab beyond their
// own namespaces (no controller, no node's disruption). Then every other test alone on
// the lab: the controller's, the nodes' disruptions, the fleet. The full lane is make
// e2e's alone: claims make test proves once with another test's pair. In each process
// the tests run one at a time, in file order, but for a few light ones: the preStop
// hook tests, probe --watch, the live wait and the verdicts call t.Parallel and run
// together at their lane's end (-parallel 3). They probe at most 20 req/s, or watch a
// rollout whose outage they expect, and only add their own namespace. Three downtime
// pairs at once each lost requests to multi-second timeouts on new and kept-alive
// connections alike (the 2-core machine saturated), with the delays that lose none
// alone; two at once lose nothing they must not (docs/testing.md, "Side by side").
package e2e
