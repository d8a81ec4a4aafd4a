package drain

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"testing"
	"time"
)

// fakeClock fires After channels when the test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1e9, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), ch: ch})
	return ch
}

// waitFor waits until n timers have been asked for.
func (c *fakeClock) waitFor(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		got := len(c.waiters)
		c.mu.Unlock()
		if got >= n {
			return
		}
	}
	t.Fatalf("no timer number %d", n)
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			select {
			case w.ch <- c.now:
			default:
			}
		}
	}
}

// fakeServer records calls; Shutdown blocks until release is closed (or ctx ends).
type fakeServer struct {
	stop     chan struct{}
	release  chan struct{}
	shutdown chan struct{}
	closed   chan struct{}
	once     sync.Once
}

func newFakeServer() *fakeServer {
	return &fakeServer{stop: make(chan struct{}), release: make(chan struct{}), shutdown: make(chan struct{}, 1), closed: make(chan struct{})}
}

func (s *fakeServer) Serve() error { <-s.stop; return nil }
func (s *fakeServer) Shutdown(ctx context.Context) error {
	s.shutdown <- struct{}{}
	select {
	case <-s.release:
		s.once.Do(func() { close(s.stop) })
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (s *fakeServer) Close() error {
	close(s.closed)
	s.once.Do(func() { close(s.stop) })
	return nil
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestPhases(t *testing.T) {
	clock := newFakeClock()
	d := New(&http.Server{}, Options{Delay: 5 * time.Second, Timeout: 20 * time.Second, Clock: clock, Logger: quiet()})
	srv := newFakeServer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, srv) }()

	if code := get(t, d.Readiness()); code != 200 {
		t.Fatalf("readiness %d before the drain, want 200", code)
	}
	cancel()
	clock.waitFor(t, 1)
	if code := get(t, d.Readiness()); code != 503 {
		t.Fatalf("readiness %d once draining, want 503", code)
	}
	if code := get(t, d.Liveness()); code != 200 {
		t.Fatalf("liveness %d while draining, want 200", code)
	}
	clock.Advance(4 * time.Second)
	select {
	case <-srv.shutdown:
		t.Fatal("Shutdown before the delay was over")
	case <-time.After(50 * time.Millisecond):
	}
	clock.Advance(time.Second)
	<-srv.shutdown
	close(srv.release)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v, want nil", err)
	}
}

func TestTimeoutCutsOff(t *testing.T) {
	clock := newFakeClock()
	d := New(&http.Server{}, Options{Delay: time.Second, Timeout: 3 * time.Second, Clock: clock, Logger: quiet()})
	srv := newFakeServer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, srv) }()
	cancel()
	clock.waitFor(t, 1)
	clock.Advance(time.Second)
	<-srv.shutdown
	clock.waitFor(t, 2)
	clock.Advance(2 * time.Second) // Shutdown never returns: the budget runs out
	err := <-done
	var cut *CutOffError
	if !errors.As(err, &cut) || cut.Forced || cut.After != 3*time.Second {
		t.Fatalf("Run: %v, want a timeout CutOffError after 3s", err)
	}
	select {
	case <-srv.closed:
	default:
		t.Fatal("Close was not called")
	}
}

func TestDelayNotLongerThanTimeout(t *testing.T) {
	d := New(&http.Server{}, Options{Delay: time.Minute, Timeout: time.Second, Logger: quiet()})
	if d.Delay() != time.Second {
		t.Errorf("Delay %v, want it cut to the 1s timeout", d.Delay())
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv(EnvDelay, "2s")
	t.Setenv(EnvTimeout, "bogus")
	d := New(&http.Server{}, Options{Logger: quiet()})
	if d.Delay() != 2*time.Second || d.Timeout() != DefaultTimeout {
		t.Errorf("Delay %v Timeout %v, want 2s from %s and the default for an invalid %s", d.Delay(), d.Timeout(), EnvDelay, EnvTimeout)
	}
	if d := New(&http.Server{}, Options{Delay: time.Second, Logger: quiet()}); d.Delay() != time.Second {
		t.Errorf("Options.Delay %v, want it to win over the environment", d.Delay())
	}
}

func get(t *testing.T, h http.Handler) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	return rec.Code
}

// TestHTTP2GoAway: during the delay, an HTTP/2 client's connection gets a GOAWAY after
// its next response, and the client carries on over a new connection.
func TestHTTP2GoAway(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) })
	srv := &http.Server{Handler: mux, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	d := New(srv, Options{Delay: 2 * time.Second, Timeout: 5 * time.Second, Logger: quiet()})
	l, cancel, done := serveLoopback(t, d)

	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	url := "http://" + l.Addr().String() + "/"
	request := func() (conn net.Conn, proto string) {
		t.Helper()
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { conn = info.Conn }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", url, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return conn, string(b)
	}
	first, proto := request()
	if proto != "HTTP/2.0" {
		t.Fatalf("served %s, want HTTP/2.0", proto)
	}
	if again, _ := request(); again != first {
		t.Fatal("a second request before the drain did not reuse the connection")
	}
	cancel()
	for !d.Draining() {
		time.Sleep(time.Millisecond)
	}
	last, _ := request() // still served, on the old connection, which then gets a GOAWAY
	if last != first {
		t.Fatal("the first request of the drain did not use the open connection")
	}
	time.Sleep(100 * time.Millisecond)
	next, proto := request()
	if next == first || proto != "HTTP/2.0" {
		t.Errorf("after the GOAWAY the client still used the old connection (new conn: %v, %s)", next != first, proto)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// serveLoopback runs d.Serve on a new loopback listener; cancel starts the drain, and
// done gives Serve's result.
func serveLoopback(t *testing.T, d *Drainer) (net.Listener, context.CancelFunc, <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, l) }()
	return l, cancel, done
}

// A Drainer made without an http.Server runs other servers only: its HTTP entry points
// say so instead of panicking, and OnShutdown is a no-op.
func TestNoHTTPServer(t *testing.T) {
	d := New(nil, Options{Delay: time.Millisecond, Timeout: time.Second})
	d.OnShutdown(func() {})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for name, err := range map[string]error{
		"ListenAndServe": d.ListenAndServe(context.Background()),
		"Serve":          d.Serve(context.Background(), l),
	} {
		if !errors.Is(err, errNoHTTP) {
			t.Errorf("%s: %v, want %v", name, err, errNoHTTP)
		}
	}
}
