package policyreport

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/sleeper/nap"
)

// TerminationsPolicy is the result that carries what a workload's terminations said:
// one per workload that had any, beside the failures, so that the counts outlive the
// controller that made them and napctl status reads them where it reads the rest.
const TerminationsPolicy = "terminations"

// TailSamples is how many recent observed tails (the Last of quiet verdicts) a
// workload keeps for its quantiles, in milliseconds: 256 bytes a workload that
// terminated, tens of thousands of them in a fleet, and at most ~400 bytes of its
// report.
const TailSamples = 64

// Terminations is what one workload's terminations said.
type Terminations struct {
	Since    time.Time           // counted since (the first controller that counted them)
	Counts   [len(nap.Kinds)]int // by kind, as nap.Kinds orders them
	LastLate time.Time           // the last late or cut one; zero: none
	LastPod  string              // its pod
	// LastPaths are the traffic paths that reached that pod (traffic.PathsOf, by
	// name): those whose routes may have outrun its wait.
	LastPaths []string
	Tails     []uint32 // the recent quiet ones' observed tails, ms, oldest first
}

// Count is how many of the terminations were of kind (one of nap.Kinds).
func (t Terminations) Count(kind string) int {
	if i := slices.Index(nap.Kinds[:], kind); i >= 0 {
		return t.Counts[i]
	}
	return 0
}

// Total is how many terminations there were.
func (t Terminations) Total() int {
	n := 0
	for _, c := range t.Counts {
		n += c
	}
	return n
}

// Add counts one termination of kind, whose observed tail was last (quiet ones), of
// pod, which paths reached, at time at.
func (t *Terminations) Add(kind string, last time.Duration, pod string, paths []string, at time.Time) {
	if i := slices.Index(nap.Kinds[:], kind); i >= 0 {
		t.Counts[i]++
	}
	switch kind {
	case nap.Quiet:
		if len(t.Tails) == TailSamples {
			t.Tails = append(t.Tails[:0], t.Tails[1:]...)
		}
		t.Tails = append(t.Tails, uint32(min(last/time.Millisecond, 1<<32-1)))
	case nap.Late, nap.Cut:
		t.LastLate, t.LastPod, t.LastPaths = at, pod, paths
	}
}

// Tail is the q-quantile (0 to 1) of the observed tails of the recent quiet
// terminations, and how many there are.
func (t Terminations) Tail(q float64) (time.Duration, int) {
	s := slices.Sorted(slices.Values(t.Tails))
	return quantile(s, q), len(s)
}

// quantiles are the tails' p50 and p99, and how many there are: one sort.
func (t Terminations) quantiles() (p50, p99 time.Duration, n int) {
	s := slices.Sorted(slices.Values(t.Tails))
	return quantile(s, 0.5), quantile(s, 0.99), len(s)
}

// quantile is the q-quantile of sorted milliseconds; 0 of none.
func quantile(sorted []uint32, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return time.Duration(sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]) * time.Millisecond
}

// Outcome is the result it is reported as: fail where one was late or cut (a route
// outran the wait, or the wait never ended), warn where nap could not read the traffic
// or a kept connection still sent at the end (held: a pool still routing, or a
// keep-alive client the app's drain ends), pass otherwise.
func (t Terminations) Outcome() string {
	switch {
	case t.Count(nap.Late)+t.Count(nap.Cut) > 0:
		return Fail
	case t.Count(nap.Blind)+t.Count(nap.Held) > 0:
		return Warn
	}
	return Pass
}

// String says it for a person: "142 terminations since 2026-11-25 10:00 UTC: 141
// quiet, 1 late; tail p50 1.2s, p99 3.4s of 64; last late or cut 2026-12-01 08:12 UTC,
// pod web-7d9f8c6b5-x, reached by clusterip, lb-pods".
func (t Terminations) String() string {
	s := fmt.Sprintf("%d terminations since %s: %s", t.Total(), t.Since.UTC().Format(minute), t.kinds())
	if p50, p99, n := t.quantiles(); n > 0 {
		s += fmt.Sprintf("; tail p50 %v, p99 %v of %d", p50, p99, n)
	}
	if !t.LastLate.IsZero() {
		s += fmt.Sprintf("; last late or cut %s, pod %s", t.LastLate.UTC().Format(minute), t.LastPod)
		if len(t.LastPaths) > 0 {
			s += ", reached by " + strings.Join(t.LastPaths, ", ")
		}
	}
	return s
}

const minute = "2006-01-02 15:04 MST"

// The properties of a terminations result.
const (
	propTotal    = "terminations"
	propSince    = "since"
	propTails    = "tails" // ms, oldest first, comma-separated
	propP50      = "tailP50"
	propP99      = "tailP99"
	propLastLate = "lastLate"
	propLastPod  = "lastLatePod"
	propPaths    = "lastLatePaths" // comma-separated
)

