// Package live reads, from a running cluster, the objects that nap judges
// (workloads and the Services, PodDisruptionBudgets, HorizontalPodAutoscalers and
// Ingresses around them) as manifest objects, so that lint's checks run on live objects
// exactly as on files. It only reads (list), with whatever RBAC allows.
package live
