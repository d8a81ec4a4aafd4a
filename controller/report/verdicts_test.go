package report

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/go-logr/logr"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/traffic"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
			[]containerVerdict{{container: "app", kind: nap.Quiet, end: 10 * time.Second, last: 800 * time.Millisecond}}},
		// 3,600 connections in an hour: 2 per 2 s window, under SparseBelow.
		{"quiet and sparse", pod(hour, hookOf("10s"), "nap/v1 quiet end=10000ms last=0ms conns=0 total=3600\n"),
			[]containerVerdict{{container: "app", kind: nap.Sparse, end: 10 * time.Second}}},
		// 14,400 in an hour: 8 per window, 6 of them the probes' (--allow 6): 2 beyond.
		{"dense only with the probes", pod(hour, hookOf("10s", "--allow", "6"), "nap/v1 quiet end=10000ms last=0ms conns=0 total=14400\n"),
			[]containerVerdict{{container: "app", kind: nap.Sparse, end: 10 * time.Second}}},
		// The adaptive wait's own QUIET: 500 ms windows, 1 each.
		{"adaptive: its QUIET", pod(hour, hookOf("--quiet", "500ms", "--max", "60s"), "nap/v1 quiet end=900ms last=0ms conns=0 total=7200\n"),
			[]containerVerdict{{container: "app", kind: nap.Sparse, end: 900 * time.Millisecond}}},
		// Few connections, a pool's, whose requests the wait saw stop: quiet, not sparse.
		{"quiet, a pool's requests seen to stop", pod(hour, hookOf("10s"), "nap/v1 quiet end=10000ms last=6000ms conns=0 total=3600 kept=6000ms\n"),
			[]containerVerdict{{container: "app", kind: nap.Quiet, end: 10 * time.Second, last: 6 * time.Second}}},
		{"held", pod(hour, hookOf("10s"), "nap/v1 held end=10000ms last=10000ms conns=0 total=3600 kept=10000ms\n"),
			[]containerVerdict{{container: "app", kind: nap.Held, end: 10 * time.Second, last: 10 * time.Second}}},
		{"late, two containers, one running", pod(hour, hookOf("10s"), "nap/v1 late end=10000ms last=9900ms conns=9 total=9\n", "running"),
			[]containerVerdict{{container: "app", kind: nap.Late, end: 10 * time.Second, last: 9900 * time.Millisecond}}},
		{"cut, and the app's own text", pod(hour, hookOf("10s"), "nap/v1", "panic: nil map\n"),
			[]containerVerdict{{container: "app", kind: nap.Cut}}},
		{"blind", pod(hour, hookOf("10s"), "nap/v1 blind end=10000ms\n"), []containerVerdict{{container: "app", kind: nap.Blind, end: 10 * time.Second}}},
		// Not nap's hook: its QUIET and ALLOW unknown, never sparse.
		{"another hook", pod(hour, nil, "nap/v1 quiet end=10000ms last=0ms conns=0 total=0\n"), []containerVerdict{{container: "app", kind: nap.Quiet, end: 10 * time.Second}}},
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

// TestTalliesResults: what a namespace's report says of its terminations: the first at
// once, quiet ones after it held back until a minute has passed (and when to ask
// again), a late one at once; nothing new at rest; an earlier run's counts taken up;
// a namespace gone, forgotten.
func TestTalliesResults(t *testing.T) {
	web := kube.Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	quiet := containerVerdict{container: "app", kind: nap.Quiet, last: 1200 * time.Millisecond}
	late := containerVerdict{container: "app", kind: nap.Late, last: 9 * time.Second}
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	var ts tallies
	say := func(at time.Duration) (string, time.Duration) {
		t.Helper()
		rs, again := ts.results("shop", t0.Add(at), time.Minute)
		if len(rs) != 1 {
			t.Fatalf("at %v: %d results, want 1: %+v", at, len(rs), rs)
		}
		return rs[0].Outcome + " " + rs[0].Properties["terminations"], again
	}
	for _, step := range []struct {
		at        time.Duration
		add       *containerVerdict
		want      string
		wantAgain time.Duration
	}{
		{0, &quiet, "pass 1", 0},
		{10 * time.Second, &quiet, "pass 1", 50 * time.Second}, // held back
		{20 * time.Second, nil, "pass 1", 40 * time.Second},
		{60 * time.Second, nil, "pass 2", 0},   // due
		{61 * time.Second, &late, "fail 3", 0}, // at once
		{62 * time.Second, nil, "fail 3", 0},   // at rest
	} {
		if step.add != nil {
			ts.add(web, "web-1", *step.add, []string{"clusterip", "lb-pods"}, t0.Add(step.at))
		}
		if got, again := say(step.at); got != step.want || again != step.wantAgain {
			t.Errorf("at %v: %q, ask again in %v; want %q, %v", step.at, got, again, step.want, step.wantAgain)
		}
	}
	if rs, _ := ts.results("other", t0, time.Minute); rs != nil {
		t.Errorf("a namespace with no terminations: %+v", rs)
	}

	// A new Reporter takes up what the report said, and says the same until one more.
	said, _ := ts.results("shop", t0.Add(time.Hour), time.Minute)
	var next tallies
	next.seed(map[string][]policyreport.Result{"shop": said})
	if got, _ := next.get(web); got.Total() != 3 || got.Count(nap.Late) != 1 || got.LastPod != "web-1" || !slices.Equal(got.LastPaths, []string{"clusterip", "lb-pods"}) {
		t.Errorf("taken up: %+v, want 3 terminations, 1 late of web-1, reached by clusterip and lb-pods", got)
	}
	again, _ := next.results("shop", t0.Add(time.Hour), time.Minute)
	if len(again) != 1 || !reflect.DeepEqual(again[0], said[0]) {
		t.Errorf("after taking up: %+v, want what was said, %+v", again, said)
	}
	next.add(web, "web-2", quiet, []string{"clusterip"}, t0.Add(time.Hour))
	if rs, _ := next.results("shop", t0.Add(2*time.Hour), time.Minute); rs[0].Properties["terminations"] != "4" {
		t.Errorf("one more: %+v", rs[0].Properties)
	}
	next.forget("shop")
	if _, ok := next.get(web); ok {
		t.Error("a namespace gone is not forgotten")
	}
}

