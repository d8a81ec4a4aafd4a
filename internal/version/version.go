// Package version is nap's version, set at build time with
// -ldflags "-X github.com/nap-k8s/nap/internal/version.Version=...".
package version

// Version of nap. The ConfigMap and the controller record it.
var Version = "v0.1.0-dev"
