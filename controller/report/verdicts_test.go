package report

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/sleeper/nap"
)

// TestVerdictsOf: each terminated container's line, as the pod's final status gives it;
// sparse from the pod's age when its wait began (its deletion less its grace period) and
// its hook's window and background.
func TestVerdictsOf(t *testing.T) {
	now := time.Now()
	hookOf := func(args ...string) *corev1.Lifecycle {
		return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: append([]string{"/nap/nap"}, args...)}}}
	}
	pod := func(age time.Duration, lc *corev1.Lifecycle, messages ...string) *corev1.Pod {
		deleted := metav1.NewTime(now.Add(30 * time.Second))
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &deleted, DeletionGracePeriodSeconds: ptr.To[int64](30)},
			Status: corev1.PodStatus{StartTime: ptr.To(metav1.NewTime(now.Add(-age)))}}
		for i, m := range messages {
			name := []string{"app", "proxy"}[i]
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: name, Lifecycle: lc})
			st := corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: m}}}
			if m == "running" {
				st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
			}
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, st)
		}
		return p
	}
	hour := time.Hour
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []containerVerdict
	}{
		{"quiet and dense", pod(hour, hookOf("10s"), "nap/v1 quiet end=10000ms last=800ms conns=5 total=360000\n"),
			[]containerVerdict{{container: "app", kind: nap.Quiet, last: 800 * time.Millisecond}}},
		// 3,600 connections in an hour: 2 per 2 s window, under SparseBelow.
		{"quiet and sparse", pod(hour, hookOf("10s"), "nap/v1 quiet end=10000ms last=0ms conns=0 total=3600\n"),
			[]containerVerdict{{container: "app", kind: nap.Sparse}}},
		// 14,400 in an hour: 8 per window, 6 of them the probes' (--allow 6): 2 beyond.
		{"dense only with the probes", pod(hour, hookOf("10s", "--allow", "6"), "nap/v1 quiet end=10000ms last=0ms conns=0 total=14400\n"),
			[]containerVerdict{{container: "app", kind: nap.Sparse}}},
		// The adaptive wait's own QUIET: 500 ms windows, 1 each.
		{"adaptive: its QUIET", pod(hour, hookOf("--quiet", "500ms", "--max", "60s"), "nap/v1 quiet end=900ms last=0ms conns=0 total=7200\n"),
			[]containerVerdict{{container: "app", kind: nap.Sparse}}},
		{"late, two containers, one running", pod(hour, hookOf("10s"), "nap/v1 late end=10000ms last=9900ms conns=9 total=9\n", "running"),
			[]containerVerdict{{container: "app", kind: nap.Late, last: 9900 * time.Millisecond}}},
		{"cut, and the app's own text", pod(hour, hookOf("10s"), "nap/v1", "panic: nil map\n"),
			[]containerVerdict{{container: "app", kind: nap.Cut}}},
		{"blind", pod(hour, hookOf("10s"), "nap/v1 blind end=10000ms\n"), []containerVerdict{{container: "app", kind: nap.Blind}}},
		// Not nap's hook: its QUIET and ALLOW unknown, never sparse.
		{"another hook", pod(hour, nil, "nap/v1 quiet end=10000ms last=0ms conns=0 total=0\n"), []containerVerdict{{container: "app", kind: nap.Quiet}}},
		{"no line", pod(hour, hookOf("10s"), ""), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := verdictsOf(tc.pod)
			if len(got) != len(tc.want) {
				t.Fatalf("%+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("%+v, want %+v", got[i], tc.want[i])
				}
			}
		})
	}
	// Its age is when its wait began: deleted 30 s from now with a grace period of 30 s,
	// an hour after it started.
	if age := ageAtWait(pod(hour, nil, "x")); age < hour-time.Second || age > hour+time.Second {
		t.Errorf("age at the wait %v, want an hour", age)
	}
}