// Result is t as workload's terminations result: its counts by kind, the tails it
// keeps, the last late one, all in properties, so that TerminationsOf reads it back.
func (t Terminations) Result(workload corev1.ObjectReference) Result {
	props := map[string]string{propTotal: strconv.Itoa(t.Total()), propSince: t.Since.UTC().Format(time.RFC3339)}
	for i, k := range nap.Kinds {
		if t.Counts[i] > 0 {
			props[k] = strconv.Itoa(t.Counts[i])
		}
	}
	if len(t.Tails) > 0 {
		ms := make([]string, len(t.Tails))
		for i, v := range t.Tails {
			ms[i] = strconv.FormatUint(uint64(v), 10)
		}
		p50, p99, _ := t.quantiles()
		props[propTails], props[propP50], props[propP99] = strings.Join(ms, ","), p50.String(), p99.String()
	}
	if !t.LastLate.IsZero() {
		props[propLastLate], props[propLastPod] = t.LastLate.UTC().Format(time.RFC3339), t.LastPod
		if len(t.LastPaths) > 0 {
			props[propPaths] = strings.Join(t.LastPaths, ",")
		}
	}
	return Result{Workload: workload, Policy: TerminationsPolicy, Severity: Medium, Outcome: t.Outcome(), Message: t.String(), Properties: props}
}

// TerminationsOf reads a terminations result back; false for another result, or one
// whose properties do not parse.
func TerminationsOf(r Result) (Terminations, bool) {
	var t Terminations
	if r.Policy != TerminationsPolicy {
		return t, false
	}
	p := r.Properties
	since, err := time.Parse(time.RFC3339, p[propSince])
	if err != nil {
		return t, false
	}
	t.Since = since
	for i, k := range nap.Kinds {
		if v, ok := p[k]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return t, false
			}
			t.Counts[i] = n
		}
	}
	if v := p[propTails]; v != "" {
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return t, false
			}
			t.Tails = append(t.Tails, uint32(n))
		}
		if len(t.Tails) > TailSamples {
			t.Tails = t.Tails[len(t.Tails)-TailSamples:]
		}
	}
	if v := p[propLastLate]; v != "" {
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return t, false
		}
		t.LastLate, t.LastPod = at, p[propLastPod]
		if v := p[propPaths]; v != "" {
			t.LastPaths = strings.Split(v, ",")
		}
	}
	return t, true
}

// terminationsJSON is Terminations as JSON (napctl status -o json): the counts by
// kind's name, the tails' quantiles as durations, the tails themselves.
type terminationsJSON struct {
	Since       time.Time      `json:"since"`
	Total       int            `json:"total"`
	Verdicts    map[string]int `json:"verdicts"`
	TailP50     string         `json:"tailP50,omitempty"`
	TailP99     string         `json:"tailP99,omitempty"`
	TailsMs     []uint32       `json:"tailsMs,omitempty"`
	LastLate    *time.Time     `json:"lastLate,omitempty"`
	LastLatePod string         `json:"lastLatePod,omitempty"`
	LastPaths   []string       `json:"lastLatePaths,omitempty"`
}

// MarshalJSON writes t as terminationsJSON.
func (t Terminations) MarshalJSON() ([]byte, error) {
	v := terminationsJSON{Since: t.Since.UTC(), Total: t.Total(), Verdicts: map[string]int{}, TailsMs: t.Tails, LastLatePod: t.LastPod, LastPaths: t.LastPaths}
	for i, k := range nap.Kinds {
		if t.Counts[i] > 0 {
			v.Verdicts[k] = t.Counts[i]
		}
	}
	if p50, p99, n := t.quantiles(); n > 0 {
		v.TailP50, v.TailP99 = p50.String(), p99.String()
	}
	if !t.LastLate.IsZero() {
		at := t.LastLate.UTC()
		v.LastLate = &at
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (t *Terminations) UnmarshalJSON(b []byte) error {
	var v terminationsJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*t = Terminations{Since: v.Since, Tails: v.TailsMs, LastPod: v.LastLatePod, LastPaths: v.LastPaths}
	for k, n := range v.Verdicts {
		i := slices.Index(nap.Kinds[:], k)
		if i < 0 {
			return fmt.Errorf("terminations: no verdict %q", k)
		}
		t.Counts[i] = n
	}
	if v.LastLate != nil {
		t.LastLate = *v.LastLate
	}
	return nil
}

// Short is t in a few words, for a table: "142: 141 quiet, 1 late; p99 3.4s".
func (t Terminations) Short() string {
	s := fmt.Sprintf("%d: %s", t.Total(), t.kinds())
	if _, p99, n := t.quantiles(); n > 0 {
		s += fmt.Sprintf("; p99 %v", p99)
	}
	return s
}

// kinds are the counts of the kinds there were: "141 quiet, 1 late".
func (t Terminations) kinds() string {
	var kinds []string
	for i, k := range nap.Kinds {
		if t.Counts[i] > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", t.Counts[i], k))
		}
	}
	return strings.Join(kinds, ", ")
}
