package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nap-k8s/nap/test/forensic"
)

// event is one line of test2json (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// row is one scenario's verdicts, over every time it was measured.
type row struct {
	scenario, test string
	measured       int
	c              forensic.Confusion
}

// table is the rows in the order they were first measured.
type table struct {
	rows  []*row
	index map[string]*row
}

func main() {
	t := &table{index: map[string]*row{}}
	var err error
	if len(os.Args) < 2 {
		err = t.read("stdin", os.Stdin)
	}
	for _, name := range os.Args[1:] {
		f, oerr := os.Open(name)
		if oerr != nil {
			err = oerr
			break
		}
		err = t.read(name, f)
		f.Close()
		if err != nil {
			break
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "verdicts:", err)
		os.Exit(2)
	}
	t.write(os.Stdout)
}

// read adds the verdicts lines of a go test -json stream, named name, to t. A test's
// output comes in pieces; a line is whole once its newline came.
func (t *table) read(name string, r io.Reader) error {
	partial := map[string]string{} // package and test → output since its last newline
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n := 0
	for sc.Scan() {
		n++
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Action != "output" || e.Test == "" {
			continue
		}
		key := e.Package + " " + e.Test
		text := partial[key] + e.Output
		lines := strings.Split(text, "\n")
		partial[key] = lines[len(lines)-1]
		for _, l := range lines[:len(lines)-1] {
			if err := t.add(l, e.Test); err != nil {
				return fmt.Errorf("%s:%d: %w", name, n, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// add counts line when it is a verdicts line, logged by test (a subtest's name is its
// top-level test's).
func (t *table) add(line, test string) error {
	scenario, c, ok, err := forensic.ReadVerdictsLine(line)
	if !ok || err != nil {
		return err
	}
	r := t.index[scenario]
	if r == nil {
		top, _, _ := strings.Cut(test, "/")
		r = &row{scenario: scenario, test: top}
		t.index[scenario] = r
		t.rows = append(t.rows, r)
	}
	r.measured++
	r.c.Merge(c)
	return nil
}

// write writes t's table, its totals and the precision and recall of late over them.
func (t *table) write(w io.Writer) {
	if len(t.rows) == 0 {
		fmt.Fprintln(w, "no measurement logged nap's verdicts")
		return
	}
	fmt.Fprintln(w, "| row (path, disruption, variant) | first in | measured | pods | late: lost / none lost | held: lost / none lost | quiet: lost / none lost | sparse: lost / none lost | cut | blind |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	var all forensic.Confusion
	measured := 0
	for _, r := range t.rows {
		all.Merge(r.c)
		measured += r.measured
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s |\n", r.scenario, r.test, r.measured, r.c.Ends(), r.c)
	}
	fmt.Fprintf(w, "| all | | %d | %d | %s |\n\n%s\n", measured, all.Ends(), all, all.Rates())
}
