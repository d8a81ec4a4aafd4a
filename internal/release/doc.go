// Package release writes what a release publishes besides the images: the kubectl
// plugin's archives for each platform, their sha256, and the krew plugin manifest that
// names them (make dist, hack/dist).
package release
