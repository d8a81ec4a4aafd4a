// Package traffic is the list of ways traffic reaches a Service's pods: the ClusterIP,
// a node's NodePort, an ingress, a load balancer. Each path is a pure value: its name,
// what shortens its tail, which Services' pods it reaches (Reaching) and whether its
// clients pool their connections; package calibrate opens and measures it (its
// openers, by name), and the end-to-end lab probes the same values; a new path is one
// entry here. A Calibration is what calibrate measured per path; Calibration.Route,
// Need.Wait and Need.Below are the one rule by which the webhook gives each pod the wait
// of the paths that reach it, and by which lint, status and the Reporter (through
// lint's check) judge a wait below its paths.
package traffic
