// Package kubeenv is how tests meet a Kubernetes API: envtest's assets built by `make
// kube-bins`, a real kube-apiserver and etcd, kubeconfigs, kubectl. Apart from testenv so
// that tests which need none of it (and their fuzzing builds) do not compile client-go.
package kubeenv
