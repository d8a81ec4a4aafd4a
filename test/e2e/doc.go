// Package e2e runs nap on the real two-node lab (hack/cluster.sh, `make cluster-up`):
// the preStop hooks that napctl writes run in shell-less pods, and the usual `sh -c
// sleep` does not; the downtime pairs count the requests each traffic path loses with
// and without nap. Without a running cluster the tests fail (in CI) with the make target
// that starts one.
//
// Order: make test (hack/test.sh) runs them in two stages. First the tests named in
// hack/e2e-early, beside the unit tests, as soon as the lab is up: they check admission,
// the controller's rollouts and outage, hooks, the quick start, and time no route
// (TestEarlyLane holds the list to that). Then every other test, alone on the lab. In
// each stage the tests run one at a time, in file order, but for a few light ones: the
// preStop hook tests, probe --watch and the verdicts call t.Parallel and run together
// at the stage's end (-parallel 3). They probe at most 20 req/s, or watch a rollout
// whose outage they expect, and only add their own namespace. The downtime pairs never
// run beside another test: run three at once, each lost requests to multi-second
// timeouts on new and kept-alive connections alike (the 2-core machine saturated), with
// the delays that lose none alone; two groups of three side by side lost none once
// (docs/testing.md, "Side by side"), not enough to make it the rule.
package e2e
