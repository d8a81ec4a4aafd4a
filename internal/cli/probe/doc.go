// Package probe is "napctl probe": it measures failed requests against a URL, for a
// duration or while a command (a rollout) runs.
package probe
