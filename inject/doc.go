// Package inject adds nap's preStop delay to the pod templates of a manifest and
// changes nothing else: one code path for `napctl inject` and the controller's webhook.
//
// NewPlan resolves the options once (the delay, native sleep or the nap binary, the
// cluster's kubelets); Inject splices text into the original bytes at the positions of
// the parsed nodes, never decoding and re-encoding, so that comments, order, quoting
// and layout stay as they were, then reads its own output back and fails with file:line
// rather than write something it did not mean to. Patch runs the same plan on a pod an
// API server sent and returns JSON Patch operations.
//
// One file per idea:
//   - options.go: what the caller asks for (Options, the modes and deliveries);
//   - plan.go: the plan resolved from them, and its decisions per pod template;
//   - steps.go: the plan's steps on one template (targets, hook, mount, volume, grace);
//   - editor.go: the interface the steps edit through, with two implementations:
//     splice.go, the text splicer (Inject), and jsonpatch.go, the JSON Patch editor
//     (Patch);
//   - nodes.go: lookups and constructors of YAML nodes;
//   - inject.go: the entry points (Inject, Parts, Patch) and the check of the output.
package inject
