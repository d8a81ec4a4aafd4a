package probe

import (
	"bytes"
	"encoding/xml"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/testutil/golden"
)

// The automatic bucket is 100 ms while the run fits 600 buckets, then doubles, merging
// buckets pairwise: no request lost or moved to another second.
func TestAutoBucket(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	r := NewReport(start, 0)
	add := func(off time.Duration, k Kind, lat time.Duration) {
		r.Add(Result{Mode: New, Due: start.Add(off), Kind: k, Latency: lat})
	}
	for i := range 600 {
		add(time.Duration(i)*100*time.Millisecond+50*time.Millisecond, OK, time.Duration(i+1)*time.Millisecond)
	}
	add(59*time.Second+990*time.Millisecond, Refused, 0)
	if r.Bucket != AutoBucket || len(r.Buckets) != 600 {
		t.Fatalf("bucket %v, %d buckets; want 100ms, 600", r.Bucket, len(r.Buckets))
	}
	add(61*time.Second, OK, time.Millisecond)
	if r.Bucket != 200*time.Millisecond || len(r.Buckets) != 306 {
		t.Fatalf("bucket %v, %d buckets; want 200ms, 306", r.Bucket, len(r.Buckets))
	}
	b := r.Buckets[299] // 59.8 s – 60 s: the requests due at 59.85 s and 59.95 s, and the refused one at 59.99 s
	if b.Requests != 3 || b.Failed != 1 || b.ByKind[Refused] != 1 || b.Offset != 59800*time.Millisecond || b.OffsetSeconds != 59.8 {
		t.Errorf("bucket 299: %+v", b)
	}
	if got := r.Buckets[305]; got.Requests != 1 || got.Offset != 61*time.Second {
		t.Errorf("bucket 305: %+v", got)
	}
	total := 0
	for _, b := range r.Buckets {
		total += b.Requests
	}
	if total != 602 {
		t.Errorf("%d requests in the buckets, want 602", total)
	}
	s := r.Summarize(Options{URL: "http://x/", Rate: 10}, time.Minute, nil)
	// Bucket 10 (2 s – 2.2 s) holds the latencies 21 and 22 ms: its p99 is 22 ms, drawn
	// from the sketch's upper edge (at most 7% above).
	if p := s.Buckets[10].LatencyP99; p < 22 || p > 22*1.07 {
		t.Errorf("bucket 10's p99 %.2f ms, want 22 ms to 7%% above", p)
	}
	if r.Buckets[10].LatencyP99 != 0 {
		t.Error("Summarize changed the report's own buckets")
	}
	if fixed := NewReport(start, time.Second); fixed.auto || fixed.Bucket != time.Second {
		t.Errorf("a given bucket is kept: %v auto %v", fixed.Bucket, fixed.auto)
	}
}

// A sketch's quantile never understates and overstates by under 7%.
func TestSketch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var s sketch
		var h Histogram
		n := 1 + rng.IntN(500)
		for range n {
			d := time.Duration(rng.ExpFloat64()*float64(5*time.Millisecond)) + time.Microsecond
			s.record(d)
			h.Record(d)
		}
		exact := h.Quantile(0.99) // within 0.8%, from below
		got := s.quantile(0.99)
		if float64(got) < float64(exact)*0.99 || float64(got) > float64(exact)*1.08 {
			t.Fatalf("%d values: p99 %v, histogram says %v", n, got, exact)
		}
	}
	var empty sketch
	if empty.quantile(0.99) != 0 {
		t.Error("an empty sketch has a p99")
	}
}

