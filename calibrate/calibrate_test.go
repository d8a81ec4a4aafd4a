package calibrate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/traffic"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Image: "i"}, ""},
		{Options{}, "image is required"},
		{Options{Image: "i", Paths: PathConfig{IngressClass: "traefik"}}, "go together"},
		{Options{Image: "i", Paths: PathConfig{IngressURL: "http://x"}}, "go together"},
		{Options{Image: "i", Rounds: -1}, "must not be negative"},
		{Options{Image: "i", Replicas: 1}, "replicas 1"},
	} {
		err := tc.o.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{0.1, 0.2, 0.3, 0.4, 1.5}
	if q := quantile(s, 0.5); q != 0.3 {
		t.Errorf("p50 %v", q)
	}
	if q := quantile(s, 0.99); q != 1.5 {
		t.Errorf("p99 %v", q)
	}
	if q := quantile([]float64{2}, 0.5); q != 2 {
		t.Errorf("one value: %v", q)
	}
}

// The namespace: created and marked when absent, reused when marked by an earlier run,
// refused when someone else's unless allowed; cleanup deletes only what calibrate owns.
func TestNamespace(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(kubeenv.APIServer(t))
	ctx := context.Background()
	opts := Options{Namespace: "cal", Image: "i"}
	created, err := prepareNamespace(ctx, cs, opts)
	if err != nil || !created {
		t.Fatalf("fresh namespace: created %v, %v", created, err)
	}
	if created, err := prepareNamespace(ctx, cs, opts); err != nil || !created {
		t.Errorf("our own namespace again: created %v, %v", created, err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "theirs"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	theirs := Options{Namespace: "theirs", Image: "i"}
	if _, err := prepareNamespace(ctx, cs, theirs); err == nil || !strings.Contains(err.Error(), "calibrate did not create it") {
		t.Errorf("someone else's namespace: %v", err)
	}
	theirs.UseExisting = true
	if created, err := prepareNamespace(ctx, cs, theirs); err != nil || created {
		t.Errorf("someone else's namespace, allowed: created %v, %v", created, err)
	}
	theirs.defaults()
	cleanup(cs, theirs, false)
	if ns, err := cs.CoreV1().Namespaces().Get(ctx, "theirs", metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("cleanup touched a namespace it did not create: %v", err)
	}
	opts.defaults()
	cleanup(cs, opts, true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, "cal", metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && ns.DeletionTimestamp != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calibrate's namespace not deleted: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// advice names the deciding path, says what shortens its tail, and gives the other
// paths' tails to compare.
func TestAdvice(t *testing.T) {
	rep := &Report{Grace: Seconds(65 * time.Second), Longest: "lb-local", Paths: []Stats{
		{Path: Path{Name: "clusterip"}, Samples: 5, Max: 1.2},
		{Path: Path{Name: "lb-local"}, Samples: 5, Max: 33.1},
		{Path: Path{Name: "lb-cluster"}, Samples: 5, Max: 1.3},
	}}
	got := advice(rep, Options{AcceptGrace: time.Minute})
	for _, want := range []string{"1m5s is longer than 1m0s", "lb-local path's tail", "healthCheckNodePort", "externalTrafficPolicy Cluster",
		"clusterip max 1.2s, lb-cluster max 1.3s"} {
		if !strings.Contains(got, want) {
			t.Errorf("advice lacks %q:\n%s", want, got)
		}
	}
}

// TestRecommend: the fixed delay covers the longest tail; the adaptive wait's MIN is the
// fixed delay (sparse traffic cannot end it early), its MAX twice the fixed delay and at
// least nap's default.
func TestRecommend(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		paths                   []Stats
		delay, min, max, aGrace time.Duration
		longest                 string
	}{
		{"in-cluster only", []Stats{{Path: Path{Name: "clusterip"}, Samples: 6, Max: 1.2}, {Path: Path{Name: "ingress"}, Samples: 6, Max: 2.1}},
			5 * time.Second, 5 * time.Second, time.Minute, 90 * time.Second, "ingress"},
		{"behind an NLB", []Stats{{Path: Path{Name: "clusterip"}, Samples: 5, Max: 1.2}, {Path: Path{Name: "lb-local"}, Samples: 5, Max: 33.1}},
			36 * time.Second, 36 * time.Second, 72 * time.Second, 102 * time.Second, "lb-local"},
		{"the load balancer alone", []Stats{{Path: Path{Name: "lb-cluster"}, Samples: 2, Max: 4.5}, {Path: Path{Name: "clusterip"}, Samples: 0}},
			7 * time.Second, 7 * time.Second, time.Minute, 90 * time.Second, "lb-cluster"},
	} {
		rep := &Report{Paths: tc.paths}
		recommend(rep, Options{Margin: DefaultMargin, Drain: DefaultDrain, AcceptGrace: DefaultAccept})
		a := rep.Adaptive
		if aw := a.Wait(); rep.Delay.Duration() != tc.delay || rep.Longest != tc.longest || aw.Min != tc.min || aw.Delay != tc.max || aw.Quiet != 2*time.Second || !aw.IsAdaptive() || a.Grace.Duration() != tc.aGrace || aw.Check() != nil {
			t.Errorf("%s: delay %v on %s, adaptive %+v; want %v on %s, MIN %v QUIET 2s MAX %v grace %v", tc.name, rep.Delay, rep.Longest, a, tc.delay, tc.longest, tc.min, tc.max, tc.aGrace)
		}
		// What --save keeps: the measured paths only, each with the delay it needs; the
		// slowest one's is the recommendation.
		st := rep.Stored
		if st.APIVersion != traffic.CalibrationAPIVersion || st.Kind != traffic.CalibrationKind || st.MarginS != 2 || st.Measured.IsZero() {
			t.Errorf("%s: stored %+v", tc.name, st)
		}
		for _, s := range tc.paths {
			got, ok := st.Tail(s.Path.Name)
			if ok != (s.Samples > 0) || ok && (got.Max != s.Max || got.DelayS != math.Ceil(s.Max+2)) {
				t.Errorf("%s: stored %s: %+v %v", tc.name, s.Path.Name, got, ok)
			}
		}
		if d, path, ok := st.Needs(traffic.All()); !ok || d != rep.Delay.Duration() || path != rep.Longest {
			t.Errorf("%s: the stored calibration needs %v for %s (%v), the recommendation is %v for %s", tc.name, d, path, ok, rep.Delay, rep.Longest)
		}
	}
}

// TestReportJSON: the report's durations are numbers of seconds in JSON, as their names
// say, and read back as the same durations.
func TestReportJSON(t *testing.T) {
	rep := &Report{Paths: []Stats{{Path: Path{Name: "lb-local"}, Samples: 5, Max: 33.1}}}
	recommend(rep, Options{Margin: DefaultMargin, Drain: DefaultDrain, AcceptGrace: DefaultAccept})
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"recommended_delay_seconds":36,`, `"recommended_grace_period_seconds":66,`,
		`"adaptive_wait":{"min_seconds":36,"quiet_seconds":2,"max_seconds":72,"grace_period_seconds":102}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s: no %s", b, want)
		}
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Delay != rep.Delay || back.Grace != rep.Grace || back.Adaptive != rep.Adaptive {
		t.Errorf("read back: %+v (%v), want %+v", back, err, rep)
	}
	var half Seconds
	if err := json.Unmarshal([]byte("2.5"), &half); err != nil || half.Duration() != 2500*time.Millisecond || half.String() != "2.5s" {
		t.Errorf("2.5 seconds: %v, %v", half, err)
	}
}

// TestRecommendFromRounds: from the rounds as measured (each replaced pod's tail per
// path; a path that never sent to a pod has none) to the recommendation: the quantiles
// per path, the slowest path's longest tail deciding, a path with no sample left out of
// what is stored.
func TestRecommendFromRounds(t *testing.T) {
	paths := []Path{{Name: "clusterip"}, {Name: "lb-local"}, {Name: "ingress"}}
	var rounds []Round
	for i, lb := range []float64{12.5, 31.2, 0, 29.9, 24} { // a scale-down pod each round behind the load balancer
		rounds = append(rounds,
			Round{Round: i, Pod: fmt.Sprintf("a-%d", i), Disruption: RollingRestart, Tails: map[string]float64{"clusterip": 0.4 + 0.1*float64(i)}},
			Round{Round: i, Pod: fmt.Sprintf("b-%d", i), Disruption: ScaleDown, Tails: map[string]float64{"clusterip": 1.1, "lb-local": lb}})
	}
	rep := &Report{Rounds: rounds, Paths: tails(paths, rounds)}
	recommend(rep, Options{Margin: DefaultMargin, Drain: DefaultDrain, AcceptGrace: DefaultAccept})
	want := []Stats{
		{Path: paths[0], Samples: 10, P50: 0.8, P99: 1.1, Max: 1.1}, // the nearest rank: the 5th of 10
		{Path: paths[1], Samples: 5, P50: 24, P99: 31.2, Max: 31.2},
		{Path: paths[2]},
	}
	for i, w := range want {
		if g := rep.Paths[i]; g.Path != w.Path || g.Samples != w.Samples || math.Abs(g.P50-w.P50) > 1e-9 || math.Abs(g.P99-w.P99) > 1e-9 || g.Max != w.Max {
			t.Errorf("%s: %+v, want %+v", w.Path.Name, g, w)
		}
	}
	if rep.Longest != "lb-local" || rep.Delay.Duration() != 34*time.Second || rep.Grace.Duration() != 64*time.Second || rep.Advice == "" {
		t.Errorf("recommended %v (grace %v) on %s, advice %q; want 34s (64s) on lb-local, with advice past 60s", rep.Delay, rep.Grace, rep.Longest, rep.Advice)
	}
	if _, ok := rep.Stored.Tail("ingress"); ok || len(rep.Stored.Paths) != 2 {
		t.Errorf("stored %+v: want clusterip and lb-local", rep.Stored.Paths)
	}
}
