package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

// Mode is how a request reaches the server.
type Mode string

// The connection modes.
const (
	New   Mode = "new"   // a new TCP connection per request: finds stale routes
	Reuse Mode = "reuse" // a keep-alive pool: finds connections cut during shutdown
)

// Kind classifies a result.
type Kind string

// The kinds of result. Every kind but OK is a failure.
const (
	OK      Kind = "ok"
	Refused Kind = "refused" // connection refused: nothing listens
	Reset   Kind = "reset"   // connection reset by peer
	Timeout Kind = "timeout" // no answer within Options.Timeout
	EOF     Kind = "eof"     // the connection closed before a response
	HTTP5xx Kind = "5xx"     // a server error status
	Status  Kind = "status"  // another status that is not 2xx or 3xx
	Other   Kind = "other"   // any other error
)

// Kinds lists the kinds in report order.
var Kinds = []Kind{OK, Refused, Reset, Timeout, EOF, HTTP5xx, Status, Other}

// Options configure Run.
type Options struct {
	URL      string
	Rate     float64       // requests per second, all modes together
	Duration time.Duration // 0: until ctx ends
	Timeout  time.Duration // per request; default 2s
	Modes    []Mode        // default New and Reuse, taking turns
}

// Result is one request's outcome.
type Result struct {
	Mode    Mode
	Due     time.Time     // when the schedule said to send it
	Lag     time.Duration // how late it was sent
	Latency time.Duration
	Kind    Kind
	Code    int    // the HTTP status, when there was one
	Err     string // the error, when there was one
}

// Run sends requests until ctx ends or opts.Duration has passed, calls onResult for each
// result (from one goroutine at a time), and returns after every request has ended.
func Run(ctx context.Context, opts Options, onResult func(Result)) error {
	if opts.Rate <= 0 {
		return fmt.Errorf("rate %v: must be positive", opts.Rate)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if len(opts.Modes) == 0 {
		opts.Modes = []Mode{New, Reuse}
	}
	req, err := http.NewRequest(http.MethodGet, opts.URL, nil)
	if err != nil {
		return err
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("URL %q: want http:// or https://", opts.URL)
	}
	clients := map[Mode]*http.Client{}
	for _, m := range opts.Modes {
		tr := &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: opts.Timeout}).DialContext,
			DisableKeepAlives:   m == New,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     30 * time.Second,
		}
		defer tr.CloseIdleConnections()
		clients[m] = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if opts.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Duration)
		defer cancel()
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	defer wg.Wait() // every request sent has ended when Run returns
	interval := time.Duration(float64(time.Second) / opts.Rate)
	start := time.Now()
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if opts.Duration > 0 && due.Sub(start) >= opts.Duration {
			return nil // exactly Rate × Duration requests, none due at the end itself
		}
		if d := time.Until(due); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return nil
		}
		mode := opts.Modes[i%len(opts.Modes)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(clients[mode], req, opts.Timeout)
			r.Mode, r.Due = mode, due
			r.Lag = r.sent.Sub(due)
			mu.Lock()
			onResult(r.Result)
			mu.Unlock()
		}()
	}
}

type sentResult struct {
	Result
	sent time.Time
}

// do sends one request and classifies what happens.
func do(c *http.Client, base *http.Request, timeout time.Duration) sentResult {
	sent := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := c.Do(base.Clone(ctx))
	r := sentResult{sent: sent}
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r.Code = resp.StatusCode
	}
	r.Latency = time.Since(sent)
	r.Kind = classify(r.Code, err)
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

func classify(code int, err error) Kind {
	var ne net.Error
	switch {
	case err == nil && code >= 500:
		return HTTP5xx
	case err == nil && code >= 400:
		return Status
	case err == nil:
		return OK
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return Reset
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return Timeout
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return EOF
	}
	return Other
}
