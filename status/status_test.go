package status

import "testing"

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
