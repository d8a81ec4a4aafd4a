// Package traffic is the list of ways traffic reaches a Service's pods: the ClusterIP,
// a node's NodePort, an ingress. Each path is a value that says what it needs of the
// Service, what it creates beside it, the URL that reaches the pods through it, and how
// to remove what it made. napctl calibrate measures every path of the list, and the
// end-to-end lab probes the same values; a new path is one entry here. A Calibration is
// what calibrate measured per path; Calibration.Route and Need.Wait are the one rule by
// which the webhook gives each pod the wait of the paths that reach it, and by which
// lint, status and the Reporter judge a delay below its path.
package traffic
