package forensic

import (
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/sleeper/nap"
)

// TestVerdictsLine: the line a measurement logs is read back, as go test writes it, into
// its scenario and counts; other lines are not its, and a damaged one says so.
func TestVerdictsLine(t *testing.T) {
	start := time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)
	js := []Judged{
		{End: End{Pod: "app-1", Verdict: nap.Late, Line: "nap/v1 late end=1000ms last=1000ms conns=55 total=201 kept=0ms", Exited: start.Add(3 * time.Second)}, Lost: 12},
		{End: End{Pod: "app-2", Verdict: nap.Quiet, Line: "nap/v1 quiet end=7000ms last=1600ms conns=23 total=167 kept=0ms", Exited: start.Add(9 * time.Second)}},
		{End: End{Pod: "app-3", Verdict: nap.Held, Line: "nap/v1 held end=5000ms last=5000ms conns=3 total=9 kept=5000ms", Exited: start.Add(9 * time.Second)}},
		{End: End{Pod: "app-4", Verdict: nap.Sparse, Exited: start.Add(12 * time.Second)}, Lost: 1},
		{End: End{Pod: "app-5", Verdict: nap.Cut, Exited: start.Add(13 * time.Second)}},
	}
	scenario := "ClusterIP from node 2, rolling restart, nap preStop 1s"
	line := VerdictsLine(scenario, js, start)
	want := Count(js)
	for _, tc := range []struct{ name, line string }{
		{"as made", line},
		{"as go test logs it", "    calibrate_test.go:260: " + line + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, c, ok, err := ReadVerdictsLine(tc.line)
			if !ok || err != nil || sc != scenario || c != want {
				t.Errorf("ReadVerdictsLine: %q, %+v, %v, %v; want %q, %+v", sc, c, ok, err, scenario, want)
			}
		})
	}
	if want != (Confusion{LateLost: 1, HeldClean: 1, QuietClean: 1, SparseLost: 1, Cut: 1}) {
		t.Errorf("counted %+v", want)
	}

	for _, other := range []string{
		"",
		"    calibrate_test.go:260: | ClusterIP from node 2 | rolling restart | nap preStop 1s | 1 | 1702 | 199 (refused 9, timeout 190) | 199 / 0 | 3.68 s |",
		"--- PASS: TestCalibrateSlowedPath (59.22s)",
	} {
		if _, _, ok, err := ReadVerdictsLine(other); ok || err != nil {
			t.Errorf("ReadVerdictsLine(%q): ok %v, err %v; want neither", other, ok, err)
		}
	}
	for _, bad := range []string{
		strings.Replace(line, "1 / 0 | 0 / 1", "1 / x | 0 / 1", 1),
		strings.Replace(line, "): app-1", ") app-1", 1),
		"    x_test.go:1: " + line[len(scenario):],
		strings.Replace(line, "1 / 0 |", "99999999999999999999 / 0 |", 1),
	} {
		if _, _, ok, err := ReadVerdictsLine(bad); !ok || err == nil || !strings.Contains(err.Error(), "nap's verdicts") && !strings.Contains(err.Error(), "out of range") {
			t.Errorf("ReadVerdictsLine(%q): ok %v, err %v; want an error naming the line", bad, ok, err)
		}
	}
}

// FuzzReadVerdictsLine: any line is read without a panic, and what a line is read as
// makes a line (VerdictsLine's shape) that reads back as the same counts with a scenario.
func FuzzReadVerdictsLine(f *testing.F) {
	f.Add("    calibrate_test.go:260: ClusterIP from node 2, rolling restart, nap preStop 1s" + verdictsPhrase + "0 / 3 | 0 / 0 | 0 / 0 | 0 / 0 | 0 | 0): app late")
	f.Add("x" + verdictsPhrase + "1 / 2 | 3 / 4 | 5 / 6 | 7 / 8 | 9 | 10): ")
	f.Add("")
	f.Fuzz(func(t *testing.T, line string) {
		sc, c, ok, err := ReadVerdictsLine(line)
		if !ok || err != nil {
			return
		}
		again, c2, ok2, err2 := ReadVerdictsLine(sc + verdictsPhrase + c.String() + "): ")
		if !ok2 || err2 != nil || c2 != c || again == "" {
			t.Errorf("%q read as %q %+v, which reads back as %q %+v (%v, %v)", line, sc, c, again, c2, ok2, err2)
		}
	})
}
