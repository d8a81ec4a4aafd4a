// Package inject adds nap's preStop delay to the pod templates of a manifest and
// changes nothing else: one code path for `napctl inject` and the controller's webhook.
//
// NewPlan resolves the options once (the delay, native sleep or the nap binary, the
// cluster's kubelets); Inject splices text into the original bytes at the positions of
// the parsed nodes (edit.go), never decoding and re-encoding, so that comments, order,
// quoting and layout stay as they were, then reads its own output back and fails with
// file:line rather than write something it did not mean to.
package inject
