// Package kube is nap's Kubernetes vocabulary and its edit of manifests, shared by the
// CLI and the controller's webhook: the byte-preserving preStop injection (on objects
// that package manifest read), the nap ConfigMap's names, versions and kubelet skew, and
// the defaults (DefaultDelay, DefaultGracePeriod). It links no machine code: the
// binaries themselves are package configmap's.
//
// Inject splices text into the original bytes at the nodes' positions, never decoding
// and re-encoding, so that comments, order and quoting stay as they were.
package kube
