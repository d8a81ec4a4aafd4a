package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/test/forensic"
)

// TestMergeResults: rows replace the table's for their scenario and rate, in the
// experiment's order; rows of the older forms are kept (the oldest as at 200 req/s); a
// calibrated variant's row is found whatever delay it names; rows no scenario measures
// are dropped; a line that is not a row of any form is an error naming it.
func TestMergeResults(t *testing.T) {
	order := []scenario{
		{path: clusterIPNode1, disruption: rollingRestart, variant: noDelay, rounds: 3},
		{path: lbPods, disruption: rollingRestart, variant: napCalibrated, rounds: 1},
		{path: lbPods, disruption: rollingRestart, variant: napCalibratedDrain, rounds: 1},
		{path: lbPods, disruption: rollingRestart, variant: noDelay, rounds: 1},
	}
	old := resultsHeader[:strings.Index(resultsHeader, "\n")] + "\n" +
		"| ClusterIP from node 1 | rolling restart | no preStop | 3 | 4251 | 136 (refused 93) | 130 / 6 | 2.33 s |\n" +
		"| ClusterIP from node 1 | rolling restart | gone variant | 3 | 1 | 0 | 0 / 0 | 0.00 s |\n" +
		"| L7 load balancer to pods, deregistered 10s late | rolling restart | nap preStop at the calibrated delay (12s) | 200 | 1 | 10 | 0 | 0 / 0 | 0.00 s | 2026-11-27 abc1234 |\n" +
		"| L7 load balancer to pods, deregistered 10s late | rolling restart | no preStop | 200 | 1 | 40 | 4 | 4 / 0 | 1.00 s | 2026-11-28 abc1234 |\n"
	fresh := map[resultKey]string{
		{1, 200}: "| L7 load balancer to pods, deregistered 10s late | rolling restart | nap preStop at the calibrated delay (13s) | 200 | 1 | 20 | 0 | 0 / 0 | 0.00 s | 13, 14, 14 s | 2026-11-28 def5678 |",
		{0, 2}: resultLine("| ClusterIP from node 1 | rolling restart | no preStop | 1 | 40 | 1 (refused 1) | 1 / 0 | 0.10 s |", 2,
			heldCell([]time.Duration{0, 400 * time.Millisecond, time.Second}), "2026-11-28 def5678"),
		{2, 200}: "| L7 load balancer to pods, deregistered 10s late | rolling restart | nap preStop at the calibrated delay + drain (13s) | 200 | 1 | 30 | 0 | 0 / 0 | 0.00 s | 13 to 14 s (9 pods) | 2026-11-28 def5678 |",
	}
	got, dropped, err := mergeResults(old, order, fresh)
	if err != nil {
		t.Fatal(err)
	}
	want := resultsHeader +
		"| ClusterIP from node 1 | rolling restart | no preStop | 200 | 3 | 4251 | 136 (refused 93) | 130 / 6 | 2.33 s | — | 2026-11-25 or before |\n" +
		"| ClusterIP from node 1 | rolling restart | no preStop | 2 | 1 | 40 | 1 (refused 1) | 1 / 0 | 0.10 s | 0, 0, 1 s | 2026-11-28 def5678 |\n" +
		fresh[resultKey{1, 200}] + "\n" + fresh[resultKey{2, 200}] + "\n" +
		"| L7 load balancer to pods, deregistered 10s late | rolling restart | no preStop | 200 | 1 | 40 | 4 | 4 / 0 | 1.00 s | — | 2026-11-28 abc1234 |\n"
	if got != want {
		t.Errorf("merged:\n%s\nwant:\n%s", got, want)
	}
	if len(dropped) != 1 || !strings.Contains(dropped[0], "gone variant") {
		t.Errorf("dropped %q, want the gone variant's row", dropped)
	}
	// Merging again changes nothing.
	if again, _, err := mergeResults(got, order, nil); err != nil || again != got {
		t.Errorf("merged again: %v\n%s", err, again)
	}
	if _, _, err := mergeResults(old+"| a | b |\n", order, nil); err == nil || !strings.Contains(err.Error(), "line 6: 2 cells") {
		t.Errorf("a short row: %v, want an error naming line 6", err)
	}
}

func TestHeldCell(t *testing.T) {
	for _, tc := range []struct {
		ds   []time.Duration
		want string
	}{
		{nil, "—"},
		{[]time.Duration{13 * time.Second, 14 * time.Second, 14 * time.Second}, "13, 14, 14 s"},
		{[]time.Duration{0, 0, 0, 1, 1, 1, 2 * time.Second}, "0 to 2 s (7 pods)"},
	} {
		if got := heldCell(tc.ds); got != tc.want {
			t.Errorf("heldCell(%v) = %q, want %q", tc.ds, got, tc.want)
		}
	}
}

// TestWriteConfusion: the confusion table's file, whole, from two rows: each row's
// counts, their totals, precision and recall of late.
func TestWriteConfusion(t *testing.T) {
	at := time.Date(2026, 12, 7, 2, 0, 0, 0, time.UTC)
	row := func(sc scenario, js ...forensic.Judged) judgedRow {
		return judgedRow{downtime{scenario: sc, verdicts: js}, 200}
	}
	rows := []judgedRow{
		row(scenario{path: clusterIPNode1, disruption: rollingRestart, variant: napBinary},
			forensic.Judged{End: forensic.End{Pod: "a", Verdict: nap.Late, Exited: at}, Lost: 0},
			forensic.Judged{End: forensic.End{Pod: "b", Verdict: nap.Quiet, Exited: at}, Lost: 0},
			forensic.Judged{End: forensic.End{Pod: "d", Verdict: nap.Held, Exited: at}, Lost: 0}),
		row(scenario{path: lbLocal, disruption: scaleDown, variant: napBinary},
			forensic.Judged{End: forensic.End{Pod: "c", Verdict: nap.Late, Exited: at}, Lost: 578}),
	}
	path := filepath.Join(t.TempDir(), "verdicts.md")
	writeConfusion(t, path, rows, "2026-12-07 abc1234")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		confusionIntro + confusionHeader,
		"| ClusterIP from node 1 | rolling restart | nap preStop (binary) | 200 | 3 | 0 / 1 | 0 / 1 | 0 / 1 | 0 / 0 | 0 | 0 | 2026-12-07 abc1234 |\n",
		"| all | | | | 4 | 1 / 1 | 0 / 1 | 0 / 1 | 0 / 0 | 0 | 0 | |\n",
		"Precision of late: 0.50. Recall of late: 1.00. Recall of late or held: 1.00.",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the table lacks %q:\n%s", want, b)
		}
	}
}
