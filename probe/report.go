package probe

import (
	"encoding/json"
	"math"
	"slices"
	"time"
)

// Report accumulates results into a timeline and a summary. Add results in any order;
// call Summary (or read the fields) once they are all in.
type Report struct {
	Start        time.Time        `json:"start"`
	Bucket       time.Duration    `json:"-"`
	Buckets      []Bucket         `json:"buckets"`
	Totals       map[Mode]*Counts `json:"totals"`
	latency, lag Histogram
	bucketLat    []sketch // each bucket's latency, for its p99
	fails        []Result // every failure, for outages
	auto         bool     // Bucket doubles when the timeline passes MaxAutoBuckets
}

// The automatic bucket: AutoBucket, doubled whenever the timeline would pass
// MaxAutoBuckets, so that a run under a minute is drawn in tenths of a second and an
// hour-long one still in at most that many buckets.
const (
	AutoBucket     = 100 * time.Millisecond
	MaxAutoBuckets = 600
)

// Counts are results by kind and by HTTP status.
type Counts struct {
	Requests int          `json:"requests"`
	Failed   int          `json:"failed"`
	ByKind   map[Kind]int `json:"by_kind"`
	// ByStatus counts the responses by HTTP status code, successful or not; requests
	// that got no response are not in it. For gRPC, the calls of kind Status by their
	// gRPC code.
	ByStatus map[int]int `json:"by_status"`
}

func (c *Counts) add(r Result) {
	if c.ByKind == nil {
		c.ByKind = map[Kind]int{}
		c.ByStatus = map[int]int{}
	}
	c.Requests++
	c.ByKind[r.Kind]++
	if r.Code != 0 {
		c.ByStatus[r.Code]++
	}
	if r.Kind != OK {
		c.Failed++
	}
}

// merge adds o to c.
func (c *Counts) merge(o Counts) {
	if c.ByKind == nil {
		c.ByKind = map[Kind]int{}
		c.ByStatus = map[int]int{}
	}
	c.Requests += o.Requests
	c.Failed += o.Failed
	for k, n := range o.ByKind {
		c.ByKind[k] += n
	}
	for code, n := range o.ByStatus {
		c.ByStatus[code] += n
	}
}

// Bucket is one interval of the timeline, by when requests were due.
type Bucket struct {
	Offset time.Duration `json:"-"`
	Counts
	OffsetSeconds float64 `json:"offset_seconds"`
	// LatencyP99 is the p99 latency of the bucket's successful requests, in ms (within
	// 7%), 0 without any; set by Summarize.
	LatencyP99 float64 `json:"latency_p99_ms"`
}

// Outage is an interval in which requests failed: from the first to the last failed
// request (by when they were due), merged while failures are less than two buckets apart.
type Outage struct {
	Start, End time.Duration // from the report's start
	Failed     int
	Kinds      []Kind
	Modes      []Mode
}

// outageJSON is an Outage as the JSON report's schema has it.
type outageJSON struct {
	Failed   int     `json:"failed"`
	Kinds    []Kind  `json:"kinds"`
	Modes    []Mode  `json:"modes"`
	Start    float64 `json:"start_seconds"`
	End      float64 `json:"end_seconds"`
	Duration float64 `json:"duration_seconds"`
}

