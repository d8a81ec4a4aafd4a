package forensic

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestParseProgramming: a kube-proxy metrics page gives its IPv4 programming histogram, and
// Since the slowest programming between two readings; RouteTimes.Late says when a node
// programmed a change later than the pods stayed.
func TestParseProgramming(t *testing.T) {
	page := func(counts ...float64) string {
		var b strings.Builder
		b.WriteString("# TYPE kubeproxy_network_programming_duration_seconds histogram\n")
		for i, le := range []string{"0.25", "1", "2", "6", "7", "+Inf"} {
			fmt.Fprintf(&b, "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv4\",le=\"%s\"} %g\n", le, counts[i])
			fmt.Fprintf(&b, "kubeproxy_network_programming_duration_seconds_bucket{ip_family=\"IPv6\",le=\"%s\"} 99\n", le)
		}
		return b.String()
	}
	before, err := ParseProgramming(page(1, 5, 9, 10, 10, 10))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		after  []float64
		n      int
		lo, hi float64
		late   bool // with pods staying 6 s
	}{
		{"none", []float64{1, 5, 9, 10, 10, 10}, 0, 0, 0, false},
		{"quick", []float64{3, 7, 11, 12, 12, 12}, 2, 0, 0.25, false},
		{"within the stay", []float64{1, 5, 11, 13, 13, 13}, 3, 2, 6, false},
		{"a second late", []float64{1, 5, 9, 10, 11, 11}, 1, 6, 7, true},
		{"beyond the last bound", []float64{1, 5, 9, 10, 10, 11}, 1, 7, math.Inf(1), true},
	} {
		after, err := ParseProgramming(page(c.after...))
		if err != nil {
			t.Fatal(err)
		}
		n, lo, hi := after.Since(before)
		if n != c.n || lo != c.lo || hi != c.hi {
			t.Errorf("%s: since = %d, %g, %g; want %d, %g, %g", c.name, n, lo, hi, c.n, c.lo, c.hi)
		}
		r := RouteTimes{{N: n, Lo: lo, Hi: hi}}
		if why, late := r.Late(6 * time.Second); late != c.late {
			t.Errorf("%s: late = %v (%s), want %v", c.name, late, why, c.late)
		}
	}
	if _, err := ParseProgramming("up 1\n"); err == nil {
		t.Error("a page without the histogram parsed")
	}
}
