package nap

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The verdict: what a wait saw of the pod's traffic, written where the kubelet reads it
// when the container ends (see "The verdict" in the package documentation).
const (
	// VerdictPath is the file nap appends its verdict to: the container's termination
	// message as the kubelet mounts it by default (terminationMessagePath).
	VerdictPath = "/dev/termination-log"
	// VerdictHead begins the line, written when the wait starts: a line with nothing
	// after it is a wait that never finished (Cut).
	VerdictHead = "nap/v1"
)

// The verdicts.
const (
	// Quiet: no reading saw traffic (beyond the background) in the last QUIET before
	// the end, or none at all.
	Quiet = "quiet"
	// Late: a reading saw new connections (beyond the background) less than QUIET
	// before the end: routes were still opening connections to the pod when the wait
	// gave it back to its app.
	Late = "late"
	// Held: new connections had stopped for QUIET, but a reading saw requests over
	// connections the pod accepted earlier less than QUIET before the end: a client or
	// a proxy that keeps its connections was still sending. A keep-alive client whose
	// route has moved on ends there cleanly when the app closes the connection; a
	// pooling load balancer that still routes to the pod opens new ones, refused.
	Held = "held"
	// Blind: the signals could not be read (the adaptive wait's exit 3).
	Blind = "blind"
	// Cut: the line has its head and nothing after it: the wait never finished (killed at
	// the end of the grace period, by a node shutdown's budget, or by a signal).
	Cut = "cut"
	// Sparse is not written by nap: a reader of a quiet line calls it sparse when the
	// pod's traffic was too thin for quiet to mean anything (see Verdict.Sparse).
	Sparse = "sparse"
)

// The values of a verdict's Wait, with --live: the wait was the live wait raised by
// the arguments, or the arguments' alone (no live wait could be read).
const (
	WaitLive = "live"
	WaitArgs = "args"
)

// Kinds are every kind a termination is counted as, nap's verdicts and Sparse, in the
// order counts and reports list them.
var Kinds = [...]string{Quiet, Sparse, Held, Late, Blind, Cut}

// SparseBelow is how many connections beyond the background the pod must have accepted
// per QUIET, on average over its life, for a quiet verdict to tell a route that forgot
// the pod from one that has not sent yet: with arrivals at random, a route still
// sending at that rate leaves a QUIET window empty with a chance of e^-3, 5%.
const SparseBelow = 3

// Verdict is one termination's line, as ParseVerdict reads it.
type Verdict struct {
	Kind string // Quiet, Held, Late, Blind or Cut
	// End is when the wait ended, from its start (its clock: the readings); Last when
	// the last quiet window began: the last reading that saw traffic, 0 for none; Kept
	// the last reading that saw requests over connections accepted earlier (and no new
	// ones), 0 for none (and in the lines of binaries before the field).
	End, Last, Kept time.Duration
	// Conns is how many connections the pod accepted during the wait; Total how many
	// its network namespace had accepted when the wait began, over its life.
	Conns, Total uint64
	// Wait is where the wait came from with --live (WaitLive or WaitArgs), "" without.
	Wait string
}

// VerdictFields are the fields of a verdict, in the order nap writes them, each as
// " NAME=VALUE": End, Last and Kept in whole milliseconds with the unit ms, the counts
// in decimal. A blind verdict has only the first. With --live, the field WaitField
// follows them, its value the verdict's Wait. The last field, kept, came after the
// others (the binaries before it wrote four): ParseVerdict reads lines with or
// without it.
var VerdictFields = []string{"end", "last", "conns", "total", "kept"}

// WaitField is the last field of a verdict with --live.
const WaitField = "wait"

// Tail is what nap appends to VerdictHead when the wait ends, newline included: the
// kind, then the fields.
func (v Verdict) Tail() string {
	values := []string{ms(v.End), ms(v.Last), strconv.FormatUint(v.Conns, 10), strconv.FormatUint(v.Total, 10), ms(v.Kept)}
	if v.Kind == Blind {
		values = values[:1]
	}
	s := " " + v.Kind
	for i, val := range values {
		s += " " + VerdictFields[i] + "=" + val
	}
	if v.Wait != "" {
		s += " " + WaitField + "=" + v.Wait
	}
	return s + "\n"
}

