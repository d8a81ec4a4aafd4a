// Package version is nap's version, set at build time with
// -ldflags "-X github.com/nap-k8s/nap/internal/version.Version=...".
package version
