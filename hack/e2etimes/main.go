package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// event is one line of test2json (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// ended is a top-level test's end.
type ended struct {
	name    string
	action  string
	elapsed float64
}

func main() {
	failed, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2etimes:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// summarize writes r's summary to w, and says whether anything failed.
func summarize(r io.Reader, w io.Writer) (failed bool, err error) {
	out := map[string][]string{} // each running test's output
	var tests []ended
	var pkg float64 // the package's own time
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			fmt.Fprintf(w, "%s\n", line) // not an event: go test's own words (a build failure)
			continue
		}
		switch {
		case e.Test == "" && e.Action == "output":
			if !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n" {
				io.WriteString(w, e.Output)
			}
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail"):
			failed = failed || e.Action == "fail"
			pkg = e.Elapsed
		case e.Action == "output":
			out[e.Test] = append(out[e.Test], e.Output)
		case e.Action == "pass" || e.Action == "fail" || e.Action == "skip":
			if e.Action == "fail" {
				failed = true
				io.WriteString(w, strings.Join(out[e.Test], ""))
			} else if n := len(out[e.Test]); n > 0 && strings.HasPrefix(strings.TrimSpace(out[e.Test][n-1]), "--- ") {
				io.WriteString(w, out[e.Test][n-1])
			}
			delete(out, e.Test)
			if !strings.Contains(e.Test, "/") {
				tests = append(tests, ended{e.Test, e.Action, e.Elapsed})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	if len(tests) == 0 {
		fmt.Fprintln(w, "e2etimes: no test ran")
		return true, nil
	}
	slices.SortStableFunc(tests, func(a, b ended) int { return cmp.Compare(b.elapsed, a.elapsed) })
	var sum float64
	fmt.Fprintln(w, "\nthe tests by the time they took:")
	for _, t := range tests {
		sum += t.elapsed
		fmt.Fprintf(w, "%8.1f s  %-4s  %s\n", t.elapsed, t.action, t.name)
	}
	fmt.Fprintf(w, "%8.1f s  the tests' sum (%d tests; those that ran side by side overlap)\n", sum, len(tests))
	fmt.Fprintf(w, "%8.1f s  the package, start to end\n", pkg)
	return failed, nil
}
