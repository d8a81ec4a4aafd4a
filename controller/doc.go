// Package controller is nap's in-cluster controller: the Publisher keeps the nap
// ConfigMap (the binaries of the running version) in every selected namespace, like
// Kubernetes' root-CA publisher keeps kube-root-ca.crt, and repairs every deletion or
// edit of its copies. The admission webhook that injects preStop hooks (issue 7) builds on
// the same kube package as `napctl inject`.
package controller
