package traffic

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/wait"
)

func TestRouteKey(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		want  string
	}{
		{nil, ""},
		{[]string{"lb-pods", "clusterip"}, "clusterip+lb-pods"},
		{[]string{"ingress", "clusterip", "ingress"}, "clusterip+ingress"},
		{[]string{"no-such-path"}, ""},
	} {
		if got := RouteKey(tc.paths); got != tc.want {
			t.Errorf("RouteKey(%q) = %q, want %q", tc.paths, got, tc.want)
		}
	}
}

// TestLearn: the learning rule, termination by termination. Each step is one
// termination of a pod the route clusterip+lb-pods reached; want is the route's need
// after it (0: none), changed whether Observe said so.
func TestLearn(t *testing.T) {
	route := []string{"clusterip", "lb-pods"}
	at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	quiet := func(last time.Duration) Observation {
		return Observation{Paths: route, Kind: nap.Quiet, End: 12 * time.Second, Last: last, Pod: "shop/web-1", At: at}
	}
	late := func(end time.Duration) Observation { // cut off: traffic until its end
		return Observation{Paths: route, Kind: nap.Late, End: end, Last: end, Pod: "shop/web-2", At: at}
	}
	quiets := func(n int, last time.Duration) []Observation {
		var out []Observation
		for range n {
			out = append(out, quiet(last))
		}
		return out
	}
	type step struct {
		o       []Observation
		want    time.Duration
		changed bool
		why     string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a few quiet ones say nothing yet", []step{
			{o: quiets(LearnSettle-1, 3*time.Second), want: 0},
		}},
		{"enough quiet ones: the longest tail plus the margin", []step{
			{o: quiets(LearnSettle-1, 3*time.Second), want: 0},
			{o: []Observation{quiet(3200 * time.Millisecond)}, want: 7 * time.Second, changed: true, why: "20 quiet terminations of pods reached by clusterip, lb-pods, their traffic's tail at most 3.2 s"},
			{o: quiets(1, time.Second), want: 7 * time.Second},
		}},
		{"a late one cut off raises at once, to twice its end and the margin", []step{
			{o: []Observation{late(5 * time.Second)}, want: 13 * time.Second, changed: true, why: "pod shop/web-2's wait ended at 5.0 s with traffic still arriving (late, 2026-12-06T10:00:00Z), so at least 13 s"},
		}},
		{"cut off: its last traffic within half a second of its end", []step{
			{o: []Observation{{Paths: route, Kind: nap.Late, End: 5 * time.Second, Last: 4500 * time.Millisecond, Pod: "shop/web-2", At: at}}, want: 13 * time.Second, changed: true},
		}},
		{"a late one whose traffic stopped before its end: that was the tail", []step{
			{o: []Observation{{Paths: route, Kind: nap.Late, End: 12 * time.Second, Last: 10400 * time.Millisecond, Pod: "shop/web-3", At: at}}, want: 14 * time.Second, changed: true,
				why: "pod shop/web-3's wait saw traffic until 10.4 s of its 12.0 s (late, 2026-12-06T10:00:00Z), so at least 14 s"},
		}},
		{"a late one of a pod that held less than the raise changes nothing", []step{
			{o: []Observation{late(5 * time.Second)}, want: 13 * time.Second, changed: true},
			{o: []Observation{late(5 * time.Second)}, want: 13 * time.Second},
			{o: []Observation{late(6 * time.Second)}, want: 15 * time.Second, changed: true},
		}},
		{"after a raise, lowered only on enough quiet ones", []step{
			{o: []Observation{late(5 * time.Second)}, want: 13 * time.Second, changed: true},
			{o: quiets(LearnSettle-1, 10500*time.Millisecond), want: 13 * time.Second},
			{o: quiets(1, 8*time.Second), want: 14 * time.Second, changed: true},
		}},
		{"the tails lower a raise, not below what its late one proved, until the route forgets it", []step{
			{o: []Observation{late(5 * time.Second)}, want: 13 * time.Second, changed: true},
			{o: quiets(LearnSettle, time.Second), want: 8 * time.Second, changed: true,
				why: "their traffic's tail at most 1.0 s, but pod shop/web-2's wait ended at 5.0 s with traffic still arriving (late, 2026-12-06T10:00:00Z), so at least 8 s until 64 quiet ones came after it"},
			{o: quiets(LearnKeep-LearnSettle-1, time.Second), want: 8 * time.Second},
			{o: quiets(1, time.Second), want: 4 * time.Second, changed: true, why: "64 quiet terminations"},
		}},
		{"a late one whose traffic stopped proves its tail", []step{
			{o: []Observation{{Paths: route, Kind: nap.Late, End: 12 * time.Second, Last: 10400 * time.Millisecond, Pod: "shop/web-3", At: at}}, want: 14 * time.Second, changed: true},
			{o: quiets(LearnSettle, time.Second), want: 14 * time.Second},
		}},
		{"one late in 50 (the scale benchmark's mix): the route stays at or above what the lates proved", []step{
			{o: []Observation{late(5 * time.Second)}, want: 13 * time.Second, changed: true},
			{o: quiets(49, time.Second), want: 8 * time.Second, changed: true},
			{o: []Observation{late(5 * time.Second)}, want: 13 * time.Second, changed: true},
			{o: quiets(49, time.Second), want: 8 * time.Second, changed: true},
		}},
		{"a raise starts the tails again", []step{
			{o: quiets(LearnSettle, time.Second), want: 4 * time.Second, changed: true},
			{o: []Observation{late(3 * time.Second)}, want: 9 * time.Second, changed: true},
			{o: quiets(LearnSettle-1, time.Second), want: 9 * time.Second},
		}},
		{"held is a keep-alive client's (a pool's is counted late): nothing", []step{
			{o: []Observation{{Paths: route, Kind: nap.Held, End: 5 * time.Second, Last: 5 * time.Second, Pod: "shop/web-4", At: at}}, want: 0},
		}},
		{"a quiet one whose wait could not see a pooling client's traffic says nothing", []step{
			{o: func() []Observation {
				out := quiets(LearnSettle, time.Second)
				for i := range out {
					out[i].PoolUnread = true
				}
				return out
			}(), want: 0},
		}},
		{"sparse, blind and cut say nothing of the tail", []step{
			{o: []Observation{{Paths: route, Kind: nap.Sparse, End: 5 * time.Second}, {Paths: route, Kind: nap.Blind}, {Paths: route, Kind: nap.Cut}}, want: 0},
		}},
		{"a pod no path reached has no route", []step{
			{o: []Observation{{Kind: nap.Late, End: 5 * time.Second}}, want: 0},
		}},
	} {
		l := NewLearned()
		for i, s := range tc.steps {
			changed := false
			for _, o := range s.o {
				_, c := l.Observe(o)
				changed = c || changed
			}
			r, ok := l.Lookup(route)
			got, why, _ := r.Need()
			if !ok {
				got = 0
			}
			if got != s.want || changed != s.changed || !strings.Contains(why, s.why) {
				t.Errorf("%s, step %d: need %v (%q), changed %v; want %v (%q), changed %v", tc.name, i, got, why, changed, s.want, s.why, s.changed)
			}
		}
		if n := len(l.Routes); n > 1 {
			t.Errorf("%s: %d routes, want at most 1", tc.name, n)
		}
	}
}

