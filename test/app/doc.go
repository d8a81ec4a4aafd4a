// Command app is the demo service of nap's end-to-end tests: a static Go HTTP server
// built into a scratch image (no shell, no sleep inside), with
//
//	/          "ok <hostname>"
//	/slow?d=D  the same after sleeping D (e.g. 2s)
//	/healthz   liveness
//	/readyz    readiness
//	/ws        a WebSocket of numbered messages, every 100 ms, from ?from=N
//	/events    an event stream of the same, from after Last-Event-ID
//
// (the streams also under one prefix, /PREFIX/ws and /PREFIX/events, as an ingress that
// routes /NAMESPACE/ passes them on)
// and gRPC on :9090 (-grpc-addr): the standard health service, grpc.health.v1, which
// `napctl probe grpc://...` calls and a Kubernetes gRPC probe reads.
//
// It shuts down in one of two modes, so the downtime experiment can compare them:
//
//	-mode plain  what most Go services do: http.Server.Shutdown and grpc's GracefulStop
//	             at the first SIGTERM (the listeners close at once);
//	-mode drain  package drain: readiness 503 (gRPC health NOT_SERVING), keep serving
//	             for NAP_DRAIN_DELAY, then shut down within NAP_DRAIN_TIMEOUT
//	             (drain/grpcdrain for gRPC).
//
// The mode also comes from APP_MODE. With -fill FILE:MiB (or APP_FILL) it first writes
// that much data into FILE: a pod that puts its node's file system under pressure.
package main
