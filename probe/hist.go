package probe

import (
	"math/bits"
	"time"
)

// Histogram records durations with a bounded relative error, HDR-style: values are
// grouped by power of two, each power split into 128 linear sub-buckets (error < 0.8%),
// from 1µs to about 70 minutes, in constant memory.
type Histogram struct {
	counts [40][128]uint64
	n      uint64
	max    time.Duration
}

const subBits = 7

// Record adds one value.
func (h *Histogram) Record(d time.Duration) {
	us := uint64(max(d/time.Microsecond, 0))
	e, s := index(us)
	if e >= len(h.counts) {
		e, s = len(h.counts)-1, 127
	}
	h.counts[e][s]++
	h.n++
	h.max = max(h.max, d)
}

func index(v uint64) (int, int) {
	if v < 1<<subBits {
		return 0, int(v)
	}
	shift := bits.Len64(v) - (subBits + 1) // v>>shift has 8 bits: 1, then the sub-bucket
	return shift + 1, int(v>>shift) - 1<<subBits
}

func value(e, s int) uint64 {
	if e == 0 {
		return uint64(s)
	}
	return (uint64(s) + 1<<subBits) << (e - 1) // the lower edge of the sub-bucket
}

// Count is how many values were recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest value recorded.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the value at or below which a fraction q of the values lie.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for e := range h.counts {
		for s, c := range h.counts[e] {
			seen += c
			if seen >= rank {
				v := time.Duration(value(e, s)) * time.Microsecond
				return min(v, h.max)
			}
		}
	}
	return h.max
}

// sketch is a small histogram for one bucket of the timeline: 16 linear sub-buckets
// per power of two (error < 7%), 2.5 KiB, enough to draw a p99 per bucket.
type sketch struct {
	counts [40][16]uint32
	n      uint32
}

func (s *sketch) record(d time.Duration) {
	us := uint64(max(d/time.Microsecond, 0))
	e, sub := 0, int(us)
	if us >= 16 {
		shift := bits.Len64(us) - 5 // us>>shift has 5 bits: 1, then the sub-bucket
		e, sub = shift+1, int(us>>shift)-16
	}
	if e >= len(s.counts) {
		e, sub = len(s.counts)-1, 15
	}
	s.counts[e][sub]++
	s.n++
}

func (s *sketch) merge(o *sketch) {
	for e := range s.counts {
		for i := range s.counts[e] {
			s.counts[e][i] += o.counts[e][i]
		}
	}
	s.n += o.n
}

// quantile is the upper edge of the sub-bucket that holds the q-quantile: a p99 drawn
// from it never understates.
func (s *sketch) quantile(q float64) time.Duration {
	if s.n == 0 {
		return 0
	}
	rank := min(max(uint32(q*float64(s.n)+0.5), 1), s.n)
	var seen uint32
	for e := range s.counts {
		for i, c := range s.counts[e] {
			if seen += c; seen >= rank {
				upper := uint64(i + 1)
				if e > 0 {
					upper = (uint64(i) + 17) << (e - 1)
				}
				return time.Duration(upper) * time.Microsecond
			}
		}
	}
	return 0
}
