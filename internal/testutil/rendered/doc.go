// Package rendered makes the manifests that inject's and lint's benchmarks read: what a
// Helm chart renders for many applications, a Deployment and its Service each.
package rendered
