// Package kube is nap's Kubernetes vocabulary, shared by the CLI and (later) the
// controller: reading manifests with their file:line, finding pod templates, and the
// names of the nap ConfigMap, its keys and its mount.
//
// Manifests are read with kustomize's kyaml (yaml.v3 nodes), never decoded and
// re-encoded, so a caller that edits them keeps comments, order and quoting.
package kube
