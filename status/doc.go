// Package status is fleet coverage: for every workload that a Service sends traffic to
// (a Service in its namespace whose selector matches its pod template's labels; Services
// that only serve metrics do not count, as in lint), whether its pods terminate without
// dropping requests, by which means, why not, and which of its pods' preStop hooks failed.
// It is computed from objects (package live reads them from a cluster) with lint's
// termination checks, so that `napctl status` and `napctl lint` never disagree.
package status
