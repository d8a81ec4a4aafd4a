package forensic

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// verdictsPhrase marks a measurement's log line of nap's verdicts (VerdictsLine), which
// ReadVerdictsLine finds again in a run's log: the row's scenario before it, the counts
// in Confusion.String's cells after it.
const verdictsPhrase = ": nap's verdicts (late lost / none, held lost / none, quiet lost / none, sparse lost / none, cut, blind: "

// VerdictsLine is a measurement's log line of nap's verdicts: the row's scenario, the
// counts of js, and each judged end (Describe), start being the measurement's.
func VerdictsLine(scenario string, js []Judged, start time.Time) string {
	return scenario + verdictsPhrase + Count(js).String() + "): " + Describe(js, start)
}

// logPrefix is the file:line go test puts before a line a test logged.
var logPrefix = regexp.MustCompile(`^\S+\.go:\d+:( |$)`)

// cells are Confusion.String's ten counts.
var cells = regexp.MustCompile(`^(\d+) / (\d+) \| (\d+) / (\d+) \| (\d+) / (\d+) \| (\d+) / (\d+) \| (\d+) \| (\d+)\): `)

// ReadVerdictsLine reads a line a test logged with VerdictsLine, as go test writes it
// (indented, after the file:line of the call that logged it): the row's scenario and its
// counts. ok is false for any other line; err says why a line with the phrase could not
// be read.
func ReadVerdictsLine(line string) (scenario string, c Confusion, ok bool, err error) {
	i := strings.Index(line, verdictsPhrase)
	if i < 0 {
		return "", Confusion{}, false, nil
	}
	// Without the file:line go test puts before a logged line.
	scenario = strings.TrimSpace(logPrefix.ReplaceAllString(strings.TrimSpace(line[:i]), ""))
	m := cells.FindStringSubmatch(line[i+len(verdictsPhrase):])
	if m == nil || scenario == "" {
		return "", Confusion{}, true, fmt.Errorf("a line of nap's verdicts without its scenario or its ten counts: %.200q", line)
	}
	n := make([]int, 10)
	for k := range n {
		if n[k], err = strconv.Atoi(m[k+1]); err != nil {
			return "", Confusion{}, true, fmt.Errorf("a count out of range in %.200q: %w", line, err)
		}
	}
	c = Confusion{LateLost: n[0], LateClean: n[1], HeldLost: n[2], HeldClean: n[3], QuietLost: n[4], QuietClean: n[5],
		SparseLost: n[6], SparseClean: n[7], Cut: n[8], Blind: n[9]}
	return scenario, c, true, nil
}
