package report

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
)

// TestEventPace: a change that 30 namespaces feel at once (each a workload with a pod
// not injected) at a pace of 1 event a second past a burst of 10: 10 events at once,
// the other 20 booked a second apart in the order their namespaces were synced, each
// told when its namespace is synced at or after its turn and not before, none twice,
// none lost; the late ones counted by nap_reporter_events_delayed_total.
func TestEventPace(t *testing.T) {
	const n, burst = 30, 10
	var objs []client.Object
	var names []string
	for i := range n {
		ns := fmt.Sprintf("team-%02d", i)
		names = append(names, ns)
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{kube.InjectLabel: "enabled"}}},
			webPod("a", func(p *corev1.Pod) { p.Namespace = ns }))
	}
	cl := fake.NewClientBuilder().WithObjects(objs...).Build()
	rec := record.NewFakeRecorder(2 * n)
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	now := t0
	r := &Reporter{Client: cl, Recorder: rec, Scope: scope.OptIn, Kube: kube.Version{Major: 1, Minor: 34}, Log: logr.Discard(),
		EventRate: 1, EventBurst: burst, clock: func() time.Time { return now }}
	t.Cleanup(func() {
		for _, ns := range names {
			r.forget(context.Background(), ns)
		}
	})
	delayed := testutil.ToFloat64(eventsDelayed)
	syncAll := func(at time.Duration) []string {
		t.Helper()
		now = t0.Add(at)
		for _, ns := range names {
			if err := r.Sync(context.Background(), ns); err != nil {
				t.Fatal(err)
			}
		}
		return eventsOf(rec)
	}
	for _, step := range []struct {
		at      time.Duration
		told    int
		delayed int // in all, so far
		waiting int
	}{
		{0, burst, 0, n - burst},
		{0, 0, 0, n - burst},                           // synced again at once: nobody's turn yet
		{5 * time.Second, 5, 5, n - burst - 5},         // the first five booked
		{5500 * time.Millisecond, 0, 5, n - burst - 5}, // nobody's turn between them
		{20 * time.Second, n - burst - 5, 20, 0},       // the rest
		{time.Minute, 0, 20, 0},                        // told once: never again
	} {
		if got := syncAll(step.at); len(got) != step.told {
			t.Errorf("at %v: %d events, want %d: %q", step.at, len(got), step.told, got)
		}
		if got := testutil.ToFloat64(eventsDelayed) - delayed; got != float64(step.delayed) {
			t.Errorf("at %v: %v events delayed, want %d", step.at, got, step.delayed)
		}
		if got := testutil.ToFloat64(eventsWaiting); got != float64(step.waiting) {
			t.Errorf("at %v: %v events waiting, want %d", step.at, got, step.waiting)
		}
	}
	// The turns: a second apart, in the order the namespaces asked.
	for i, ns := range names[burst:] {
		if want := t0.Add(time.Duration(i+1) * time.Second); !r.state[ns].due.Equal(want) {
			t.Errorf("%s was due at %v, want %v", ns, r.state[ns].due.Sub(t0), want.Sub(t0))
		}
	}
}

// TestEventPacePathLast: a path's findings (a raised route: every workload it reaches
// at once) are told after the workloads' own and from spare tokens alone, never booked:
// at a pace of 1 a second past a burst of 3, namespace a's two own findings take two
// tokens and one of its four path findings the third; b's two own findings find none
// and are booked (due at 2 s); a's other path findings wait for no turn (none waiting,
// nothing booked for a), are not told while b's booked tokens are owed, and are told
// once at a later sync of a with tokens spare; nothing twice.
func TestEventPacePathLast(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	now := t0
	rec := record.NewFakeRecorder(20)
	r := &Reporter{Recorder: rec, Log: logr.Discard(), EventRate: 1, EventBurst: 3, clock: func() time.Time { return now }}
	r.init()
	find := func(ns, name string, reason Reason) Finding {
		return Finding{Workload: kube.Workload{Kind: "Deployment", Namespace: ns, Name: name}, Reason: reason, Pods: []string{name + "-1"}}
	}
	a := &nsState{reported: map[findingKey]int{}, found: []Finding{ // the path's first, as a sort may put them
		find("a", "p1", DelayBelowPath), find("a", "p2", DelayBelowPath), find("a", "p3", AdaptiveMissesPool), find("a", "p4", DelayBelowPath),
		find("a", "o1", NotInjected), find("a", "o2", FailedPreStopHook)}}
	b := &nsState{reported: map[findingKey]int{}, found: []Finding{find("b", "o3", NotInjected), find("b", "o4", DelayExceedsGrace)}}
	t.Cleanup(func() {
		eventsWaiting.Sub(float64(a.waiting + b.waiting))
		unprotected.DeletePartialMatch(map[string]string{"namespace": "a"})
		unprotected.DeletePartialMatch(map[string]string{"namespace": "b"})
		hookFailures.DeletePartialMatch(map[string]string{"namespace": "a"})
	})
	waiting0 := testutil.ToFloat64(eventsWaiting)
	for _, step := range []struct {
		at      time.Duration
		ns      string
		want    []string // the workloads told, in order
		waiting int      // in all
	}{
		{0, "a", []string{"o1", "o2", "p1"}, 0},
		{0, "b", nil, 2},
		{500 * time.Millisecond, "a", nil, 2},
		{2 * time.Second, "b", []string{"o3", "o4"}, 0},
		{2 * time.Second, "a", nil, 0}, // no token spare: b's were owed until now
		{5 * time.Second, "a", []string{"p2", "p3", "p4"}, 0},
		{time.Minute, "a", nil, 0},
		{time.Minute, "b", nil, 0},
	} {
		now = t0.Add(step.at)
		st := map[string]*nsState{"a": a, "b": b}[step.ns]
		r.report(step.ns, st)
		var got []string
	drain:
		for {
			select {
			case e := <-rec.Events:
				for _, w := range []string{"o1", "o2", "o3", "o4", "p1", "p2", "p3", "p4"} {
					if strings.Contains(e, w+"-1") {
						got = append(got, w)
					}
				}
			default:
				break drain
			}
		}
		if !slices.Equal(got, step.want) {
			t.Errorf("at %v, %s synced: told %q, want %q", step.at, step.ns, got, step.want)
		}
		if w := testutil.ToFloat64(eventsWaiting) - waiting0; w != float64(step.waiting) {
			t.Errorf("at %v, %s synced: %v waiting, want %d", step.at, step.ns, w, step.waiting)
		}
		if a.prepaid != 0 {
			t.Errorf("at %v: %d events booked for a's path findings, want none", step.at, a.prepaid)
		}
	}
	if want := t0.Add(2 * time.Second); !b.due.Equal(want) {
		t.Errorf("b's turn at %v, want 2s", b.due.Sub(t0))
	}
}
