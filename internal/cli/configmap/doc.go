// Package configmap is "napctl configmap": it prints the ConfigMap that carries the
// nap binaries into a namespace.
package configmap