// TestCountedByPath: a termination is counted for every traffic path that reached its
// pod when it ended (its Services from the cache, and the front doors naming them): the
// path metrics, a quiet one's tail in each path's histogram, and a late one's paths in
// its workload's tally; a pod no Service selects is counted for no path. Each is handed
// to Learn with its figures and paths.
func TestCountedByPath(t *testing.T) {
	web := map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5"}
	cl := fake.NewClientBuilder().WithObjects(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-lb", Namespace: "shop"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal}},
	).Build()
	var learned []string
	r := &Reporter{Client: cl, Log: logr.Discard(), Learn: func(o traffic.Observation) {
		learned = append(learned, fmt.Sprintf("%s %s %v %v %s", o.Pod, o.Kind, o.End, o.Last, traffic.RouteKey(o.Paths)))
	}}
	ended := func(name, line string, labels map[string]string) *podSummary {
		p := webPod(name, func(p *corev1.Pod) {
			p.Labels = labels
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: line}}}}
		})
		return summaryOf(p)
	}
	count := func(path, verdict string) float64 {
		return testutil.ToFloat64(pathTerminations.WithLabelValues(path, verdict))
	}
	before := map[string]float64{}
	for _, p := range []string{"clusterip", "nodeport", "lb-local", "lb-cluster"} {
		before[p+" quiet"], before[p+" late"] = count(p, nap.Quiet), count(p, nap.Late)
	}
	r.counted(nil, ended("a", "nap/v1 quiet end=10000ms last=2500ms conns=9 total=900000\n", web))
	r.counted(nil, ended("b", "nap/v1 late end=10000ms last=9900ms conns=9 total=900000\n", web))
	r.counted(nil, ended("c", "nap/v1 late end=10000ms last=9900ms conns=9 total=900000\n", map[string]string{"app": "batch"}))
	for path, want := range map[string]float64{"clusterip": 1, "nodeport": 1, "lb-local": 1, "lb-cluster": 0} {
		if got := count(path, nap.Quiet) - before[path+" quiet"]; got != want {
			t.Errorf("%s: %v quiet, want %v", path, got, want)
		}
		if got := count(path, nap.Late) - before[path+" late"]; got != want {
			t.Errorf("%s: %v late, want %v", path, got, want)
		}
	}
	if n := testutil.CollectAndCount(pathTails); n < 3 {
		t.Errorf("the tails' histogram has %d series, want one for each path that reached a quiet pod", n)
	}
	got, ok := r.Terminations(kube.Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"})
	if !ok || got.Total() != 2 || got.LastPod != "web-7d9f8c6b5-b" || !slices.Equal(got.LastPaths, []string{"clusterip", "nodeport", "lb-local"}) {
		t.Errorf("web's tally: %+v, want 2, the late one web-7d9f8c6b5-b reached by clusterip, nodeport, lb-local", got)
	}
	if want := []string{"shop/web-7d9f8c6b5-a quiet 10s 2.5s clusterip+nodeport+lb-local", "shop/web-7d9f8c6b5-b late 10s 9.9s clusterip+nodeport+lb-local",
		"shop/web-7d9f8c6b5-c late 10s 9.9s "}; !slices.Equal(learned, want) {
		t.Errorf("learned from %q, want %q", learned, want)
	}
}

// TestHeldByPool: a held termination is counted late where a client that pools reached
// the pod (an Ingress in front of its Service): the pool's; held where only its
// ClusterIP did: a keep-alive client's. The Learner hears the same.
func TestHeldByPool(t *testing.T) {
	web := map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5"}
	for _, tc := range []struct {
		name    string
		ingress bool
		want    string
	}{
		{"behind an ingress", true, "shop/web-7d9f8c6b5-a late"},
		{"its ClusterIP alone", false, "shop/web-7d9f8c6b5-a held"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithObjects(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}).Build()
			var learned []string
			r := &Reporter{Client: cl, Log: logr.Discard(), Learn: func(o traffic.Observation) {
				learned = append(learned, fmt.Sprintf("%s %s", o.Pod, o.Kind))
			}, Fronts: func(context.Context, string) (kube.Frontends, error) {
				return kube.Frontends{"web": {Ingress: tc.ingress}}, nil
			}}
			p := webPod("a", func(p *corev1.Pod) {
				p.Labels = web
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					Message: "nap/v1 held end=10000ms last=10000ms conns=0 total=900000 kept=10000ms\n"}}}}
			})
			r.counted(nil, summaryOf(p))
			if !slices.Equal(learned, []string{tc.want}) {
				t.Errorf("learned %q, want %q", learned, tc.want)
			}
		})
	}
}
