package forensic

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Programming is a node's kube-proxy histogram kubeproxy_network_programming_duration_seconds:
// for each bucket's upper bound (seconds), how many rule programmings so far took at
// most that long, counted from the pod change that called for them (the EndpointSlice's
// trigger time) to the node's rules holding it. A pod deleted at t is out of that node's
// routes at t plus such a duration.
type Programming map[float64]float64

// ParseProgramming takes the IPv4 buckets of the histogram from a metrics page.
func ParseProgramming(page string) (Programming, error) {
	const name = "kubeproxy_network_programming_duration_seconds_bucket{"
	p := Programming{}
	for _, l := range strings.Split(page, "\n") {
		labels, value, ok := strings.Cut(strings.TrimPrefix(l, name), "} ")
		if !ok || !strings.HasPrefix(l, name) || !strings.Contains(labels, `ip_family="IPv4"`) {
			continue
		}
		_, le, _ := strings.Cut(labels, `le="`)
		le, _, _ = strings.Cut(le, `"`)
		bound, err := strconv.ParseFloat(le, 64) // "+Inf" too
		if err != nil {
			return nil, fmt.Errorf("%q: %v", l, err)
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", l, err)
		}
		p[bound] = n
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("no %s...} line", name)
	}
	return p, nil
}

// Since is what was programmed between before and p: how many programmings, and the
// bounds of the slowest one's bucket (it took more than lo seconds, at most hi).
func (p Programming) Since(before Programming) (n int, lo, hi float64) {
	bounds := make([]float64, 0, len(p))
	for b := range p {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	var in, below float64 // programmings up to this bucket's bound, and the one before's
	for i, b := range bounds {
		in = p[b] - before[b]
		if in > below {
			hi, lo = b, 0
			if i > 0 {
				lo = bounds[i-1]
			}
		}
		below = in
	}
	n = int(in) // the last bound is +Inf: every one
	return n, lo, hi
}

// RouteTimes is what each node's kube-proxy programmed during a measurement.
type RouteTimes [2]struct {
	N      int     // programmings
	Lo, Hi float64 // the slowest one's bucket: more than Lo seconds, at most Hi
}

func (r RouteTimes) String() string {
	var s []string
	for i, n := range r {
		s = append(s, fmt.Sprintf("node %d: %d programmings, the slowest %s", i+1, n.N, Bucket(n.Lo, n.Hi)))
	}
	return strings.Join(s, "; ")
}

// Bucket names a histogram bucket's bounds in seconds.
func Bucket(lo, hi float64) string {
	if math.IsInf(hi, 1) {
		return fmt.Sprintf("over %g s", lo)
	}
	return fmt.Sprintf("%g to %g s", lo, hi)
}

// Slowest is the upper bound of the slowest programming of either node (seconds; +Inf
// past the histogram's last bucket, 0 for none).
func (r RouteTimes) Slowest() float64 {
	var hi float64
	for _, n := range r {
		if n.N > 0 {
			hi = max(hi, n.Hi)
		}
	}
	return hi
}

// Late says whether a node's kube-proxy took a pod out of its routes later than stay
// after the change (the shortest time a pod of the measurement spent from deletion to
// its app's exit): then a SYN could follow the node's rules to a pod that was gone, what
// no delay shorter than the routes' tail prevents (docs/downtime.md, "Reading it").
func (r RouteTimes) Late(stay time.Duration) (string, bool) {
	for i, n := range r {
		if n.N > 0 && n.Lo >= stay.Seconds() {
			return fmt.Sprintf("node %d's kube-proxy programmed a change %s after it, the pods stayed %v", i+1, Bucket(n.Lo, n.Hi), stay), true
		}
	}
	return "", false
}