// rollout is a run in which a pod's termination explains an outage: the report with
// its events as napctl probe --watch makes it.
func rollout(t *testing.T) Summary {
	start := time.Unix(1_000_000, 0)
	r := NewReport(start, 0)
	for i := range 300 { // 100/s for 3 s
		off := time.Duration(i) * 10 * time.Millisecond
		res := Result{Mode: []Mode{New, Reuse}[i%2], Due: start.Add(off), Kind: OK, Code: 200, Latency: time.Millisecond + time.Duration(i%7)*100*time.Microsecond}
		switch {
		case off >= 960*time.Millisecond && off <= 1400*time.Millisecond && i%2 == 0:
			res = Result{Mode: New, Due: res.Due, Kind: Refused, Err: "connection refused"}
		case off >= 1200*time.Millisecond && off <= 1300*time.Millisecond:
			res = Result{Mode: Reuse, Due: res.Due, Kind: EOF, Err: "EOF"}
		case off >= 2*time.Second && off < 2100*time.Millisecond:
			res.Latency = 40 * time.Millisecond
		}
		r.Add(res)
	}
	s := r.Summarize(Options{URL: "http://10.79.0.57/", Rate: 100}, 3*time.Second, nil)
	s.Watch = "deployment/web in namespace shop"
	// As package observe words and marks them.
	ev := func(ms int, kind, pod, node, svc, detail, words, mark string) Event {
		off := time.Duration(ms) * time.Millisecond
		return Event{Offset: off, Seconds: off.Seconds(), Kind: kind, Pod: pod, Node: node, Service: svc, Detail: detail, Words: words, Mark: mark}
	}
	s.Events = []Event{
		ev(200, "pod-created", "web-new", "", "", "", "created", MarkServing),
		ev(450, "pod-ready", "web-new", "node-1", "", "", "ready", MarkServing),
		ev(460, "endpoint-ready", "web-new", "node-1", "web", "10.78.0.8", "ready in Service web's EndpointSlice", MarkChange),
		ev(910, "pod-deleting", "web-old", "node-2", "", "grace 30s", "termination began (grace 30s)", MarkLeaving),
		ev(930, "pod-not-ready", "web-old", "node-2", "", "", "not ready", MarkLeaving),
		ev(950, "endpoint-terminating", "web-old", "node-2", "web", "10.78.1.7", "terminating in Service web's EndpointSlice", MarkChange),
		ev(1020, "container-exited", "web-old", "node-2", "", "container app exited 0", "container app exited 0", MarkLeaving),
		ev(1400, "endpoint-removed", "web-old", "node-2", "web", "10.78.1.7", "left Service web's EndpointSlice", MarkChange),
		ev(1620, "pod-deleted", "web-old", "node-2", "", "", "deleted", MarkLeaving),
		ev(9000, "pod-created", "web-later", "", "", "", "created", MarkServing), // past the outage's window
	}
	return s
}

// The text report names, under each outage, the pods whose events are near it; the
// SVG draws each failure kind in its colour, the p99 line and the event markers; the
// JUnit report fails on failed requests.
func TestTimelineReports(t *testing.T) {
	s := rollout(t)
	if s.BucketSeconds != 0.1 || len(s.Buckets) != 30 {
		t.Fatalf("bucket %gs, %d buckets; want 0.1s, 30", s.BucketSeconds, len(s.Buckets))
	}
	var text bytes.Buffer
	if err := Text(&text, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"outage   0.96s –   1.40s (0.44s): 28 failed, eof+refused, over new+reuse connections\n" +
			"  pod web-new on node-1: created 0.20s, ready 0.45s, ready in Service web's EndpointSlice 0.46s\n" +
			"  pod web-old on node-2: termination began (grace 30s) 0.91s, not ready 0.93s, terminating in Service web's EndpointSlice 0.95s, container app exited 0 1.02s, left Service web's EndpointSlice 1.40s, deleted 1.62s\n",
		"events of deployment/web in namespace shop: 10\n",
		"     9.00s  pod web-later  created\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks\n%s\n---\n%s", want, text.String())
		}
	}
	golden.Check(t, filepath.Join("testdata", "rollout.txt"), text.Bytes())

	var svg bytes.Buffer
	if err := SVG(&svg, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`fill="` + KindColors[Refused] + `"`, `fill="` + KindColors[EOF] + `"`, `stroke="` + latencyColor + `"`,
		`fill="` + leavingColor + `"><title>0.91s pod web-old on node-2: termination began (grace 30s)</title>`,
		`fill="` + endpointColor + `"><title>1.40s pod web-old on node-2: left Service web&#39;s EndpointSlice</title>`} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("SVG lacks %s", want)
		}
	}
	if err := xml.Unmarshal(svg.Bytes(), new(struct{})); err != nil {
		t.Errorf("the SVG is not well-formed XML: %v", err)
	}
	golden.Check(t, filepath.Join("testdata", "rollout.svg"), svg.Bytes())

	for _, tc := range []struct {
		max      int
		failures string
	}{{0, `failures="1"`}, {28, `failures="0"`}} {
		var j bytes.Buffer
		if err := JUnit(&j, s, tc.max); err != nil {
			t.Fatal(err)
		}
		var parsed struct {
			Suites []struct {
				Cases []struct {
					Name    string `xml:"name,attr"`
					Failure *struct {
						Message string `xml:"message,attr"`
					} `xml:"failure"`
				} `xml:"testcase"`
				Out string `xml:"system-out"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(j.Bytes(), &parsed); err != nil {
			t.Fatalf("JUnit report: %v\n%s", err, j.String())
		}
		c := parsed.Suites[0].Cases[0]
		if !strings.Contains(j.String(), `<testsuites name="napctl probe" tests="1" `+tc.failures) || (c.Failure != nil) != (tc.max == 0) {
			t.Errorf("--max-failures %d: %s", tc.max, j.String())
		}
		if tc.max == 0 && c.Failure.Message != "28 of 300 requests failed (refused 23, eof 5), more than 0; longest outage 0.44s" {
			t.Errorf("failure message %q", c.Failure.Message)
		}
		if !strings.Contains(parsed.Suites[0].Out, "termination began") {
			t.Error("the JUnit report's output lacks the text report")
		}
	}
}
