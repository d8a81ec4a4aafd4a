// Package dryrun holds the tests that check package kube's output against a real
// kube-apiserver (envtest). They live apart from package kube so that kube's fuzzing
// builds do not compile client-go and controller-runtime.
package dryrun
