// Package wait is the preStop wait: how long a container's hook holds it before the
// kubelet sends SIGTERM, as one typed value (Wait) — a fixed delay, or nap's adaptive
// wait with its MIN, QUIET, MAX and ALLOW — with its defaults applied once.
//
// Text exists only at the edges, each with one reader and one writer here:
//   - flags and annotations (Input, Defaults.ForPod), in nap's duration syntax;
//   - a hook's argv (FromArgs, Wait.Args, Wait.Command);
//   - the MutatingAdmissionPolicy's CEL (Wait.CELCommand).
//
// Inside, waits are durations: inject plans with them, the webhook and the policy give
// them, hook reads them back out of pods for lint, status and the Reporter, and
// calibrate recommends one. A new wait parameter is a change to Wait, its readers and
// its writers here (and to the binaries, sleeper/nap first).
package wait
