// Package kube is nap's Kubernetes vocabulary, in one place: the nap ConfigMap's names
// and mount, Kubernetes versions and the kubelet skew rule (OldestKubelet), the kinds of
// workload (Kinds) and which one owns a pod (WorkloadOf), the front doors that name
// Services, and the defaults (DefaultDelay, DefaultGracePeriod).
package kube
