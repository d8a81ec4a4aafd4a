package status

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// podOf: the names each controller gives its pods, and the near misses.
func TestPodOf(t *testing.T) {
	for _, tc := range []struct {
		kind, name, pod string
		want            bool
	}{
		{kind: "Deployment", name: "api", pod: "api-5d9f8c6b5-x7k2p", want: true},
		{kind: "Deployment", name: "api", pod: "api-canary-5d9f8c6b5-x7k2p", want: false},
		{kind: "Deployment", name: "api", pod: "api-x7k2p", want: false},
		{kind: "Deployment", name: "api", pod: "apix-5d9f8c6b5-x7k2p", want: false},
		{kind: "StatefulSet", name: "db", pod: "db-0", want: true},
		{kind: "StatefulSet", name: "db", pod: "db-12", want: true},
		{kind: "StatefulSet", name: "db", pod: "db-a", want: false},
		{kind: "StatefulSet", name: "db", pod: "db-", want: false},
		{kind: "DaemonSet", name: "agent", pod: "agent-x7k2p", want: true},
		{kind: "DaemonSet", name: "agent", pod: "agent-5d9f8c6b5-x7k2p", want: false},
		{kind: "ReplicaSet", name: "rs", pod: "rs-x7k2p", want: false},
	} {
		if got := podOf(tc.kind, tc.name, tc.pod); got != tc.want {
			t.Errorf("podOf(%s %s, %s) = %v, want %v", tc.kind, tc.name, tc.pod, got, tc.want)
		}
	}
}

// failureCause: a message's own reason when it has one, else what the hook runs (the
// kubelet's FailedPreStopHook event gives none).
func TestFailureCause(t *testing.T) {
	exec := func(cmd ...string) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}}}}}
	}
	for _, tc := range []struct {
		msg  string
		spec corev1.PodSpec
		want string
	}{
		{msg: `rpc error: code = Unknown desc = exec: "/bin/sh": stat /bin/sh: no such file or directory`, spec: exec("/bin/sh", "-c", "sleep 5"),
			want: `exec: "/bin/sh": stat /bin/sh: no such file or directory`},
		{msg: BareFailure, spec: exec("/bin/sh", "-c", "sleep 5"), want: `the kubelet gives no reason; the hook runs "/bin/sh -c sleep 5", which needs a shell or sleep binary the image may not have`},
		{msg: BareFailure, spec: exec("/nap/nap", "5s"), want: `the kubelet gives no reason; the hook runs "/nap/nap 5s": is the nap ConfigMap mounted there?`},
		{msg: BareFailure, spec: exec("/app", "stop"), want: `the kubelet gives no reason; the hook runs "/app stop"`},
		{msg: BareFailure, spec: corev1.PodSpec{}, want: "the kubelet gives no reason"},
	} {
		if got := failureCause(tc.msg, tc.spec); got != tc.want {
			t.Errorf("failureCause(%q, %v):\n got %s\nwant %s", tc.msg, tc.spec.Containers, got, tc.want)
		}
	}
}
