package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nap-k8s/nap/controller/report"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/policyreport/writer"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// TestReporterVerdicts: against a real kube-apiserver (envtest), the Reporter counts
// each termination's verdict from its pod watch, as the kubelet's final status brings
// it (state.terminated.message): once per container however often the pod is updated
// after, by workload; sparse told from quiet by the pod's age; a late and a cut one
// each a Warning event on the workload; the metric by verdict alone. A pod already
// terminated when the Reporter starts is not counted.
func TestReporterVerdicts(t *testing.T) {
	ctx, mgr, c := startedManager(t, false)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, messages ...string) *corev1.Pod {
		t.Helper()
		return napPod(t, ctx, c, "shop", name, messages...)
	}
	dense := "nap/v1 quiet end=10000ms last=1200ms conns=40 total=5000000\n" // 5 M connections in a day: 115 per 2 s
	// Terminated before the Reporter starts: the past, not counted.
	pod("web-7d9f8c6b5-before", dense)

	rec := record.NewFakeRecorder(100)
	r := &report.Reporter{Client: mgr.GetClient(), Informers: mgr.GetCache(), Recorder: rec, Log: logr.Discard()}
	before := map[string]float64{}
	for _, k := range report.Verdicts {
		before[k] = terminationsMetric(t, k)
	}
	if err := r.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	web := kube.Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}

	p := pod("web-7d9f8c6b5-a", dense, "nap/v1 late end=10000ms last=9900ms conns=3000 total=5000000\n")
	pod("web-7d9f8c6b5-b", "nap/v1 quiet end=10000ms last=2500ms conns=3 total=20\n") // 20 in a day: sparse
	pod("web-7d9f8c6b5-c", "nap/v1")                                                  // cut
	pod("web-7d9f8c6b5-d", "app: bye\n")                                              // no verdict: not nap's line
	pod("web-7d9f8c6b5-e")                                                            // still running
	// An update after the final status (a label) counts nothing again.
	p.Labels["touched"] = "yes"
	if err := c.Update(ctx, p); err != nil {
		t.Fatal(err)
	}

	want := map[string]int{nap.Quiet: 1, nap.Late: 1, nap.Sparse: 1, nap.Cut: 1}
	var got policyreport.Terminations
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		got, _ = r.Terminations(web)
		if got.Total() == 4 {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // the label's update, had it counted again
	got, _ = r.Terminations(web)
	for _, k := range report.Verdicts {
		if got.Count(k) != want[k] {
			t.Errorf("%s: %d terminations, want %d (all: %d)", k, got.Count(k), want[k], got.Total())
		}
		if d := terminationsMetric(t, k) - before[k]; d != float64(want[k]) {
			t.Errorf("nap_terminations_total{verdict=%q} rose by %v, want %d", k, d, want[k])
		}
	}
	if tail, n := got.Tail(0.99); tail != 1200*time.Millisecond || n != 1 {
		t.Errorf("the observed tail p99 %v of %d, want 1.2s of 1", tail, n)
	}
	if got.LastPod != "web-7d9f8c6b5-a" && got.LastPod != "web-7d9f8c6b5-c" {
		t.Errorf("the last late or cut one: pod %q", got.LastPod)
	}
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	joined := strings.Join(events, "\n")
	for _, w := range []string{"Warning " + report.EventTerminationLate + " pod web-7d9f8c6b5-a, container proxy", "Warning " + report.EventTerminationCut + " pod web-7d9f8c6b5-c, container app"} {
		if !strings.Contains(joined, w) {
			t.Errorf("no event %q in %q", w, events)
		}
	}
	if len(events) != 2 {
		t.Errorf("%d events, want 2: %q", len(events), events)
	}
}

