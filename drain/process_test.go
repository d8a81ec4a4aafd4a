package drain

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the server under test: with DRAIN_TEST_SERVE=1 it serves
// on 127.0.0.1, prints its address, drains on a real signal and exits 0 after a clean
// drain, 3 after a cut-off, 1 otherwise.
func TestMain(m *testing.M) {
	if os.Getenv("DRAIN_TEST_SERVE") == "1" {
		os.Exit(serveForTest())
	}
	os.Exit(m.Run())
}

func serveForTest() int {
	mux := http.NewServeMux()
	srv := &http.Server{Handler: mux}
	d := New(srv, Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}) // Delay/Timeout from the environment
	mux.Handle("/readyz", d.Readiness())
	mux.Handle("/livez", d.Liveness())
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if s := r.URL.Query().Get("sleep"); s != "" {
			t, _ := time.ParseDuration(s)
			time.Sleep(t)
		}
		io.WriteString(w, "ok\n")
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(l.Addr())
	if os.Getenv("DRAIN_TEST_BARE") == "1" { // the control: what Go offers without drain
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		go func() { <-ctx.Done(); srv.Shutdown(context.Background()) }()
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			return 1
		}
		return 0
	}
	err = d.Serve(context.Background(), l)
	var cut *CutOffError
	switch {
	case errors.As(err, &cut):
		fmt.Fprintln(os.Stderr, err)
		return 3
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type server struct {
	cmd    *exec.Cmd
	addr   string
	stderr *strings.Builder
	exited chan struct{}
	err    error
}

func startServer(t *testing.T, delay, timeout time.Duration, env ...string) *server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "DRAIN_TEST_SERVE=1", EnvDelay+"="+delay.String(), EnvTimeout+"="+timeout.String())
	cmd.Env = append(cmd.Env, env...)
	s := &server{cmd: cmd, stderr: &strings.Builder{}, exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); <-s.exited })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("server did not start: %v: %s", err, s.stderr)
	}
	s.addr = strings.TrimSpace(line)
	go func() { s.err = cmd.Wait(); close(s.exited) }()
	// An answer means Serve runs, and Run starts Serve only after it listens for
	// signals: before that, a SIGTERM would get Go's default action.
	for deadline := time.Now().Add(5 * time.Second); readiness(s.addr) != 200; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("server not ready after 5s: %s", s.stderr)
		}
	}
	return s
}

func (s *server) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(within):
		t.Fatalf("server still running after %v", within)
	}
	var exit *exec.ExitError
	if errors.As(s.err, &exit) {
		return exit.ExitCode()
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	return 0
}

// result is one request of the load.
type result struct {
	sent      time.Time
	keepAlive bool
	err       error
	status    int
	close     bool // the response asked to close the connection
}

// load sends GET / open-loop at rate per second, alternating a new TCP connection per
// request and a keep-alive pool, until stop is closed or max requests were sent.
func load(addr string, rate, maxRequests int, stop <-chan struct{}) []result {
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	pooled := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 5 * time.Second}
	defer pooled.CloseIdleConnections()
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; i < maxRequests; i++ {
		select {
		case <-stop:
			wg.Wait()
			return results
		case <-tick.C:
		}
		keepAlive := i%2 == 1
		wg.Go(func() {
			c := fresh
			if keepAlive {
				c = pooled
			}
			r := result{sent: time.Now(), keepAlive: keepAlive}
			resp, err := c.Get("http://" + addr + "/")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				r.status, r.close = resp.StatusCode, resp.Close
			}
			r.err = err
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
		})
	}
	wg.Wait()
	return results
}

