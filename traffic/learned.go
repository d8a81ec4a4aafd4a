package traffic

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nap-k8s/nap/sleeper/nap"
)

// The waits learned from production: what the terminations of the fleet's pods said
// (nap's verdict, read back by the controller's Reporter), kept per route, the set of
// paths that reached each pod. The controller keeps the document (Learned, as JSON) in
// the ConfigMap kube.LearnedConfigMap of its namespace; every replica's webhook reads it
// beside the stored calibration (WithLearned).
const (
	LearnedAPIVersion = "learn.nap.dev/v1"
	LearnedKind       = "Learned"
)

// The learning rule's bounds.
const (
	// LearnKeep is how many observed tails a route keeps, the newest: its memory. A late
	// termination is forgotten once LearnKeep quiet ones came after it.
	LearnKeep = 64
	// LearnSettle is how many quiet terminations with dense traffic a route needs since
	// its last raise before its learned wait follows their tails (and may fall below
	// the fleet's, or below a raise, but not below what the raise's late termination
	// proved the route needs while the route remembers it: LearnedRoute.ProvenS): fewer
	// say too little.
	LearnSettle = 20
	// LearnMargin is what a learned wait adds to a tail, then rounded up to whole
	// seconds (DelayFor): the verdict's QUIET, so that the next termination with the same
	// tail reads quiet rather than late, and a second.
	LearnMargin = nap.DefaultQuiet + time.Second
	// LearnCutOff: a late termination whose last reading with traffic came this close
	// to its end was cut off while its route still sent (nap reads every 100 ms: five
	// readings); one whose traffic stopped earlier, within its QUIET, says the route's
	// tail is that last reading.
	LearnCutOff = 5 * nap.PollInterval
	// LearnRaise is what a cut-off termination's end is multiplied by: the route's tail
	// is longer than that wait by an unknown amount, and doubling finds any tail in as
	// many late terminations as it has doublings.
	LearnRaise = 2
)

// Learned is the document of waits learned from production: each route's recent tails
// and its last raise.
type Learned struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Updated is when a termination last changed it.
	Updated time.Time      `json:"updated"`
	Routes  []LearnedRoute `json:"routes"`
}

// LearnedRoute is what the terminations of pods a route reached said.
type LearnedRoute struct {
	// Paths is the route: the names of the paths that reached the pods, in All's order,
	// joined by "+" (RouteKey).
	Paths string `json:"paths"`
	// TailsMS are the observed tails (nap's last=, in milliseconds) of quiet
	// terminations with dense traffic since the last raise, oldest first, at most
	// LearnKeep.
	TailsMS []int64 `json:"tails_ms"`
	// RaisedS is the wait the last late termination raised the route to (whole
	// seconds; 0: none); Late names that termination, LateAt is when it was counted.
	RaisedS int64     `json:"raised_seconds,omitempty"`
	Late    string    `json:"late,omitempty"`
	LateAt  time.Time `json:"late_at,omitzero"`
	// ProvenS is what that late termination proved the route needs (whole seconds):
	// its tail plus the margin, or, cut off while traffic still arrived, more than its
	// end plus the margin. The raise guesses past it; the tails may lower the route
	// below the raise but not below this until LearnKeep quiet terminations came after
	// the late one (a route whose slow terminations are rarer than LearnSettle would
	// otherwise be lowered below them after every raise, and cut the next one off).
	ProvenS int64 `json:"proven_seconds,omitempty"`
}

// RouteKey is the key of the route that paths (names, any order) make: their names in
// All's order, joined by "+"; "" for none.
func RouteKey(paths []string) string {
	var out []string
	for _, n := range Names() {
		if slices.Contains(paths, n) {
			out = append(out, n)
		}
	}
	return strings.Join(out, "+")
}

// route is the route of key, made if need be.
func (l *Learned) route(key string) *LearnedRoute {
	for i := range l.Routes {
		if l.Routes[i].Paths == key {
			return &l.Routes[i]
		}
	}
	l.Routes = append(l.Routes, LearnedRoute{Paths: key})
	return &l.Routes[len(l.Routes)-1]
}

