// Package drain shuts an HTTP server down gracefully on Kubernetes: the third part of zero
// downtime, after readiness probes and a preStop delay.
//
// Go's http.Server.Shutdown closes the listener at once, refusing the traffic that the
// Services and proxies still route to the pod for a few seconds after it starts to
// terminate. A Drainer does what a pod needs instead. On SIGTERM or SIGINT (or when the
// context ends):
//
//  1. readiness (Readiness) answers 503 at once, so the pod leaves the endpoints;
//     liveness (Liveness) stays 200 until the process exits;
//  2. for Delay the server keeps accepting and serving, but every response carries
//     "Connection: close" (HTTP/1.1 clients reconnect, to another pod) and HTTP/2
//     connections get a GOAWAY;
//  3. then Shutdown, with what is left of Timeout: idle connections close, requests in
//     flight finish, hooks registered with OnShutdown tell hijacked connections
//     (WebSockets) to go; when the budget runs out the remaining connections are closed
//     and the error says how many requests were cut off;
//  4. a second signal closes everything at once.
//
// With a preStop delay (nap) in front, Delay can be short; without one, Delay is the
// delay. Zero Options take their values from NAP_DRAIN_DELAY and NAP_DRAIN_TIMEOUT when
// set, else 5s and 20s. Each phase is logged with log/slog. The clock is injectable and
// there is no global state; Run drains any server with Serve/Shutdown/Close (gRPC's
// GracefulStop in the same shape).
package drain
