// Package kube is nap's Kubernetes vocabulary and manifest work, shared by the CLI, lint
// and the controller's webhook: reading manifests with their file:line, finding pod
// templates, the byte-preserving preStop injection, the nap ConfigMap's names, versions,
// and the defaults (DefaultDelay, DefaultGracePeriod). It links no machine code: the
// binaries themselves are package configmap's.
//
// Manifests are read with kustomize's kyaml (yaml.v3 nodes), never decoded and
// re-encoded, so a caller that edits them keeps comments, order and quoting.
package kube
