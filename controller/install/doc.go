// Package install renders the objects that run nap's controller (napctl install, and
// deploy/ as a kustomize base): least-privilege RBAC, the Deployment, its Service, PDB and
// webhook configuration. It renders; it runs nothing.
package install
