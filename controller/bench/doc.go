// Package bench measures the controller as it runs: `napctl controller` processes on a
// real API server (envtest), with their Publisher, webhook, MutatingAdmissionPolicy and
// Reporter, and napctl status and lint --live over the same fleet. Its tests are
// benchmarks that skip unless asked for: make bench-controller writes
// docs/controller-bench.md, make bench-scale docs/controller-scale.md.
package bench
