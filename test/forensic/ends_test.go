package forensic

import (
	"slices"
	"testing"
	"time"

	"github.com/nap-k8s/nap/sleeper/nap"
)

func TestAttribute(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	times := func(ss ...float64) []time.Time {
		var out []time.Time
		for _, s := range ss {
			out = append(out, at(s))
		}
		return out
	}
	for _, c := range []struct {
		name   string
		ends   []End
		failed []time.Time
		want   []int // each end's Lost, in the order of their exits
	}{
		{"a rollout: each pod what failed until the next one's exit",
			[]End{{"c", nap.Quiet, "", at(20)}, {"a", nap.Late, "", at(5)}, {"b", nap.Quiet, "", at(12)}},
			times(4.5, 5, 6.2, 11.9, 25), []int{3, 0, 1}},
		{"nothing failed",
			[]End{{"a", nap.Quiet, "", at(5)}}, nil, []int{0}},
		{"a drain: two exits in one second share what failed after them",
			[]End{{"a", nap.Late, "", at(7)}, {"b", nap.Late, "", at(8)}, {"c", nap.Quiet, "", at(30)}},
			times(8.5, 9, 12, 31), []int{3, 3, 1}},
		{"failures before the first exit are no pod's",
			[]End{{"a", nap.Quiet, "", at(10)}}, times(1, 2, 9.99), []int{0}},
		{"after the measurement's end: not counted",
			[]End{{"a", nap.Quiet, "", at(10)}}, times(39, 41), []int{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Attribute(c.ends, c.failed, at(40))
			var lost []int
			for i, j := range got {
				lost = append(lost, j.Lost)
				if i > 0 && j.Exited.Before(got[i-1].Exited) {
					t.Errorf("not in the order of the exits: %v", got)
				}
			}
			if !slices.Equal(lost, c.want) {
				t.Errorf("lost %v, want %v", lost, c.want)
			}
		})
	}
}

func TestConfusion(t *testing.T) {
	c := Count([]Judged{
		{End{Verdict: nap.Late}, 3}, {End{Verdict: nap.Late}, 1}, {End{Verdict: nap.Late}, 0},
		{End{Verdict: nap.Quiet}, 2}, {End{Verdict: nap.Quiet}, 0}, {End{Verdict: nap.Quiet}, 0},
		{End{Verdict: nap.Held}, 4}, {End{Verdict: nap.Held}, 0}, {End{Verdict: nap.Held}, 0},
		{End{Verdict: nap.Sparse}, 5}, {End{Verdict: nap.Cut}, 9}, {End{Verdict: nap.Blind}, 0},
	})
	if got, want := c.String(), "2 / 1 | 1 / 2 | 1 / 2 | 1 / 0 | 1 | 1"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if p, ok := c.Precision(); !ok || p != 2.0/3 {
		t.Errorf("precision %v %v, want 2/3", p, ok)
	}
	// Sparse says it cannot tell: not a miss of late; held is.
	if r, ok := c.Recall(); !ok || r != 2.0/4 {
		t.Errorf("recall %v %v, want 2/4", r, ok)
	}
	if r, ok := c.RecallHeld(); !ok || r != 3.0/4 {
		t.Errorf("recall of late or held %v %v, want 3/4", r, ok)
	}
	var none Confusion
	none.Merge(c)
	if none != c || none.Ends() != 12 {
		t.Errorf("merged %+v, want %+v (12 ends)", none, c)
	}
	if _, ok := (Confusion{QuietClean: 4}).Precision(); ok {
		t.Error("a precision with no late verdict")
	}
	if _, ok := (Confusion{LateClean: 4}).Recall(); ok {
		t.Error("a recall with no pod that lost")
	}
}
