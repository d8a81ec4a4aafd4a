// Package deps holds nap's dependency rules as a test (deps_test.go): which packages
// may link which, read from `go list -deps`, so that the tree keeps showing the data
// flow (specification → program → ELF → ConfigMap or image → injection → cluster →
// proof) as it grows. docs/architecture.md explains the rules.
package deps
