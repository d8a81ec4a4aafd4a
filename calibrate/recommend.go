package calibrate

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// recommend fills in rep's recommendations from its paths' tails: the fixed delay and
// its grace period (with advice past Options.AcceptGrace), and the adaptive wait.
func recommend(rep *Report, opts Options) {
	seconds := func(tail float64) time.Duration {
		return traffic.DelayFor(time.Duration(tail*float64(time.Second)), opts.Margin)
	}
	longest := 0.0
	for _, s := range rep.Paths {
		if s.Samples > 0 && s.Max >= longest {
			longest, rep.Longest = s.Max, s.Path.Name
		}
	}
	delay := seconds(longest)
	rep.Delay, rep.Grace = Seconds(delay), Seconds(delay+opts.Drain)
	if rep.Grace.Duration() > opts.AcceptGrace {
		rep.Advice = advice(rep, opts)
	}
	w := wait.DefaultAdaptive()
	w.Min, w.Delay = delay, max(w.Delay, 2*delay)
	rep.Adaptive = AdaptiveWait{Min: Seconds(w.Min), Quiet: Seconds(w.Quiet), Max: Seconds(w.Delay), Grace: Seconds(w.Delay + opts.Drain)}
	rep.Stored = traffic.Calibration{APIVersion: traffic.CalibrationAPIVersion, Kind: traffic.CalibrationKind,
		Measured: time.Now().UTC().Truncate(time.Second), Namespace: rep.Namespace, Rounds: opts.Rounds, MarginS: opts.Margin.Seconds()}
	for _, s := range rep.Paths {
		if s.Samples == 0 {
			continue
		}
		t := traffic.PathTail{Name: s.Path.Name, Samples: s.Samples, P50: s.P50, P99: s.P99, Max: s.Max, DelayS: seconds(s.Max).Seconds()}
		if p, ok := traffic.Lookup(s.Path.Name); ok {
			if a := Parameters(p, opts.Paths); len(a) > 0 {
				t.Parameters = a
			}
		}
		rep.Stored.Paths = append(rep.Stored.Paths, t)
	}
}

// advice says why the recommended grace period is long and what shortens it: the
// deciding path's remedy, with the other paths' tails for comparison.
func advice(rep *Report, opts Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "the recommended grace period %v is longer than %v: the %s path's tail decides it", rep.Grace, opts.AcceptGrace, rep.Longest)
	if p, ok := traffic.Lookup(rep.Longest); ok && p.Remedy != "" {
		fmt.Fprintf(&b, ". %s", p.Remedy)
	}
	var others []string
	for _, s := range rep.Paths {
		if s.Path.Name != rep.Longest && s.Samples > 0 {
			others = append(others, fmt.Sprintf("%s max %.1fs", s.Path.Name, s.Max))
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, " Measured here on the other paths: %s.", strings.Join(others, ", "))
	}
	return b.String()
}

// quantile of sorted values, the nearest rank.
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(len(sorted)-1, i))]
}

// tails are each path's tails over the rounds: the pods it sent to after their
// termination began (Round.Tails), as quantiles.
func tails(paths []Path, rounds []Round) []Stats {
	var out []Stats
	for _, p := range paths {
		var ts []float64
		for _, r := range rounds {
			if t, ok := r.Tails[p.Name]; ok {
				ts = append(ts, t)
			}
		}
		s := Stats{Path: p, Samples: len(ts)}
		if len(ts) > 0 {
			slices.Sort(ts)
			s.P50, s.P99, s.Max = quantile(ts, 0.5), quantile(ts, 0.99), ts[len(ts)-1]
		}
		out = append(out, s)
	}
	return out
}