func readiness(addr string) int {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestDrainUnderLoad: a real server, real clients (a new connection per request and a
// keep-alive pool, open loop at 200 req/s), a real SIGTERM. Readiness turns 503 at once;
// no request sent before the end of the delay fails; keep-alive responses ask to close
// during the delay; a slow request in flight when Shutdown starts completes; the server
// then exits cleanly, well before its timeout.
func TestDrainUnderLoad(t *testing.T) {
	const delay, timeout = 1500 * time.Millisecond, 6 * time.Second
	s := startServer(t, delay, timeout)
	stop := make(chan struct{})
	var results []result
	loaded := make(chan struct{})
	go func() { results = load(s.addr, 200, 2000, stop); close(loaded) }()

	time.Sleep(500 * time.Millisecond)
	sig := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	for readiness(s.addr) != 503 {
		if time.Since(sig) > time.Second {
			t.Fatal("readiness not 503 a second after SIGTERM")
		}
		time.Sleep(5 * time.Millisecond)
	}
	seen503 := time.Since(sig)

	// A slow request that starts near the end of the delay runs over the shutdown.
	time.Sleep(time.Until(sig.Add(delay - 300*time.Millisecond)))
	slow := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + s.addr + "/?sleep=1500ms")
		if err == nil {
			defer resp.Body.Close()
			if _, err = io.ReadAll(resp.Body); err == nil && resp.StatusCode != 200 {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		slow <- err
	}()
	time.Sleep(time.Until(sig.Add(delay + 300*time.Millisecond)))
	close(stop)
	<-loaded

	if err := <-slow; err != nil {
		t.Errorf("the slow request in flight at shutdown failed: %v", err)
	}
	if code := s.exitCode(t, timeout); code != 0 {
		t.Errorf("server exited %d, want 0: %s", code, s.stderr)
	}
	exited := time.Since(sig)

	// Requests sent before the listener closed (the signal plus the delay; a margin for
	// the time between our signal and the server's) must all have succeeded.
	cutoff := sig.Add(delay - 100*time.Millisecond)
	var before, failed, closeAsked, keepAliveDuringDelay int
	for _, r := range results {
		if r.sent.After(cutoff) {
			continue
		}
		before++
		if r.err != nil || r.status != 200 {
			failed++
			t.Errorf("request sent %v after the signal failed: %v (status %d)", r.sent.Sub(sig), r.err, r.status)
		}
		if r.keepAlive && r.sent.After(sig.Add(50*time.Millisecond)) {
			keepAliveDuringDelay++
			if r.close {
				closeAsked++
			}
		}
	}
	if before < 300 {
		t.Errorf("only %d requests before the cut-off; the load did not run", before)
	}
	if keepAliveDuringDelay == 0 || closeAsked != keepAliveDuringDelay {
		t.Errorf("%d of %d keep-alive responses during the delay asked to close, want all", closeAsked, keepAliveDuringDelay)
	}
	t.Logf("%d requests before the end of the delay, %d failed; readiness 503 after %v; exited %v after SIGTERM", before, failed, seen503.Round(time.Millisecond), exited.Round(time.Millisecond))
}

// TestDrainDeadline: a request that outlives the timeout is cut off at the deadline and
// the error counts it.
func TestDrainDeadline(t *testing.T) {
	const delay, timeout = 200 * time.Millisecond, 1500 * time.Millisecond
	s := startServer(t, delay, timeout)
	go http.Get("http://" + s.addr + "/?sleep=30s")
	time.Sleep(200 * time.Millisecond)
	sig := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	code := s.exitCode(t, 5*time.Second)
	took := time.Since(sig)
	if code != 3 || !strings.Contains(s.stderr.String(), "timeout after") || !strings.Contains(s.stderr.String(), "1 request(s) and 0 stream(s) cut off") {
		t.Errorf("exit %d, stderr %s; want 3 and one request cut off by the timeout", code, s.stderr)
	}
	if took < timeout || took > timeout+500*time.Millisecond {
		t.Errorf("exited %v after SIGTERM, want about the %v timeout", took, timeout)
	}
}

// TestDrainSecondSignal: a second signal ends the drain at once.
func TestDrainSecondSignal(t *testing.T) {
	s := startServer(t, 10*time.Second, 20*time.Second)
	s.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	second := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	code := s.exitCode(t, 5*time.Second)
	if took := time.Since(second); took > 300*time.Millisecond {
		t.Errorf("exited %v after the second signal, want at once", took)
	}
	if code != 3 || !strings.Contains(s.stderr.String(), "second signal") {
		t.Errorf("exit %d, stderr %s; want 3 and the second signal named", code, s.stderr)
	}
}

// TestBareShutdownDropsRequests is the control for TestDrainUnderLoad: the same load
// against a plain http.Server that calls Shutdown on SIGTERM loses the requests that
// are still routed to it after the signal (here: all of them, the listener is gone).
func TestBareShutdownDropsRequests(t *testing.T) {
	s := startServer(t, 0, time.Second, "DRAIN_TEST_BARE=1")
	stop := make(chan struct{})
	var results []result
	loaded := make(chan struct{})
	go func() { results = load(s.addr, 200, 2000, stop); close(loaded) }()
	time.Sleep(500 * time.Millisecond)
	sig := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(time.Second)
	close(stop)
	<-loaded
	failed := 0
	for _, r := range results {
		if r.sent.After(sig.Add(100*time.Millisecond)) && r.err != nil {
			failed++
		}
	}
	if failed < 50 {
		t.Errorf("only %d requests failed after a bare Shutdown; the load does not see dropped requests", failed)
	}
	t.Logf("bare http.Server.Shutdown: %d requests failed in the second after SIGTERM", failed)
}
