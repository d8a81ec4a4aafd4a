package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
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

// probeWindow sets up a server that fails in the window of a run starting now (setup
// returns its URL), runs the probe against it and checks that the report finds one
// outage matching the window, within one bucket, of the given kinds, and that the
// counts add up. A loaded machine can disturb a run: a failure of a kind the window
// does not make (a lone timeout in a 503 window, seen once in CI), or an outage that
// outlasts the window (requests due 0.5 s after a 1 s hang's window timed out, seen
// once in CI while the lab started beside the unit tests). A run with any problem is
// measured once more, saying so; the second run's problems fail the test.
func probeWindow(t *testing.T, setup func(t *testing.T, start time.Time) string, timeout time.Duration, kinds ...Kind) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		start := time.Now()
		problems, noise, summary := measureWindow(t, setup(t, start), start, timeout, kinds...)
		if len(problems) == 0 {
			t.Log(summary)
			return
		}
		if attempt == 1 {
			t.Logf("run 1 had problems (%s; a failure of a kind the window does not make: %v): %s; measuring again", strings.Join(problems, "; "), noise, summary)
			continue
		}
		for _, p := range problems {
			t.Error(p)
		}
		t.Log(summary)
		return
	}
}

// measureWindow is one run of probeWindow: what is wrong with it, whether it saw a
// failure of a kind not among kinds, and its summary.
func measureWindow(t *testing.T, url string, start time.Time, timeout time.Duration, kinds ...Kind) (problems []string, noise bool, summary string) {
	t.Helper()
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
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
			errorf("bucket at %v: %d by kind, %d requests", b.Offset, byKind, b.Requests)
		}
	}
	if sum != total.Requests || total.Requests < 550 || total.Requests > 601 {
		errorf("%d requests in buckets, %d in total; want about 600", sum, total.Requests)
	}
	for k, n := range total.ByKind {
		if k != OK && n > 0 && !slices.Contains(kinds, k) {
			noise = true
		}
	}
	outs := rep.Outages()
	if len(outs) != 1 {
		errorf("outages %+v, want one", outs)
		return problems, noise, fmt.Sprintf("%d requests, %d failed %v", total.Requests, total.Failed, total.ByKind)
	}
	o := outs[0]
	if d := o.Start - winStart; d < -bucket || d > bucket {
		errorf("outage starts at %v, the window at %v", o.Start, winStart)
	}
	// Requests due before the window's end may fail after it (a timeout): the end is
	// where the last failing request was due. On a loaded machine (make test runs
	// packages in parallel) a request due just before the end may reach the server
	// after it and succeed: hence more slack on the early side.
	if d := o.End - winEnd; d < -2*bucket || d > bucket {
		errorf("outage ends at %v, the window at %v", o.End, winEnd)
	}
	for _, k := range kinds {
		if !slices.Contains(o.Kinds, k) {
			errorf("outage kinds %v, want %v among them", o.Kinds, k)
		}
	}
	// Every failure here hits whatever connection a request uses: both modes see it.
	if !slices.Equal(o.Modes, []Mode{New, Reuse}) {
		errorf("outage over %v, want both connection modes", o.Modes)
	}
	if o.Failed != total.Failed {
		errorf("outage has %d failures, the total %d", o.Failed, total.Failed)
	}
	return problems, noise, fmt.Sprintf("%d requests, %d failed %v; outage %v–%v %v over %v", total.Requests, total.Failed, total.ByKind, o.Start, o.End, o.Kinds, o.Modes)
}

// flakyServer is a probeWindow setup: a server that fails with fail in the window.
func flakyServer(fail func(http.ResponseWriter, *http.Request)) func(*testing.T, time.Time) string {
	return func(t *testing.T, start time.Time) string { return serve(t, &flaky{start: start, fail: fail}) }
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
	probeWindow(t, flakyServer(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }), time.Second, HTTP5xx)
}

func TestWindowReset(t *testing.T) {
	t.Parallel()
	probeWindow(t, flakyServer(hijackClose(true)), time.Second, Reset)
}

func TestWindowClosedConnections(t *testing.T) {
	t.Parallel()
	probeWindow(t, flakyServer(hijackClose(false)), time.Second, EOF)
}

func TestWindowHang(t *testing.T) {
	t.Parallel()
	probeWindow(t, flakyServer(func(http.ResponseWriter, *http.Request) { time.Sleep(time.Second) }), 600*time.Millisecond, Timeout) // below the 1 s hang, above a loaded machine's hiccups
}

// Nothing listens during the window: new connections are refused, pooled ones cut.
func TestWindowRefused(t *testing.T) {
	t.Parallel()
	probeWindow(t, func(t *testing.T, start time.Time) string {
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
		return "http://" + addr + "/"
	}, time.Second, Refused)
}

