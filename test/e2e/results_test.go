package e2e

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/test/forensic"
)

// docs/downtime-results.md, the experiment's table, is kept row by row: a run measures
// the scenarios NAP_DOWNTIME_ONLY names (all of them by default) and replaces their
// rows, each dated and marked with the commit it ran, keeping every other row the file
// holds. The whole table at 3 rounds takes longer than one sitting; this way it is
// regenerated in parts, and each row says when. Rows of scenarios the experiment no
// longer has are dropped, and said so.

// resultsHeader heads the table: row's columns, the probe's rate after the variant,
// how long the pods took from deletion to exit, and when the row was measured.
const resultsHeader = "| path | disruption | variant | req/s | rounds | requests | failed | failed new / reuse conns | longest outage | pods, deletion to exit | measured |\n|---|---|---|---|---|---|---|---|---|---|---|\n"

// resultLine is a row of row() as a line of the table: the rate inserted after the
// variant, how long the pods held (heldCell) and when it was measured appended.
func resultLine(row string, rate float64, held, measured string) string {
	cells := strings.Split(strings.Trim(row, "| "), " | ")
	cells = slices.Insert(cells, 3, strconv.FormatFloat(rate, 'g', -1, 64))
	return "| " + strings.Join(append(cells, held, measured), " | ") + " |"
}

// heldCell says how long the pods took from their deletion to their app's exit (whole
// seconds, the API server's): each, up to 6 pods; beyond, the least and the most.
// "—": none seen (a row whose pods the kubelet stopped is timed in its log).
func heldCell(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = strconv.Itoa(int(d.Round(time.Second).Seconds()))
	}
	if len(s) > 6 {
		return fmt.Sprintf("%s to %s s (%d pods)", s[0], s[len(s)-1], len(s))
	}
	return strings.Join(s, ", ") + " s"
}

// measuredMark is when and at what commit rows measured now were measured: the date,
// and the commit of the tree (with "+" when it has changes not committed).
func measuredMark() string {
	mark := time.Now().UTC().Format(time.DateOnly)
	if out, err := exec.Command("git", "describe", "--always", "--dirty=+", "--abbrev=7").Output(); err == nil {
		mark += " " + strings.TrimSpace(string(out))
	}
	return mark
}

// resultKey is a row's place in the table: its scenario's index in the experiment and
// its rate (higher first).
type resultKey struct {
	scenario int
	rate     float64
}

// matchScenario finds the scenario of order a line of the table measured: its path,
// disruption and variant, the variant's name followed by " (DELAY)" for a calibrated
// variant. -1: none.
func matchScenario(order []scenario, cells []string) int {
	return slices.IndexFunc(order, func(sc scenario) bool {
		if cells[0] != sc.pathName() || cells[1] != sc.disruption.String() {
			return false
		}
		return cells[2] == sc.variant.name || sc.variant.calibrated && strings.HasPrefix(cells[2], sc.variant.name+" (")
	})
}

// mergeResults is the table old (the file's text; "" when there is none) with the rows
// of fresh in place of those it had for the same scenario and rate, in the order of the
// experiment. A row of the oldest form, without the rate, held and measured columns, is
// taken as at 200 req/s and marked as measured before this form existed; one without
// the held column alone gets "—" there. dropped lists the rows that no scenario of
// order names.
func mergeResults(old string, order []scenario, fresh map[resultKey]string) (table string, dropped []string, err error) {
	rows := map[resultKey]string{}
	for i, line := range strings.Split(old, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| path |") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		switch len(cells) {
		case 8: // the oldest form
			line = resultLine(line, 200, "—", "2026-11-25 or before")
		case 10: // no held column
			line = "| " + strings.Join(slices.Insert(cells, 9, "—"), " | ") + " |"
		case 11:
		default:
			return "", nil, fmt.Errorf("line %d: %d cells, want 11 (or 8 or 10, older forms): %q", i+1, len(cells), line)
		}
		cells = strings.Split(strings.Trim(line, "| "), " | ")
		rate, err := strconv.ParseFloat(cells[3], 64)
		if err != nil {
			return "", nil, fmt.Errorf("line %d: req/s %q: %v", i+1, cells[3], err)
		}
		n := matchScenario(order, cells)
		if n < 0 {
			dropped = append(dropped, line)
			continue
		}
		rows[resultKey{n, rate}] = line
	}
	for k, line := range fresh {
		rows[k] = line
	}
	keys := make([]resultKey, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b resultKey) int {
		return cmp.Or(cmp.Compare(a.scenario, b.scenario), cmp.Compare(b.rate, a.rate))
	})
	var b strings.Builder
	b.WriteString(resultsHeader)
	for _, k := range keys {
		b.WriteString(rows[k] + "\n")
	}
	return b.String(), dropped, nil
}

// writeResults merges fresh into the table at path (mergeResults) and writes it whole,
// through a file beside it renamed into place.
func writeResults(t *testing.T, path string, order []scenario, fresh map[resultKey]string) {
	t.Helper()
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	table, dropped, err := mergeResults(string(old), order, fresh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, d := range dropped {
		t.Logf("%s: dropped, no scenario of the experiment measures it: %s", path, d)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// judgedRow is a row of the experiment whose pods ran nap's binary, at its rate.
type judgedRow struct {
	d    downtime
	rate float64
}

// confusionIntro opens the confusion table's file.
const confusionIntro = "# nap's verdicts against what was lost\n\n" +
	"Written whole by `make e2e-downtime` (NAP_VERDICTS_OUT) over the rows that run measured, whose pods ran nap's binary: " +
	"each pod's verdict, as the controller counts it, against whether requests over new connections failed after its app exited " +
	"([downtime.md](downtime.md), \"nap's verdicts against what was lost\"). Do not edit.\n\n"

// confusionHeader heads the confusion table: each row's pods with a verdict, counted by
// verdict and by whether requests over new connections failed after their app exited
// (forensic.Attribute).
const confusionHeader = "| path | disruption | variant | req/s | pods | late: lost / none lost | held: lost / none lost | quiet: lost / none lost | sparse: lost / none lost | cut | blind | measured |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"

// writeConfusion writes the confusion table of rows to path, whole, with the totals and
// the precision and recall of late over them.
func writeConfusion(t *testing.T, path string, rows []judgedRow, measured string) {
	t.Helper()
	var b strings.Builder
	b.WriteString(confusionIntro)
	b.WriteString(confusionHeader)
	var all forensic.Confusion
	for _, r := range rows {
		c := forensic.Count(r.d.verdicts)
		all.Merge(c)
		sc := r.d.scenario
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s | %s |\n", sc.pathName(), sc.disruption, sc.variant.name,
			strconv.FormatFloat(r.rate, 'g', -1, 64), c.Ends(), c, measured)
	}
	fmt.Fprintf(&b, "| all | | | | %d | %s | |\n\n%s\n", all.Ends(), all, all.Rates())
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
