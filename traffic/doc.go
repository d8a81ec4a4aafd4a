// Package traffic is the list of ways traffic reaches a Service's pods: the ClusterIP,
// a node's NodePort, an ingress. Each path is a value that says what it needs of the
// Service, what it creates beside it, the URL that reaches the pods through it, and how
// to remove what it made. napctl calibrate measures every path of the list, and the
// end-to-end lab probes the same values; a new path is one entry here.
package traffic