// Observation is one termination as the learning rule reads it.
type Observation struct {
	// Paths are the names of the paths that reached the pod.
	Paths []string
	// Kind is the verdict (nap's words: quiet, sparse, late, blind, cut); End and Last
	// its figures (nap.Verdict).
	Kind      string
	End, Last time.Duration
	// Pod names the termination ("NAMESPACE/NAME"); At is when it was counted.
	Pod string
	At  time.Time
	// PoolUnread: a client that pools its connections reached the pod, and its wait
	// did not read requests on open connections (a fixed delay, an adaptive wait without
	// --requests): it could not see that client's traffic, so its quiet says nothing.
	PoolUnread bool
}

// Observe is the learning rule: a quiet termination with dense traffic adds its
// observed tail to its route's (unless its wait could not see a pooling client's
// traffic: PoolUnread); a late one raises the route's wait at once (lateNeed), unless
// the route already holds that long, and its tails start again (the Reporter counts a
// held one as late where a pool reached the pod: report.CountedAs).
// Sparse, blind and cut terminations say nothing of the route's tail; a pod no path
// reached has no route. It returns whether the document changed (kept) and whether
// what the route needs did (changed: Need).
func (l *Learned) Observe(o Observation) (kept, changed bool) {
	key := RouteKey(o.Paths)
	if key == "" {
		return false, false
	}
	switch o.Kind {
	case nap.Quiet:
		if o.PoolUnread {
			return false, false
		}
		r := l.route(key)
		before, _, _ := r.Need()
		r.TailsMS = append(r.TailsMS, o.Last.Milliseconds())
		if n := len(r.TailsMS); n > LearnKeep {
			r.TailsMS = slices.Delete(r.TailsMS, 0, n-LearnKeep)
		}
		after, _, _ := r.Need()
		changed = before != after
	case nap.Late:
		r := l.route(key)
		raise, proven, why := lateNeed(o)
		if have, _, ok := r.Need(); ok && have >= raise {
			return false, false
		}
		r.RaisedS, r.ProvenS, r.TailsMS = int64(raise/time.Second), int64(proven/time.Second), nil
		r.Late, r.LateAt = why, o.At.UTC().Truncate(time.Second)
		changed = true
	default:
		return false, false
	}
	l.Updated = o.At.UTC().Truncate(time.Second)
	return true, changed
}

// lateNeed is what a late termination says its route needs (raise), what it proves
// (proven), and why: cut off while traffic still arrived (its last reading with
// traffic within LearnCutOff of its end), LearnRaise times its end, and the route's tail
// is past its end; else its last traffic was the tail.
func lateNeed(o Observation) (raise, proven time.Duration, why string) {
	if o.End-o.Last <= LearnCutOff {
		return DelayFor(LearnRaise*o.End, LearnMargin), DelayFor(o.End, LearnMargin),
			fmt.Sprintf("pod %s's wait ended at %.1f s with traffic still arriving", o.Pod, o.End.Seconds())
	}
	d := DelayFor(o.Last, LearnMargin)
	return d, d, fmt.Sprintf("pod %s's wait saw traffic until %.1f s of its %.1f s", o.Pod, o.Last.Seconds(), o.End.Seconds())
}

