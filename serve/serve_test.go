package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestServer(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s := New("web-7d9f-abcde", "node-2")
	s.now = func() time.Time { return now }
	get := func(path string) *http.Response {
		t.Helper()
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Result()
	}
	r := get("/anything")
	body, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 || strings.TrimSpace(string(body)) != "web-7d9f-abcde" || r.Header.Get(PodHeader) != "web-7d9f-abcde" || r.Header.Get(NodeHeader) != "node-2" {
		t.Errorf("before termination: %d %q %v", r.StatusCode, body, r.Header)
	}
	if v := r.Header.Get(TerminatingHeader); v != "" || r.Header.Get("Connection") != "" {
		t.Errorf("%s before termination: %q; Connection %q", TerminatingHeader, v, r.Header.Get("Connection"))
	}
	if r := get(PreStopPath + "?hold=nonsense"); r.StatusCode != http.StatusBadRequest {
		t.Errorf("hold=nonsense: %d, want 400", r.StatusCode)
	}
	if r := get(PreStopPath); r.StatusCode != 200 {
		t.Errorf("preStop: %d", r.StatusCode)
	}
	began := now
	now = now.Add(1500 * time.Millisecond)
	get(PreStopPath) // a second call does not move the start
	r = get("/")
	if v := r.Header.Get(TerminatingHeader); v != "1.500" || r.Header.Get("Connection") != "close" {
		t.Errorf("%s = %q, want 1.500; Connection %q, want close (kept connections come back new)", TerminatingHeader, v, r.Header.Get("Connection"))
	}
	if got := s.TerminatingSince(); !got.Equal(began) {
		t.Errorf("TerminatingSince = %v, want %v", got, began)
	}
}

// The preStop hook is held for its hold, and released at once by a shutdown.
func TestPreStopHold(t *testing.T) {
	s := New("p", "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l, 5*time.Second) }()
	url := "http://" + l.Addr().String()
	t0 := time.Now()
	resp, err := http.Get(url + PreStopPath + "?hold=300ms")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if held := time.Since(t0); held < 300*time.Millisecond {
		t.Errorf("held %v, want at least 300ms", held)
	}
	resp, err = http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v, err := strconv.ParseFloat(resp.Header.Get(TerminatingHeader), 64); err != nil || v < 0.3 {
		t.Errorf("%s = %q after a 300ms hold", TerminatingHeader, resp.Header.Get(TerminatingHeader))
	}
	// A long hold, then shutdown: the hook returns at once and Serve ends.
	held := make(chan time.Duration, 1)
	go func() {
		t0 := time.Now()
		if resp, err := http.Get(url + PreStopPath + "?hold=1h"); err == nil {
			resp.Body.Close()
		}
		held <- time.Since(t0)
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case d := <-held:
		if d > 3*time.Second {
			t.Errorf("a 1h hold returned after %v of shutdown", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a held preStop outlived the shutdown")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
