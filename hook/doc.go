// Package hook is the one vocabulary of preStop hooks: what a container's hook is (the
// native sleep, nap, a shell or sleep binary, another command, an httpGet), how long it
// holds the container when that can be read, whether it needs a shell in the image, what
// a FailedPreStopHook event says went wrong. lint, status and the controller's Reporter
// read hooks only through it, so that a new kind of hook is one change here.
package hook
