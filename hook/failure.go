package hook

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/sleeper/nap"
)

// BareFailure is the whole message of the kubelet's FailedPreStopHook event (1.34 and
// 1.37 alike): it leaves the error out, so that no secret of a hook leaks into events.
const BareFailure = "PreStopHook failed"

// Bare tells whether a FailedPreStopHook message is the kubelet's, with no reason.
func Bare(msg string) bool { return strings.TrimSpace(msg) == BareFailure }

// Cause is the part of a FailedPreStopHook message that says what went wrong: the
// runtime's description after a preamble ("exec: \"/bin/sh\": stat /bin/sh: no such
// file or directory"), or the whole message.
func Cause(msg string) string {
	for _, sep := range []string{"desc = ", "failed - error: ", "failed - "} {
		if i := strings.LastIndex(msg, sep); i >= 0 {
			return msg[i+len(sep):]
		}
	}
	return msg
}

// CauseLabel sorts a FailedPreStopHook message into a short cause, for a metric label:
// no-shell (the image has no /bin/sh or bash), no-binary (another command not found),
// non-zero-exit, http (an httpGet hook failed), refused (seccomp or permissions), other.
// A bare message (the kubelet's) carries no reason: it is labelled by what the hook
// runs, kind (hook-shell, hook-nap, hook-exec, hook-http, ...), or unknown.
func CauseLabel(msg string, kind Kind) string {
	if Bare(msg) {
		if kind == None {
			return "unknown"
		}
		return "hook-" + string(kind)
	}
	m := strings.ToLower(msg)
	notFound := strings.Contains(m, "no such file") || strings.Contains(m, "not found")
	switch {
	case notFound && (strings.Contains(m, "/bin/sh") || strings.Contains(m, "/bin/bash") || strings.Contains(m, `"sh"`) || strings.Contains(m, `"bash"`)):
		return "no-shell"
	case notFound:
		return "no-binary"
	case strings.Contains(m, "exited with") || strings.Contains(m, "exit code") || strings.Contains(m, "exit status"):
		return "non-zero-exit"
	case strings.Contains(m, "http"):
		return "http"
	case strings.Contains(m, "permission denied") || strings.Contains(m, "operation not permitted"):
		return "refused"
	}
	return "other"
}

// Explain is what a FailedPreStopHook message says went wrong, for a person; when the
// message gives no reason (the kubelet's own), what the pod's hook runs and what that
// suggests.
func Explain(msg string, spec corev1.PodSpec) string {
	if !Bare(msg) {
		return Cause(msg)
	}
	h, _ := First(spec)
	cmd := strings.Join(h.Command, " ")
	switch h.Kind {
	case Shell:
		return fmt.Sprintf("the kubelet gives no reason; the hook runs %q, which needs a shell or sleep binary the image may not have", cmd)
	case Nap:
		// Since Kubernetes 1.26 the event's text is fixed: what nap's exit statuses mean
		// is all there is to go on (sleeper/nap), and its line in the container's
		// termination message when the binary ran (a blind wait says blind there).
		return fmt.Sprintf("the kubelet gives no reason; the hook runs %q: the binary is missing (is the nap ConfigMap mounted there?), or nap exited non-zero after it waited: %d for an invalid argument (after the default 10s), %d when it could not read the pod's traffic (after MAX), %d at once when every sleep call was refused", cmd, nap.ExitInvalid, nap.ExitUnreadable, nap.ExitCannotSleep)
	case Exec:
		return fmt.Sprintf("the kubelet gives no reason; the hook runs %q", cmd)
	case HTTP:
		return "the kubelet gives no reason; the hook is an httpGet"
	case NativeSleep:
		return "the kubelet gives no reason; the hook is the native sleep"
	}
	return "the kubelet gives no reason"
}