// Need is the wait the route's terminations say its pods need, and why: with
// LearnSettle tails since the last raise, the longest plus LearnMargin (settled: the
// tails speak for every path of the route), but not below what the last late
// termination proved until LearnKeep tails came after it; before that, the last raise.
// ok is false while the route has neither.
func (r LearnedRoute) Need() (delay time.Duration, why string, ok bool) {
	if r.settled() {
		longest := time.Duration(slices.Max(r.TailsMS)) * time.Millisecond
		paths := strings.ReplaceAll(r.Paths, "+", ", ")
		d := DelayFor(longest, LearnMargin)
		why := fmt.Sprintf("learned from production: %d quiet terminations of pods reached by %s, their traffic's tail at most %.1f s", len(r.TailsMS), paths, longest.Seconds())
		if proven := time.Duration(r.ProvenS) * time.Second; proven > d && len(r.TailsMS) < LearnKeep {
			return proven, fmt.Sprintf("%s, but %s (late, %s), so at least %d s until %d quiet ones came after it",
				why, r.Late, r.LateAt.Format(time.RFC3339), r.ProvenS, LearnKeep), true
		}
		return d, why, true
	}
	if r.RaisedS > 0 {
		return time.Duration(r.RaisedS) * time.Second, fmt.Sprintf("learned from production: %s (late, %s), so at least %d s for pods reached by %s",
			r.Late, r.LateAt.Format(time.RFC3339), r.RaisedS, strings.ReplaceAll(r.Paths, "+", ", ")), true
	}
	return 0, "", false
}

// settled tells whether the route's tails speak for it (Need's first case).
func (r LearnedRoute) settled() bool { return len(r.TailsMS) >= LearnSettle }

// Lookup is the route of paths, if any terminations taught it anything.
func (l *Learned) Lookup(paths []string) (LearnedRoute, bool) {
	if l == nil {
		return LearnedRoute{}, false
	}
	key := RouteKey(paths)
	for _, r := range l.Routes {
		if r.Paths == key {
			_, _, ok := r.Need()
			return r, ok
		}
	}
	return LearnedRoute{}, false
}

// Needs are the delays each route needs, by key: what a reader compares to tell
// whether a new document changes any pod's wait.
func (l *Learned) Needs() map[string]time.Duration {
	out := map[string]time.Duration{}
	if l == nil {
		return out
	}
	for _, r := range l.Routes {
		if d, _, ok := r.Need(); ok {
			out[r.Paths] = d
		}
	}
	return out
}

// NewLearned is an empty document.
func NewLearned() *Learned {
	return &Learned{APIVersion: LearnedAPIVersion, Kind: LearnedKind}
}

// ReadLearned reads a Learned document (name names it in errors).
func ReadLearned(r io.Reader, name string) (*Learned, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var l Learned
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("%s: not the waits learned from production: %v", name, err)
	}
	if l.APIVersion != LearnedAPIVersion || l.Kind != LearnedKind {
		return nil, fmt.Errorf("%s: apiVersion %q, kind %q: want %q, %q", name, l.APIVersion, l.Kind, LearnedAPIVersion, LearnedKind)
	}
	var errs []error
	seen := map[string]bool{}
	for i, r := range l.Routes {
		if r.Paths == "" || RouteKey(strings.Split(r.Paths, "+")) != r.Paths {
			errs = append(errs, fmt.Errorf("routes[%d]: paths %q: want names of %s joined by + in that order", i, r.Paths, strings.Join(Names(), ", ")))
		}
		if seen[r.Paths] {
			errs = append(errs, fmt.Errorf("routes[%d]: paths %q twice", i, r.Paths))
		}
		seen[r.Paths] = true
		if r.RaisedS < 0 || len(r.TailsMS) > LearnKeep || slices.ContainsFunc(r.TailsMS, func(ms int64) bool { return ms < 0 }) {
			errs = append(errs, fmt.Errorf("routes[%d] (%s): negative figures, or more than %d tails", i, r.Paths, LearnKeep))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &l, nil
}

// WithLearned is the calibration c with what production taught (l) beside it: Route
// gives a pod the wait its route learned where that is more than c measured for its
// paths, never less. c and l are not changed; either may be nil.
func WithLearned(c *Calibration, l *Learned) *Calibration {
	if l == nil || len(l.Routes) == 0 {
		return c
	}
	out := &Calibration{APIVersion: CalibrationAPIVersion, Kind: CalibrationKind}
	if c != nil {
		cp := *c
		out = &cp
	}
	out.Learned = l
	return out
}
