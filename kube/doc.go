// Package kube is nap's Kubernetes vocabulary, in one place: the nap ConfigMap's names
// and mount, Kubernetes versions and the kubelet skew rule (OldestKubelet), and the
// defaults (DefaultDelay, DefaultGracePeriod).
package kube
