// Package controllerproc runs `napctl controller` as real processes against a real API
// server (envtest) for the tests and benchmarks of the controller: the API server with
// napctl install's objects in it, the napctl binary, a ServiceAccount's kubeconfig, and
// each replica's ports, log and exit.
package controllerproc
