// Command app is the demo service of nap's end-to-end tests: a static Go HTTP server
// built into a scratch image (no shell, no sleep inside), with
//
//	/          "ok <hostname>"
//	/slow?d=D  the same after sleeping D (e.g. 2s)
//	/healthz   liveness
//	/readyz    readiness
//
// It shuts down in one of two modes, so the downtime experiment can compare them:
//
//	-mode plain  what most Go services do: http.Server.Shutdown at the first SIGTERM
//	             (the listener closes at once);
//	-mode drain  package drain: readiness 503, keep serving for NAP_DRAIN_DELAY, then
//	             shut down within NAP_DRAIN_TIMEOUT.
//
// The mode also comes from APP_MODE.
package main
