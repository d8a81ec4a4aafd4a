package wsdrain

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/nap-k8s/nap/drain"
)

// server serves a WebSocket on / that sends a numbered message every 20 ms until it
// is closed; it drains with d when ctx ends.
func server(t *testing.T, opts drain.Options) (url string, cancel func(), ran chan error) {
	t.Helper()
	mux := http.NewServeMux()
	srv := &http.Server{Handler: mux}
	d := drain.New(srv, opts)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c, ctx, err := Accept(d, w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for i := 0; ; i++ {
			if err := c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, "%d", i)); err != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran = make(chan error, 1)
	go func() { ran <- d.Serve(ctx, l) }()
	return "ws://" + l.Addr().String() + "/", cancel, ran
}

// Every WebSocket open when the drain begins is closed with 1001 "going away" after
// the delay — not cut (1006) — at moments spread over the jitter, and the drain is
// clean: the server waited for the close handshakes that Shutdown does not know of.
func TestGoingAway(t *testing.T) {
	const delay, jitter = 200 * time.Millisecond, 400 * time.Millisecond
	url, cancel, ran := server(t, drain.Options{Delay: delay, Timeout: 5 * time.Second, StreamJitter: jitter})
	const n = 20
	type end struct {
		status   websocket.StatusCode
		reason   string
		at       time.Duration
		received int
	}
	ends := make([]end, n)
	var wg sync.WaitGroup
	var opened sync.WaitGroup
	opened.Add(n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _, err := websocket.Dial(context.Background(), url, nil)
			opened.Done()
			if err != nil {
				ends[i].reason = err.Error()
				return
			}
			defer c.CloseNow()
			for {
				if _, _, err := c.Read(context.Background()); err != nil {
					ends[i].status, ends[i].at = websocket.CloseStatus(err), time.Since(start)
					var ce websocket.CloseError
					if errors.As(err, &ce) {
						ends[i].reason = ce.Reason
					} else {
						ends[i].reason = err.Error()
					}
					return
				}
				ends[i].received++
			}
		}()
	}
	opened.Wait()
	time.Sleep(100 * time.Millisecond)
	signal := time.Since(start)
	cancel()
	wg.Wait()
	if err := <-ran; err != nil {
		t.Errorf("the drain: %v, want clean", err)
	}
	var at []time.Duration
	for i, e := range ends {
		if e.status != websocket.StatusGoingAway || e.reason != Reason {
			t.Errorf("client %d: closed with %d %q, want 1001 %q", i, e.status, e.reason, Reason)
		}
		if e.at < signal+delay {
			t.Errorf("client %d: closed %v after the signal, before the delay ended", i, e.at-signal)
		}
		if e.received == 0 {
			t.Errorf("client %d: received nothing", i)
		}
		at = append(at, e.at)
	}
	if spread := slices.Max(at) - slices.Min(at); spread < jitter/4 {
		t.Errorf("the closes spread over %v, want them spread over the %v jitter", spread, jitter)
	}
}

// A client that never reads never answers the close: at the drain's deadline the
// connection is closed at once and the error counts it.
func TestCutOffAtDeadline(t *testing.T) {
	url, cancel, ran := server(t, drain.Options{Delay: 50 * time.Millisecond, Timeout: time.Second, StreamJitter: time.Millisecond})
	c, _, err := websocket.Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-ran:
		var cut *drain.CutOffError
		if !errors.As(err, &cut) || cut.Streams != 1 || cut.Requests != 0 {
			t.Errorf("the drain: %v, want one stream cut off (and no request)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the drain did not end")
	}
}
