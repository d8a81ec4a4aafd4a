package probe

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	var all []time.Duration
	for range 100000 {
		d := time.Duration(rand.ExpFloat64()*float64(3*time.Millisecond)) + 50*time.Microsecond
		h.Record(d)
		all = append(all, d)
	}
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := all[int(q*float64(len(all)))-1]
		got := h.Quantile(q)
		if diff := float64(got-exact) / float64(exact); diff > 0.01 || diff < -0.01 {
			t.Errorf("p%v: %v, exact %v (%.2f%% off)", q*100, got, exact, diff*100)
		}
	}
	if h.Max() != all[len(all)-1] || h.Count() != uint64(len(all)) {
		t.Errorf("max %v count %d", h.Max(), h.Count())
	}
}