func ms(d time.Duration) string { return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms" }

// String is the line, without its newline.
func (v Verdict) String() string {
	if v.Kind == Cut {
		return VerdictHead
	}
	return VerdictHead + strings.TrimSuffix(v.Tail(), "\n")
}

// ParseVerdict reads the verdict in a termination message (what the kubelet kept of the
// file: its last 4,096 bytes): the text from its last VerdictHead (nap appends, so the
// head may follow what the app wrote without a newline). It returns false when there is
// none, or when what follows the head is not a verdict nap writes (the app wrote after
// it).
func ParseVerdict(message string) (Verdict, bool) {
	i := strings.LastIndex(message, VerdictHead)
	if i < 0 {
		return Verdict{}, false
	}
	rest := message[i+len(VerdictHead):]
	if rest == "" {
		return Verdict{Kind: Cut}, true // the head, and nothing after it
	}
	line, _, complete := strings.Cut(rest, "\n")
	if !complete || !strings.HasPrefix(line, " ") {
		return Verdict{}, false
	}
	fields := strings.Split(line[1:], " ")
	v := Verdict{Kind: fields[0]}
	want := VerdictFields
	switch v.Kind {
	case Blind:
		want = want[:1]
	case Quiet, Held, Late:
	default:
		return Verdict{}, false
	}
	if n := len(fields); n > 1 && strings.HasPrefix(fields[n-1], WaitField+"=") {
		w := fields[n-1][len(WaitField)+1:]
		if w != WaitLive && w != WaitArgs {
			return Verdict{}, false
		}
		v.Wait, fields = w, fields[:n-1]
	}
	if len(want) > 1 && len(fields) == len(want) && v.Kind != Held {
		want = want[:len(want)-1] // a line without kept, from a binary before it
	}
	if len(fields) != 1+len(want) {
		return Verdict{}, false
	}
	var msec [3]uint64 // End, Last and Kept, in milliseconds
	for j, key := range want {
		val, ok := strings.CutPrefix(fields[1+j], key+"=")
		if !ok {
			return Verdict{}, false
		}
		timed := j < 2 || j == 4 // end, last and kept
		if timed {
			val, ok = strings.CutSuffix(val, "ms")
		}
		n, err := strconv.ParseUint(val, 10, 64)
		if !ok || err != nil || val != strconv.FormatUint(n, 10) || (timed && n > uint64(math.MaxInt64/time.Millisecond)) {
			return Verdict{}, false
		}
		*[]*uint64{&msec[0], &msec[1], &v.Conns, &v.Total, &msec[2]}[j] = n
	}
	v.End, v.Last, v.Kept = time.Duration(msec[0])*time.Millisecond, time.Duration(msec[1])*time.Millisecond, time.Duration(msec[2])*time.Millisecond
	if v.Last > v.End || v.Kept > v.Last {
		return Verdict{}, false
	}
	return v, true
}

// Sparse tells whether a quiet verdict says nothing: the pod, age old when its wait
// began, accepted fewer than SparseBelow connections per quiet beyond allow (the
// background the wait allowed per QUIET) on average over its life to the wait's end
// (Total and Conns over age and End: a young pod's wait may see most of its traffic),
// and its wait saw no request over a connection accepted earlier (Kept 0). Requests
// over kept connections that came and then stopped for QUIET are a tail the wait saw
// end, however few connections carried them (a pool's).
func (v Verdict) Sparse(age, quiet time.Duration, allow int64) bool {
	if v.Kind != Quiet || v.Kept > 0 || age <= 0 || quiet <= 0 {
		return false
	}
	windows := float64(age+v.End) / float64(quiet)
	return float64(v.Total+v.Conns)/windows-float64(allow) < SparseBelow
}
