// Package e2e runs nap on a real single-node Kubernetes (hack/cluster.sh, `make
// cluster-up`): the preStop hooks that napctl writes run in shell-less pods, and the
// usual `sh -c sleep` does not. Without a running cluster the tests fail (in CI) with
// the make target that starts one.
package e2e
