package forensic

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nap-k8s/nap/sleeper/nap"
)

// End is a pod whose app exited while a measurement ran, with the verdict nap left in
// its final status (as the Reporter counts it: one of nap.Kinds).
type End struct {
	Pod     string
	Verdict string
	Line    string    // nap's line, for the log
	Exited  time.Time // the API server's time: whole seconds
}

// Judged is an End beside the ground truth its verdict is held to: how many requests
// over new connections failed after its app exited (Attribute).
type Judged struct {
	End
	Lost int
}

// Attribute gives each end the failures (the times requests over new connections were
// sent that failed) from its app's exit until the next end's, or until the
// measurement's end: a route that still sends to a pod gone fails new connections, and
// in a rollout pods end one after another. Apps that exited within a second of each
// other (a scale-down, a drain: the API's times have whole seconds) cannot be told
// apart: each of them gets what failed after the last of them began, counted once for
// each. Failures before the first exit are no end's.
func Attribute(ends []End, failed []time.Time, until time.Time) []Judged {
	sorted := slices.Clone(ends)
	slices.SortStableFunc(sorted, func(a, b End) int { return a.Exited.Compare(b.Exited) })
	out := make([]Judged, len(sorted))
	for i := 0; i < len(sorted); {
		from := sorted[i].Exited
		j := i
		for j < len(sorted) && sorted[j].Exited.Sub(from) <= time.Second {
			j++
		}
		to := until
		if j < len(sorted) {
			to = sorted[j].Exited
		}
		lost := 0
		for _, f := range failed {
			if !f.Before(from) && f.Before(to) {
				lost++
			}
		}
		for k := i; k < j; k++ {
			out[k] = Judged{End: sorted[k], Lost: lost}
		}
		i = j
	}
	return out
}

// Confusion counts judged ends by verdict and truth: late is the verdict held to
// "requests were lost after the wait", quiet to "none were"; held (requests over kept
// connections to the end, which a keep-alive client and a pool still routing to the pod
// both give) and sparse are reported apart, never as quiet.
type Confusion struct {
	LateLost, LateClean     int // late: a route still opened connections at the end
	HeldLost, HeldClean     int // held: only kept connections still sent at the end
	QuietLost, QuietClean   int
	SparseLost, SparseClean int
	Cut, Blind              int // the wait never ended; the signals could not be read
}

// Add counts j.
func (c *Confusion) Add(j Judged) {
	count := func(lost, clean *int) {
		if j.Lost > 0 {
			*lost++
		} else {
			*clean++
		}
	}
	switch j.Verdict {
	case nap.Late:
		count(&c.LateLost, &c.LateClean)
	case nap.Held:
		count(&c.HeldLost, &c.HeldClean)
	case nap.Quiet:
		count(&c.QuietLost, &c.QuietClean)
	case nap.Sparse:
		count(&c.SparseLost, &c.SparseClean)
	case nap.Cut:
		c.Cut++
	case nap.Blind:
		c.Blind++
	}
}

// Count is js counted.
func Count(js []Judged) Confusion {
	var c Confusion
	for _, j := range js {
		c.Add(j)
	}
	return c
}

// Merge adds o's counts to c's.
func (c *Confusion) Merge(o Confusion) {
	c.LateLost += o.LateLost
	c.LateClean += o.LateClean
	c.HeldLost += o.HeldLost
	c.HeldClean += o.HeldClean
	c.QuietLost += o.QuietLost
	c.QuietClean += o.QuietClean
	c.SparseLost += o.SparseLost
	c.SparseClean += o.SparseClean
	c.Cut += o.Cut
	c.Blind += o.Blind
}

// Ends is how many ends c counts.
func (c Confusion) Ends() int {
	return c.LateLost + c.LateClean + c.HeldLost + c.HeldClean + c.QuietLost + c.QuietClean + c.SparseLost + c.SparseClean + c.Cut + c.Blind
}

// Precision is the share of late verdicts whose pod lost requests after its wait; false
// when none read late.
func (c Confusion) Precision() (float64, bool) {
	return ratio(c.LateLost, c.LateLost+c.LateClean)
}

// Recall is the share of the pods that lost requests after their wait (read late, held
// or quiet: sparse ones say they cannot tell) that read late; false when none lost.
func (c Confusion) Recall() (float64, bool) {
	return ratio(c.LateLost, c.LateLost+c.HeldLost+c.QuietLost)
}

// RecallHeld is the share of the same pods that read late or held: what nap's words
// catch before the paths that reached the pod tell a pool from a keep-alive client.
func (c Confusion) RecallHeld() (float64, bool) {
	return ratio(c.LateLost+c.HeldLost, c.LateLost+c.HeldLost+c.QuietLost)
}

// Rates says the precision of late, its recall, and the recall of late or held over c,
// each "none to count" where it has nothing to count: the line under a confusion table.
func (c Confusion) Rates() string {
	var b strings.Builder
	say := func(name string, v float64, ok bool) {
		if ok {
			fmt.Fprintf(&b, "%s: %.2f. ", name, v)
		} else {
			fmt.Fprintf(&b, "%s: none to count. ", name)
		}
	}
	p, ok := c.Precision()
	say("Precision of late", p, ok)
	r, ok := c.Recall()
	say("Recall of late", r, ok)
	r, ok = c.RecallHeld()
	say("Recall of late or held", r, ok)
	return b.String()
}

// String is c as the confusion table's cells: late lost / none, held lost / none, quiet
// lost / none, sparse lost / none, cut, blind.
func (c Confusion) String() string {
	return fmt.Sprintf("%d / %d | %d / %d | %d / %d | %d / %d | %d | %d", c.LateLost, c.LateClean, c.HeldLost, c.HeldClean, c.QuietLost, c.QuietClean, c.SparseLost, c.SparseClean, c.Cut, c.Blind)
}

// Describe says each judged end, for a measurement's log.
func Describe(js []Judged, start time.Time) string {
	var b strings.Builder
	for i, j := range js {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s (%s), exited at %.0f s, %d lost over new connections after", j.Pod, j.Verdict, j.Line, j.Exited.Sub(start).Seconds(), j.Lost)
	}
	return b.String()
}

func ratio(n, d int) (float64, bool) {
	if d == 0 {
		return 0, false
	}
	return float64(n) / float64(d), true
}
