// Package serve is the calibration target of `napctl serve`: an HTTP server that says
// which pod answered each request and, once the pod's termination began, how long ago,
// so that a prober can tell how late traffic still reaches a terminating pod (the
// traffic tail that a preStop delay must cover).
//
// Termination begins when the kubelet runs the pod's preStop hook, an httpGet of
// PreStopPath on this server (deletionTimestamp is not visible from inside a pod):
// the handler notes the time and holds the hook for its hold parameter, so the pod keeps
// serving while routes are removed.
package serve