func TestLearnKeeps(t *testing.T) {
	l := NewLearned()
	for i := range LearnKeep + 10 {
		l.Observe(Observation{Paths: []string{"clusterip"}, Kind: nap.Quiet, Last: time.Duration(i) * time.Millisecond})
	}
	r, _ := l.Lookup([]string{"clusterip"})
	if len(r.TailsMS) != LearnKeep || r.TailsMS[0] != 10 {
		t.Errorf("%d tails from %d ms; want the newest %d, from 10 ms", len(r.TailsMS), r.TailsMS[0], LearnKeep)
	}
}

func TestReadLearned(t *testing.T) {
	l := NewLearned()
	l.Observe(Observation{Paths: []string{"lb-pods", "clusterip"}, Kind: nap.Late, End: 5 * time.Second, Last: 5 * time.Second, Pod: "a/b", At: time.Unix(0, 0)})
	doc, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadLearned(strings.NewReader(string(doc)), "learned.json")
	if err != nil {
		t.Fatal(err)
	}
	if back.Needs()["clusterip+lb-pods"] != 13*time.Second {
		t.Errorf("read back %+v, want clusterip+lb-pods at 13 s", back.Needs())
	}
	for _, tc := range []struct{ doc, want string }{
		{`{}`, `learned.json: apiVersion "", kind ""`},
		{`{"apiVersion": "learn.nap.dev/v1", "kind": "Learned", "extra": 1}`, "learned.json: not the waits learned from production"},
		{`{"apiVersion": "learn.nap.dev/v1", "kind": "Learned", "routes": [{"paths": "lb-pods+clusterip"}]}`, `routes[0]: paths "lb-pods+clusterip"`},
		{`{"apiVersion": "learn.nap.dev/v1", "kind": "Learned", "routes": [{"paths": "clusterip"}, {"paths": "clusterip"}]}`, `routes[1]: paths "clusterip" twice`},
		{`{"apiVersion": "learn.nap.dev/v1", "kind": "Learned", "routes": [{"paths": "clusterip", "tails_ms": [-1]}]}`, `routes[0] (clusterip): negative figures`},
	} {
		if _, err := ReadLearned(strings.NewReader(tc.doc), "learned.json"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// TestRouteLearned: a pod's wait with what its route learned, beside the stored
// calibration: above what was measured, never below it; below the fleet's wait only
// once settled.
func TestRouteLearned(t *testing.T) {
	c, err := ReadCalibration(strings.NewReader(stored), "cal.json")
	if err != nil {
		t.Fatal(err)
	}
	web := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"alb.ingress.kubernetes.io/target-type": "ip"}}}
	fronts := func(string) kube.Fronts { return kube.Fronts{Ingress: true} }
	route := []string{"clusterip", "ingress", "lb-pods"}
	late := NewLearned()
	late.Observe(Observation{Paths: route, Kind: nap.Late, End: 10 * time.Second, Last: 10 * time.Second, Pod: "shop/web-1", At: time.Unix(0, 0)})
	settled := NewLearned()
	for range LearnSettle {
		settled.Observe(Observation{Paths: route, Kind: nap.Quiet, Last: 1500 * time.Millisecond})
	}
	settled1s := NewLearned()
	for range LearnSettle {
		settled1s.Observe(Observation{Paths: route, Kind: nap.Quiet, Last: 900 * time.Millisecond})
	}
	elsewhere := NewLearned()
	elsewhere.Observe(Observation{Paths: []string{"clusterip", "lb-pods"}, Kind: nap.Late, End: 10 * time.Second, Last: 10 * time.Second})
	fixed := wait.Wait{Kind: wait.Fixed, Delay: 10 * time.Second}
	for _, tc := range []struct {
		name    string
		c       *Calibration
		l       *Learned
		want    time.Duration
		learned string // in the reason; "" none
	}{
		{"nothing learned, lb-pods unmeasured: the fleet's", c, nil, 10 * time.Second, ""},
		{"a late one: raised above the fleet's", c, late, 23 * time.Second, "pod shop/web-1's wait ended at 10.0 s"},
		{"a late one, no calibration", nil, late, 23 * time.Second, "pod shop/web-1's wait ended at 10.0 s"},
		{"settled: below the fleet's, not below the stored calibration's 5 s", c, settled, 5 * time.Second, ""},
		{"settled, no calibration: its own", nil, settled1s, 4 * time.Second, "20 quiet terminations of pods reached by clusterip, ingress, lb-pods"},
		{"another route's learning is not this one's", c, elsewhere, 10 * time.Second, ""},
	} {
		n := WithLearned(tc.c, tc.l).Route([]*corev1.Service{web}, fronts)
		w := n.Wait(fixed)
		reason := n.Reason(w)
		if w.Delay != tc.want || strings.Contains(reason, "learned from production") != (tc.learned != "") || !strings.Contains(reason, tc.learned) {
			t.Errorf("%s: %v (%q), want %v with %q", tc.name, w.Delay, reason, tc.want, tc.learned)
		}
		if tc.learned != "" && n.Why() == "" {
			t.Errorf("%s: no why", tc.name)
		}
	}
	if WithLearned(c, nil) != c || c.Learned != nil {
		t.Error("WithLearned changed the stored calibration, or made a copy for nothing")
	}
}
