// Package lint finds the zero-downtime mistakes in Kubernetes manifests: the whole
// termination path (readiness, the preStop delay, the grace period, native sleep
// support) and what keeps enough pods serving during rollouts and drains (replicas,
// strategy, PodDisruptionBudgets).
//
// Checks are small functions registered with a stable ID (check.go); each family has
// its file. Lint links objects first (graph.go): Services to the workloads they select,
// PodDisruptionBudgets and HorizontalPodAutoscalers to theirs. Renderers for text, JSON
// and SARIF 2.1.0 are in render.go.
package lint