func TestBadOptions(t *testing.T) {
	for _, c := range []struct {
		opts Options
		want string
	}{
		{opts: Options{URL: "http://x", Rate: 0}, want: "rate 0"},
		{opts: Options{URL: "http://x", Rate: -5}, want: "rate -5"},
		{opts: Options{URL: "http://x", Rate: math.NaN()}, want: "rate NaN"},
		{opts: Options{URL: "http://x", Rate: math.Inf(1)}, want: "rate +Inf"},
		{opts: Options{URL: "http://x", Rate: 2e6}, want: "at most"},
		{opts: Options{URL: "http://x", Rate: 1, Duration: -time.Second}, want: "duration -1s"},
		{opts: Options{URL: "http://x", Rate: 1, Timeout: -time.Second}, want: "timeout -1s"},
		{opts: Options{URL: "http://x", Rate: 1, MaxInFlight: -1}, want: "max-in-flight -1"},
		{opts: Options{URL: "http://x", Rate: 1, Modes: []Mode{"udp"}}, want: `mode "udp"`},
		{opts: Options{URL: "ftp://x", Rate: 1}, want: "want http"},
		{opts: Options{URL: "::", Rate: 1}, want: "missing protocol scheme"},
	} {
		sent := 0
		err := Run(context.Background(), c.opts, func(Result) { sent++ })
		if err == nil || !strings.Contains(err.Error(), c.want) || sent != 0 {
			t.Errorf("%+v: error %v, %d results; want an error with %q and nothing sent", c.opts, err, sent, c.want)
		}
	}
}

