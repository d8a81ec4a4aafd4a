package main

import (
	"os"
	"strings"
	"testing"
)

// read and write over a stream of two tests (testdata/two.json): a row measured twice
// counted once with both measurements, a verdicts line test2json cut in two read whole,
// a subtest's row named by its top-level test, other lines left alone; the totals and
// the precision and recall of late over them. A damaged verdicts line names its stream
// and line.
func TestVerdicts(t *testing.T) {
	f, err := os.Open("testdata/two.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tb := &table{index: map[string]*row{}}
	if err := tb.read("two.json", f); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	tb.write(&b)
	got := b.String()
	for _, want := range []string{
		"| ClusterIP from node 2, rolling restart, nap preStop 1s | TestA | 2 | 7 | 3 / 1 | 0 / 0 | 1 / 0 | 0 / 1 | 1 | 0 |\n",
		"| ingress (Traefik), rolling restart, nap preStop (binary) | TestB | 1 | 3 | 0 / 0 | 0 / 1 | 0 / 2 | 0 / 0 | 0 | 0 |\n",
		"| all | | 3 | 10 | 3 / 1 | 0 / 1 | 1 / 2 | 0 / 1 | 1 | 0 |\n",
		"Precision of late: 0.75. Recall of late: 0.75. Recall of late or held: 0.75.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n| "); n != 3 {
		t.Errorf("%d rows after the header, want 3 (two rows and the totals):\n%s", n, got)
	}

	damaged := `{"Action":"output","Package":"e2e","Test":"TestA","Output":"    a_test.go:10: x: nap's verdicts (late lost / none, held lost / none, quiet lost / none, sparse lost / none, cut, blind: 1 / x): y\n"}` + "\n"
	err = (&table{index: map[string]*row{}}).read("bad.json", strings.NewReader(damaged))
	if err == nil || !strings.Contains(err.Error(), "bad.json:1:") {
		t.Errorf("a damaged line: %v, want an error naming bad.json:1", err)
	}

	b.Reset()
	(&table{index: map[string]*row{}}).write(&b)
	if !strings.Contains(b.String(), "no measurement logged nap's verdicts") {
		t.Errorf("no rows: %q", b.String())
	}
}
