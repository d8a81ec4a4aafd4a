// Package writer keeps nap's policy reports (package policyreport) in a cluster: Detect
// asks the API server which format it serves, and a Writer creates, updates and deletes
// one report per namespace, writing nothing at rest. The controller's Reporter uses it.
package writer