// MarshalJSON writes the times in seconds, as the JSON report's schema has them.
func (o Outage) MarshalJSON() ([]byte, error) {
	return json.Marshal(outageJSON{o.Failed, o.Kinds, o.Modes, o.Start.Seconds(), o.End.Seconds(), (o.End - o.Start).Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes (napctl probe -o json, read back).
func (o *Outage) UnmarshalJSON(b []byte) error {
	var j outageJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*o = Outage{Start: seconds(j.Start), End: seconds(j.End), Failed: j.Failed, Kinds: j.Kinds, Modes: j.Modes}
	return nil
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// NewReport starts a report of requests due from start, in buckets of bucket; 0 picks
// the bucket automatically (see AutoBucket).
func NewReport(start time.Time, bucket time.Duration) *Report {
	r := &Report{Start: start, Bucket: bucket, Totals: map[Mode]*Counts{}}
	if bucket <= 0 {
		r.Bucket, r.auto = AutoBucket, true
	}
	return r
}

// coarsen doubles the bucket, merging the buckets pairwise.
func (r *Report) coarsen() {
	r.Bucket *= 2
	n := (len(r.Buckets) + 1) / 2
	for j := range n {
		b := Bucket{Offset: time.Duration(j) * r.Bucket, OffsetSeconds: (time.Duration(j) * r.Bucket).Seconds()}
		lat := r.bucketLat[2*j]
		b.merge(r.Buckets[2*j].Counts)
		if 2*j+1 < len(r.Buckets) {
			b.merge(r.Buckets[2*j+1].Counts)
			lat.merge(&r.bucketLat[2*j+1])
		}
		r.Buckets[j], r.bucketLat[j] = b, lat
	}
	r.Buckets, r.bucketLat = r.Buckets[:n], r.bucketLat[:n]
}

// Add counts one result.
func (r *Report) Add(res Result) {
	off := max(res.Due.Sub(r.Start), 0)
	for r.auto && int(off/r.Bucket) >= MaxAutoBuckets {
		r.coarsen()
	}
	i := int(off / r.Bucket)
	for len(r.Buckets) <= i {
		n := len(r.Buckets)
		r.Buckets = append(r.Buckets, Bucket{Offset: time.Duration(n) * r.Bucket, OffsetSeconds: (time.Duration(n) * r.Bucket).Seconds()})
		r.bucketLat = append(r.bucketLat, sketch{})
	}
	r.Buckets[i].add(res)
	if r.Totals[res.Mode] == nil {
		r.Totals[res.Mode] = &Counts{}
	}
	r.Totals[res.Mode].add(res)
	r.lag.Record(res.Lag)
	if res.Kind == OK {
		r.latency.Record(res.Latency)
		r.bucketLat[i].record(res.Latency)
	} else {
		r.fails = append(r.fails, res)
	}
}

// Total is every mode together.
func (r *Report) Total() Counts {
	t := Counts{ByKind: map[Kind]int{}, ByStatus: map[int]int{}}
	for _, c := range r.Totals {
		t.merge(*c)
	}
	return t
}

// Outages returns the failure intervals in time order.
func (r *Report) Outages() []Outage {
	fails := slices.Clone(r.fails)
	slices.SortFunc(fails, func(a, b Result) int { return a.Due.Compare(b.Due) })
	var out []Outage
	for _, f := range fails {
		off := f.Due.Sub(r.Start)
		if n := len(out); n > 0 && off-out[n-1].End < 2*r.Bucket {
			o := &out[n-1]
			o.End = off
			o.Failed++
			if !slices.Contains(o.Kinds, f.Kind) {
				o.Kinds = append(o.Kinds, f.Kind)
			}
			if !slices.Contains(o.Modes, f.Mode) {
				o.Modes = append(o.Modes, f.Mode)
			}
			continue
		}
		out = append(out, Outage{Start: off, End: off, Failed: 1, Kinds: []Kind{f.Kind}, Modes: []Mode{f.Mode}})
	}
	for i := range out {
		o := &out[i]
		slices.Sort(o.Kinds)
		slices.Sort(o.Modes)
	}
	return out
}

// Percentiles are latency (of successful requests) and send lag percentiles.
type Percentiles struct {
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

func percentiles(h *Histogram) Percentiles {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return Percentiles{P50: ms(h.Quantile(0.5)), P90: ms(h.Quantile(0.9)), P99: ms(h.Quantile(0.99)), Max: ms(h.Max())}
}

// Latency is the latency of successful requests.
func (r *Report) Latency() Percentiles { return percentiles(&r.latency) }

// Lag is how late requests were sent after their schedule.
func (r *Report) Lag() Percentiles { return percentiles(&r.lag) }

// LongestOutage is the longest outage's duration, 0 without one.
func (r *Report) LongestOutage() time.Duration {
	var longest time.Duration
	for _, o := range r.Outages() {
		longest = max(longest, o.End-o.Start)
	}
	return longest
}
