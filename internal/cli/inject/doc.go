// Package inject is "napctl inject": it adds preStop delays to the pod templates of
// manifests and writes them back, changing nothing else.
package inject