// napPod makes a running pod of Deployment web in namespace ns (two containers with
// nap's hook, started a day ago), and ends it with the messages given, as the kubelet's
// final status does (none: left running).
func napPod(t *testing.T, ctx context.Context, c client.Client, ns, name string, messages ...string) *corev1.Pod {
	t.Helper()
	yes := true
	started := metav1.NewTime(time.Now().Add(-24 * time.Hour))
	napHook := &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/nap/nap", "10s", "--allow", "1"}}}}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"pod-template-hash": "7d9f8c6b5"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5", UID: types.UID("rs"), Controller: &yes}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app", Lifecycle: napHook}, {Name: "proxy", Image: "proxy", Lifecycle: napHook}}}}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if len(messages) == 0 {
		return p
	}
	p.Status.StartTime = &started
	p.Status.Phase = corev1.PodSucceeded
	for i, ct := range p.Spec.Containers {
		st := corev1.ContainerStatus{Name: ct.Name, Image: ct.Image, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}
		if i < len(messages) {
			st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: messages[i], StartedAt: started, FinishedAt: metav1.Now()}}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, st)
	}
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTerminationsReport: against a real kube-apiserver with OpenReports' CRD, the
// Reporter as the manager runs it puts what a workload's terminations said in its
// namespace's Report: the first at once, a quiet one after it held back for
// TerminationsEvery, a late one at once; a Reporter started after it takes the counts
// up from the Report and writes nothing at its start.
func TestTerminationsReport(t *testing.T) {
	ctx, mgr, c := startedManager(t, true)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tally"}}); err != nil {
		t.Fatal(err)
	}
	const every = 8 * time.Second
	start := func() (*report.Reporter, context.CancelFunc) {
		rctx, stop := context.WithCancel(ctx)
		r := &report.Reporter{Client: mgr.GetClient(), Informers: mgr.GetCache(), Log: logr.Discard(), Batch: 100 * time.Millisecond,
			Reports: &writer.Writer{Client: c, Format: policyreport.OpenReports}, TerminationsEvery: every}
		go r.Start(rctx)
		return r, stop
	}
	// said is what the Report says of web's terminations ("" none), and its version.
	said := func() (string, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(policyreport.OpenReports.GroupVersion.WithKind(policyreport.OpenReports.Kind))
		if err := c.Get(ctx, client.ObjectKey{Namespace: "tally", Name: policyreport.Name}, u); err != nil {
			return "", ""
		}
		results, err := policyreport.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if tm, ok := policyreport.TerminationsOf(r); ok && r.Workload.Name == "web" {
				return r.Outcome + " " + tm.Short(), u.GetResourceVersion()
			}
		}
		return "", u.GetResourceVersion()
	}
	await := func(want string, within time.Duration) string {
		t.Helper()
		var got, rv string
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if got, rv = said(); got == want {
				return rv
			}
		}
		t.Fatalf("the report says %q of web's terminations, want %q", got, want)
		return ""
	}
	const quiet = "nap/v1 quiet end=10000ms last=1200ms conns=40 total=5000000\n"
	r, stop := start()
	time.Sleep(time.Second) // its informers, started
	first := time.Now()     // the first report is written after this
	napPod(t, ctx, c, "tally", "web-7d9f8c6b5-a", quiet)
	await("pass 1: 1 quiet; p99 1.2s", 10*time.Second)
	napPod(t, ctx, c, "tally", "web-7d9f8c6b5-b", quiet)
	// Held back until TerminationsEvery after the first report, whenever the test
	// itself gets the CPU.
	for time.Since(first) < every-200*time.Millisecond {
		if got, _ := said(); got != "pass 1: 1 quiet; p99 1.2s" && time.Since(first) < every {
			t.Errorf("%v after the first report at the latest: %q, want the second quiet one held back for %v", time.Since(first), got, every)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	await("pass 2: 2 quiet; p99 1.2s", every+5*time.Second)
	napPod(t, ctx, c, "tally", "web-7d9f8c6b5-c", "nap/v1 late end=10000ms last=9900ms conns=3000 total=5000000\n")
	rv := await("fail 3: 2 quiet, 1 late; p99 1.2s", every/2)
	if got, _ := r.Terminations(kube.Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "tally", Name: "web"}); got.LastPod != "web-7d9f8c6b5-c" {
		t.Errorf("the last late one: %q", got.LastPod)
	}
	stop()

	// A new Reporter (a restart, a new leader): the counts go on from the Report's.
	next, stopNext := start()
	defer stopNext()
	web := kube.Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "tally", Name: "web"}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, ok := next.Terminations(web); ok && next.Synced() > 0 {
			break
		}
	}
	time.Sleep(time.Second) // its first sync of the namespace
	if got, ok := next.Terminations(web); !ok || got.Total() != 3 || got.Count(nap.Late) != 1 {
		t.Errorf("taken up: %+v (%v), want 3 terminations, 1 late", got, ok)
	}
	if _, now := said(); now != rv {
		t.Errorf("the report was written at the start (%s → %s)", rv, now)
	}
	napPod(t, ctx, c, "tally", "web-7d9f8c6b5-d", quiet)
	await("fail 4: 3 quiet, 1 late; p99 1.2s", 10*time.Second)
}

// terminationsMetric is nap_terminations_total's value for verdict, from the
// controller's registry.
func terminationsMetric(t *testing.T, verdict string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "nap_terminations_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "verdict" && l.GetValue() == verdict {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no nap_terminations_total{verdict=%q}", verdict)
	return 0
}
