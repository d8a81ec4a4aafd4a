// Package connlog is the lab load balancer's connection log (hack/lb, TCP): where its
// HAProxy logs each connection, in what format, and how a line reads back. hack/lb
// writes the configuration from it; the end-to-end tests read the log from HAProxy's
// admin socket and look up each failed request's connection: which node it went to,
// from which port, and how it ended.
package connlog
