package probe

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// A window in which a local server fails in a known way, from 1.0s to 1.8s of a 3s run.
const (
	winStart = 1000 * time.Millisecond
	winEnd   = 1800 * time.Millisecond
	runFor   = 3 * time.Second
	bucket   = 250 * time.Millisecond
)

type flaky struct {
	start time.Time
	fail  func(w http.ResponseWriter, r *http.Request) // in the window
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if since := time.Since(f.start); since >= winStart && since < winEnd {
		f.fail(w, r)
		return
	}
	w.Write([]byte("ok\n"))
}

func hijackClose(linger bool) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok && linger {
			tc.SetLinger(0) // close with RST
		}
		c.Close()
	}
}

// probeWindow runs the probe against url and checks that the report finds one outage
// matching the window, within one bucket, of the given kinds, and that the counts add up.
func probeWindow(t *testing.T, url string, start time.Time, timeout time.Duration, kinds ...Kind) {
	t.Helper()
	rep := NewReport(start, bucket)
	err := Run(context.Background(), Options{URL: url, Rate: 200, Duration: time.Until(start.Add(runFor)), Timeout: timeout}, rep.Add)
	if err != nil {
		t.Fatal(err)
	}
	total := rep.Total()
	sum := 0
	for _, b := range rep.Buckets {
		sum += b.Requests
		byKind := 0
		for _, n := range b.ByKind {
			byKind += n
		}
		if byKind != b.Requests {
			t.Errorf("bucket at %v: %d by kind, %d requests", b.Offset, byKind, b.Requests)
		}
	}
	if sum != total.Requests || total.Requests < 550 || total.Requests > 601 {
		t.Errorf("%d requests in buckets, %d in total; want about 600", sum, total.Requests)
	}
	outs := rep.Outages()
	if len(outs) != 1 {
		t.Fatalf("outages %+v, want one", outs)
	}
	o := outs[0]
	if d := o.Start - winStart; d < -bucket || d > bucket {
		t.Errorf("outage starts at %v, the window at %v", o.Start, winStart)
	}
	// Requests due before the window's end may fail after it (a timeout): the end is
	// where the last failing request was due. On a loaded machine (make test runs
	// packages in parallel) a request due just before the end may reach the server
	// after it and succeed: hence more slack on the early side.
	if d := o.End - winEnd; d < -2*bucket || d > bucket {
		t.Errorf("outage ends at %v, the window at %v", o.End, winEnd)
	}
	for _, k := range kinds {
		if !slices.Contains(o.Kinds, k) {
			t.Errorf("outage kinds %v, want %v among them", o.Kinds, k)
		}
	}
	if o.Failed != total.Failed {
		t.Errorf("outage has %d failures, the total %d", o.Failed, total.Failed)
	}
	t.Logf("%d requests, %d failed %v; outage %v–%v %v over %v", total.Requests, total.Failed, total.ByKind, o.Start, o.End, o.Kinds, o.Modes)
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

func TestWindow503(t *testing.T) {
	t.Parallel()
	start := time.Now()
	url := serve(t, &flaky{start: start, fail: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }})
	probeWindow(t, url, start, time.Second, HTTP5xx)
}

func TestWindowReset(t *testing.T) {
	t.Parallel()
	start := time.Now()
	url := serve(t, &flaky{start: start, fail: hijackClose(true)})
	probeWindow(t, url, start, time.Second, Reset)
}

func TestWindowClosedConnections(t *testing.T) {
	t.Parallel()
	start := time.Now()
	url := serve(t, &flaky{start: start, fail: hijackClose(false)})
	probeWindow(t, url, start, time.Second, EOF)
}

func TestWindowHang(t *testing.T) {
	t.Parallel()
	start := time.Now()
	url := serve(t, &flaky{start: start, fail: func(http.ResponseWriter, *http.Request) { time.Sleep(time.Second) }})
	probeWindow(t, url, start, 300*time.Millisecond, Timeout)
}

// Nothing listens during the window: new connections are refused, pooled ones cut.
func TestWindowRefused(t *testing.T) {
	t.Parallel()
	start := time.Now()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	var cur atomic.Pointer[http.Server]
	srv := &http.Server{Handler: ok}
	cur.Store(srv)
	go srv.Serve(ln)
	go func() {
		time.Sleep(time.Until(start.Add(winStart)))
		cur.Load().Close()
		time.Sleep(time.Until(start.Add(winEnd)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			return
		}
		s2 := &http.Server{Handler: ok}
		cur.Store(s2)
		go s2.Serve(ln)
	}()
	t.Cleanup(func() { cur.Load().Close() })
	probeWindow(t, "http://"+addr+"/", start, time.Second, Refused)
}

func TestBadOptions(t *testing.T) {
	for _, o := range []Options{{URL: "http://x", Rate: 0}, {URL: "ftp://x", Rate: 1}, {URL: "::", Rate: 1}} {
		if err := Run(context.Background(), o, func(Result) {}); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