// Status codes are counted one by one, in the totals, per mode and per bucket, and the
// text report names them.
func TestStatusCodes(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch n.Add(1) % 4 {
		case 0:
			w.WriteHeader(http.StatusNotFound)
		case 1:
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	start := time.Now()
	rep := NewReport(start, 250*time.Millisecond)
	opts := Options{URL: url, Rate: 200, Duration: time.Second}
	if err := Run(context.Background(), opts, rep.Add); err != nil {
		t.Fatal(err)
	}
	s := rep.Summarize(opts, time.Since(start), nil)
	if s.Total.Requests != 200 {
		t.Fatalf("%d requests, want 200", s.Total.Requests)
	}
	if got := map[int]int{404: 50, 502: 50, 200: 100}; !maps.Equal(s.Total.ByStatus, got) {
		t.Errorf("by status %v, want %v", s.Total.ByStatus, got)
	}
	if s.Total.ByKind[Status] != 50 || s.Total.ByKind[HTTP5xx] != 50 {
		t.Errorf("by kind %v", s.Total.ByKind)
	}
	perMode, perBucket := 0, 0
	for _, c := range s.Modes {
		perMode += c.ByStatus[404]
	}
	for _, b := range s.Buckets {
		perBucket += b.ByStatus[404]
	}
	if perMode != 50 || perBucket != 50 {
		t.Errorf("404s: %d over the modes, %d over the buckets; want 50 each", perMode, perBucket)
	}
	var text strings.Builder
	if err := Text(&text, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"status 50: 404 ×50", "5xx 50: 502 ×50", "status codes  200 ×100, 404 ×50, 502 ×50", "no silent resend"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var js strings.Builder
	if err := JSON(&js, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"by_status": {`) || !strings.Contains(js.String(), `"404": 50`) || !strings.Contains(js.String(), `"keepalive_retry": false`) {
		t.Errorf("JSON lacks the status counts or the retry setting:\n%s", js.String())
	}
}

// A server that holds every request: at most MaxInFlight are outstanding, the rest are
// counted as unsent, and nothing is spawned for them.
func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var got atomic.Int64
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	rep := NewReport(time.Now(), time.Second)
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{URL: url, Rate: 200, Duration: 500 * time.Millisecond, Timeout: 5 * time.Second, MaxInFlight: 10}, rep.Add)
	}()
	time.Sleep(700 * time.Millisecond)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tot := rep.Total()
	if tot.Requests != 100 || tot.ByKind[OK] != 10 || tot.ByKind[Unsent] != 90 || tot.Failed != 90 || got.Load() != 10 {
		t.Errorf("%d requests %v, %d reached the server; want 100: 10 ok (the in-flight bound), 90 unsent, 10 at the server", tot.Requests, tot.ByKind, got.Load())
	}
}

// keepAliveCloser answers the first request of each connection with keep-alive, reads
// the second and closes the connection without a response: what a server shutting down
// does to a request that raced its close. New connections always get the first answer.
func keepAliveCloser(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
				http.ReadRequest(br) // then close, answering nothing
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// Go's client resends a request that failed on a reused connection. Without Retry the
// probe counts what other clients would see; with it, as Go clients do, it hides it.
func TestKeepAliveRetry(t *testing.T) {
	t.Parallel()
	url := keepAliveCloser(t)
	for _, c := range []struct {
		retry bool
		fails bool
	}{{retry: false, fails: true}, {retry: true, fails: false}} {
		rep := NewReport(time.Now(), time.Second)
		// One request at a time, so the second one always goes over the pooled connection.
		if err := Run(context.Background(), Options{URL: url, Rate: 20, Duration: 500 * time.Millisecond, Modes: []Mode{Reuse}, Retry: c.retry}, rep.Add); err != nil {
			t.Fatal(err)
		}
		tot := rep.Total()
		if tot.Requests != 10 || (tot.Failed > 0) != c.fails || c.fails && tot.ByKind[EOF] == 0 {
			t.Errorf("retry %v: %d requests, %d failed %v; want failures (EOF) %v", c.retry, tot.Requests, tot.Failed, tot.ByKind, c.fails)
		}
	}
}

// An outage's JSON is in seconds, as docs/probe.md's schema says.
func TestOutageJSON(t *testing.T) {
	b, err := json.Marshal(Outage{Start: 1500 * time.Millisecond, End: 2250 * time.Millisecond, Failed: 3, Kinds: []Kind{Refused}, Modes: []Mode{New}})
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"failed":3,"kinds":["refused"],"modes":["new"],"start_seconds":1.5,"end_seconds":2.25,"duration_seconds":0.75}`
	if string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	// Read back, it is the same outage.
	var o Outage
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if o.Start != 1500*time.Millisecond || o.End != 2250*time.Millisecond || o.Failed != 3 || len(o.Kinds) != 1 || o.Kinds[0] != Refused || len(o.Modes) != 1 || o.Modes[0] != New {
		t.Errorf("read back: %+v", o)
	}
}

// ListFailures puts each failed request into the JSON, to the nanosecond, which a caller
// in another process reads back as the Failures a caller in this one has; without it
// the JSON lists none.
func TestListFailures(t *testing.T) {
	t.Parallel()
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	rep := NewReport(time.Now(), 100*time.Millisecond)
	opts := Options{URL: url, Rate: 40, Duration: 250 * time.Millisecond}
	if err := Run(context.Background(), opts, rep.Add); err != nil {
		t.Fatal(err)
	}
	s := rep.Summarize(opts, 250*time.Millisecond, nil)
	if len(s.Failures) != 10 {
		t.Fatalf("%d failures, want 10 (every request, a 503)", len(s.Failures))
	}
	var plain bytes.Buffer
	if err := JSON(&plain, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "failed_requests") {
		t.Errorf("the JSON lists the failures unasked")
	}
	s.ListFailures()
	var listed bytes.Buffer
	if err := JSON(&listed, s); err != nil {
		t.Fatal(err)
	}
	var back Summary
	if err := json.Unmarshal(listed.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	got := back.ListedFailures()
	if len(got) != len(s.Failures) {
		t.Fatalf("read back %d failures, want %d", len(got), len(s.Failures))
	}
	for i, f := range s.Failures {
		g := got[i]
		if !g.Due.Equal(f.Due) || g.Mode != f.Mode || g.Kind != f.Kind || g.Err != f.Err || g.Code != 503 || g.Local != f.Local || g.Local == "" {
			t.Errorf("failure %d read back as %+v, want %+v", i, g, f)
		}
	}
}

// RecordHeaders keeps the named response headers of each result, in order, "" when
// absent: how a prober tells which backend answered.
func TestRecordHeaders(t *testing.T) {
	t.Parallel()
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("X-Backend", "pod-a") }))
	var got [][]string
	opts := Options{URL: url, Rate: 100, Duration: 200 * time.Millisecond, RecordHeaders: []string{"X-Backend", "X-Absent"}}
	if err := Run(context.Background(), opts, func(r Result) { got = append(got, r.Headers) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 {
		t.Fatalf("%d results, want 20", len(got))
	}
	for _, h := range got {
		if len(h) != 2 || h[0] != "pod-a" || h[1] != "" {
			t.Fatalf("headers %q, want [pod-a \"\"]", h)
		}
	}
}

// Local is the client's end of the connection each request went over, as the server
// saw it: a request that timed out waiting for its answer names its connection, in
// both modes; one whose connection was refused names none.
func TestLocalAddress(t *testing.T) {
	t.Parallel()
	var seen sync.Map // the clients' addresses the server saw
	url := serve(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		seen.Store(r.RemoteAddr, true)
		time.Sleep(300 * time.Millisecond) // past the probe's timeout
	}))
	var got []Result
	opts := Options{URL: url, Rate: 50, Duration: 200 * time.Millisecond, Timeout: 100 * time.Millisecond}
	if err := Run(context.Background(), opts, func(r Result) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	modes := map[Mode]bool{}
	for _, r := range got {
		if _, ok := seen.Load(r.Local); r.Kind != Timeout || !ok {
			t.Errorf("%s: %s from %q, want a timeout from an address the server saw", r.Mode, r.Kind, r.Local)
		}
		modes[r.Mode] = true
	}
	if len(got) != 10 || !modes[New] || !modes[Reuse] {
		t.Errorf("%d results over %v, want 10 over both modes", len(got), modes)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	got = nil
	opts.URL = closed
	if err := Run(context.Background(), opts, func(r Result) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		if r.Kind != Refused || r.Local != "" {
			t.Errorf("%s: %s from %q, want refused from no connection", r.Mode, r.Kind, r.Local)
		}
	}
}
