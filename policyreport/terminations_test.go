package policyreport

import (
	"cmp"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/sleeper/nap"
)

// terminations is a workload's: 142 of them, one late, a tail kept of each quiet one.
func terminations() Terminations {
	t := Terminations{Since: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	for i := range 140 {
		t.Add(nap.Quiet, time.Duration(1000+i*20)*time.Millisecond, "web-q", nil, time.Time{})
	}
	t.Add(nap.Sparse, 0, "web-s", nil, time.Time{})
	t.Add(nap.Late, 9900*time.Millisecond, "web-7d9f8c6b5-x", []string{"clusterip", "lb-pods"}, time.Date(2026, 12, 1, 8, 12, 0, 0, time.UTC))
	return t
}

// TestTerminations: a workload's counts, its ring of 64 tails and their quantiles, its
// outcome, and what it says; as a result's properties and back, unchanged.
func TestTerminations(t *testing.T) {
	tm := terminations()
	if tm.Total() != 142 || tm.Count(nap.Quiet) != 140 || tm.Count(nap.Late) != 1 || tm.Count("loud") != 0 {
		t.Errorf("counts %v, total %d", tm.Counts, tm.Total())
	}
	// The last 64 quiet ones: 1000+76*20 ms to 1000+139*20 ms.
	if p50, n := tm.Tail(0.5); n != TailSamples || p50 != (1000+108*20)*time.Millisecond {
		t.Errorf("tail p50 %v of %d", p50, n)
	}
	const want = "142 terminations since 2026-11-25 10:00 UTC: 140 quiet, 1 sparse, 1 late; tail p50 3.16s, p99 3.78s of 64; last late or cut 2026-12-01 08:12 UTC, pod web-7d9f8c6b5-x, reached by clusterip, lb-pods"
	if got := tm.String(); got != want {
		t.Errorf("String:\n%s\nwant\n%s", got, want)
	}
	if got := tm.Short(); got != "142: 140 quiet, 1 sparse, 1 late; p99 3.78s" {
		t.Errorf("Short: %s", got)
	}
	for _, tc := range []struct {
		kind, want string
	}{{nap.Quiet, Pass}, {nap.Sparse, Pass}, {nap.Blind, Warn}, {nap.Held, Warn}, {nap.Late, Fail}, {nap.Cut, Fail}} {
		var one Terminations
		one.Add(tc.kind, 0, "p", nil, time.Now())
		if got := one.Outcome(); got != tc.want {
			t.Errorf("one %s: outcome %s, want %s", tc.kind, got, tc.want)
		}
	}

	r := tm.Result(api)
	if r.Policy != TerminationsPolicy || r.Outcome != Fail || r.Message != want || r.Properties["tailP99"] != "3.78s" || r.Properties["late"] != "1" {
		t.Errorf("result %+v", r)
	}
	back, ok := TerminationsOf(r)
	if !ok || !reflect.DeepEqual(back, tm) {
		t.Errorf("read back %+v (%v), want %+v", back, ok, tm)
	}
	if _, ok := TerminationsOf(r1); ok {
		t.Error("another result read as terminations")
	}
	for _, bad := range []map[string]string{{"since": "yesterday"}, {"since": "2026-11-25T10:00:00Z", "quiet": "-1"},
		{"since": "2026-11-25T10:00:00Z", "tails": "1,x"}, {"since": "2026-11-25T10:00:00Z", "lastLate": "soon"}} {
		if _, ok := TerminationsOf(Result{Policy: TerminationsPolicy, Properties: bad}); ok {
			t.Errorf("properties %v read as terminations", bad)
		}
	}

	b, err := json.Marshal(tm)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); !strings.Contains(got, `"verdicts":{"late":1,"quiet":140,"sparse":1}`) || !strings.Contains(got, `"tailP99":"3.78s","tailsMs":[2520,`) ||
		!strings.Contains(got, `"lastLate":"2026-12-01T08:12:00Z"`) {
		t.Errorf("JSON %s", got)
	}
	var fromJSON Terminations
	if err := json.Unmarshal(b, &fromJSON); err != nil || !reflect.DeepEqual(fromJSON, tm) {
		t.Errorf("JSON read back %+v (%v), want %+v", fromJSON, err, tm)
	}
	if err := json.Unmarshal([]byte(`{"verdicts": {"loud": 1}}`), &fromJSON); err == nil {
		t.Error("a verdict nap has not read from JSON")
	}
}

// TestParse: a report, in either format, read back into the results it was made of,
// each with its outcome.
func TestParse(t *testing.T) {
	in := []Result{r1, r2, terminations().Result(api)}
	for _, f := range Formats {
		got, err := Parse(Report(f, "shop", in))
		if err != nil {
			t.Fatal(err)
		}
		want := []Result{r2, r1, in[2]} // sorted by policy
		for i := range want {
			want[i].Outcome = cmp.Or(want[i].Outcome, Fail)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read back\n%+v\nwant\n%+v", f.Kind, got, want)
		}
	}
}
