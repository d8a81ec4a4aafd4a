package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
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
	Status  Kind = "status"  // another status that is not 2xx or 3xx; for gRPC, not OK
	Other   Kind = "other"   // any other error
	// Unsent: due while Options.MaxInFlight requests were still waiting for answers, so
	// not sent at all. The prober never grows without bound; a server that holds every
	// request shows up as timeouts followed by unsent requests.
	Unsent Kind = "unsent"
)

// Kinds lists the kinds in report order.
var Kinds = []Kind{OK, Refused, Reset, Timeout, EOF, HTTP5xx, Status, Other, Unsent}

// Options configure Run.
type Options struct {
	URL      string
	Rate     float64       // requests per second, all modes together
	Duration time.Duration // 0: until ctx ends
	Timeout  time.Duration // per request; default 2s
	Modes    []Mode        // default New and Reuse, taking turns
	// MaxInFlight bounds the requests waiting for an answer; a request due while the
	// bound is reached is not sent and counts as Unsent. Default: what Rate × Timeout
	// needs with room to spare (at least 64), at most 100,000.
	MaxInFlight int
	// RecordHeaders names response headers whose values each Result keeps, in this order
	// (in Result.Headers): which backend answered, how long it had been terminating.
	RecordHeaders []string
	// Streams, when not 0, holds this many streams open (RunStreams) instead of
	// sending requests: ws:// WebSockets, or event streams at an http:// URL.
	Streams int
	// Host, when set, is the name requests give the server instead of the URL's host
	// (HTTP's Host header, gRPC's :authority): how an ingress that routes by host is
	// reached at its address.
	Host string
	// DNS, when set, is the DNS server (ADDR:PORT) that resolves the URL's host at
	// each new connection instead of the system's: a cluster's DNS, from a node, for a
	// headless Service's name. Go's resolver keeps no cache: a client that resolves per
	// connection.
	DNS string
	// Retry lets Go's client resend a request, once and silently, when a reused
	// keep-alive connection turns out to be closed before any response byte. Off by
	// default: such a failure (EOF, reset) is counted, as most other clients would see it.
	Retry bool
}

// CheckDNS tells whether dns names a DNS server as Options.DNS wants it: ADDR:PORT.
func CheckDNS(dns string) error {
	if _, port, err := net.SplitHostPort(dns); err != nil || port == "" {
		return fmt.Errorf("dns %q: want ADDR:PORT (a cluster's DNS: the ClusterIP of kube-system/kube-dns, port 53)", dns)
	}
	return nil
}

// Dialer dials with timeout and, when dns is set, resolves names at that DNS server
// (ADDR:PORT) rather than the system's (Options.DNS).
func Dialer(timeout time.Duration, dns string) *net.Dialer {
	return &net.Dialer{Timeout: timeout, Resolver: Resolver(timeout, dns)}
}

// Resolver is Go's resolver asking the DNS server dns (ADDR:PORT) and nothing else,
// each of its connections dialed within timeout; nil (the system's) when dns is empty.
func Resolver(timeout time.Duration, dns string) *net.Resolver {
	if dns == "" {
		return nil
	}
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{Timeout: timeout}).DialContext(ctx, network, dns)
	}}
}

// Defaults fills in what o leaves to Run: its timeout, modes and in-flight bound.
func (o Options) Defaults() Options {
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	if len(o.Modes) == 0 {
		o.Modes = []Mode{New, Reuse}
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight(o.Rate, o.Timeout)
	}
	return o
}

// DefaultMaxInFlight is the in-flight bound Run uses when Options.MaxInFlight is 0.
func DefaultMaxInFlight(rate float64, timeout time.Duration) int {
	n := rate*timeout.Seconds()*2 + 64
	if n > 100_000 {
		return 100_000
	}
	return int(n)
}

// Validate checks the options, naming the one that is off.
func (o Options) Validate() error {
	switch {
	case math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) || o.Rate <= 0:
		return fmt.Errorf("rate %v: must be a positive number", o.Rate)
	case o.Rate > 1e6:
		return fmt.Errorf("rate %v: at most 1,000,000 requests per second", o.Rate)
	case o.Duration < 0:
		return fmt.Errorf("duration %v: must not be negative", o.Duration)
	case o.Timeout < 0:
		return fmt.Errorf("timeout %v: must not be negative", o.Timeout)
	case o.MaxInFlight < 0:
		return fmt.Errorf("max-in-flight %d: must not be negative", o.MaxInFlight)
	case o.Host != "" && o.Streams > 0:
		return fmt.Errorf("host %q: names the server of requests, not of held streams", o.Host)
	case o.DNS != "" && o.Streams > 0:
		return fmt.Errorf("dns %q: resolves the names of requests, not of held streams", o.DNS)
	case o.DNS != "":
		return CheckDNS(o.DNS)
	}
	for _, m := range o.Modes {
		if m != New && m != Reuse {
			return fmt.Errorf("connection mode %q: want new or reuse", m)
		}
	}
	return nil
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
	// Headers are the values of Options.RecordHeaders in the response ("" when absent).
	Headers []string
	// Local is the client's end (host:port) of the connection the request went over
	// (a gRPC call on a new connection: the one TCP connected, even when the server
	// never answered its HTTP/2 handshake); "" when it got none, so that it was never
	// written. A proxy's access log and the nodes' connection tracking name the same
	// address: it tells which logged request or tracked connection a failure was.
	Local string
}

// Run sends requests until ctx ends or opts.Duration has passed, calls onResult for each
// result (from one goroutine at a time), and returns after every request has ended.
func Run(ctx context.Context, opts Options, onResult func(Result)) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	opts = opts.Defaults()
	slots := make(chan struct{}, opts.MaxInFlight)
	send, closeAll, err := newSender(opts)
	if err != nil {
		return err
	}
	defer closeAll()
	// With a Duration the schedule alone ends the run (below), not a deadline on ctx: a
	// loaded machine that runs late still sends every request that was due.
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
		select {
		case slots <- struct{}{}:
		default:
			mu.Lock()
			onResult(Result{Mode: mode, Due: due, Lag: time.Since(due), Kind: Unsent, Err: "in-flight limit reached"})
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			r := send(mode)
			r.Mode, r.Due = mode, due
			r.Lag = r.sent.Sub(due)
			mu.Lock()
			onResult(r.Result)
			mu.Unlock()
		}()
	}
}

// newSender returns what sends one request in a mode, by the URL's scheme, and what
// closes its connections after the run.
func newSender(opts Options) (send func(Mode) sentResult, closeAll func(), err error) {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, nil, fmt.Errorf("URL %q: %w", opts.URL, err)
	}
	switch u.Scheme {
	case "http", "https":
	case "grpc":
		return newGRPCSender(u, opts)
	default:
		return nil, nil, fmt.Errorf("URL %q: want http://, https:// or grpc://", opts.URL)
	}
	req, err := http.NewRequest(http.MethodGet, opts.URL, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Host = opts.Host // "": the URL's
	clients := map[Mode]*http.Client{}
	var transports []*http.Transport
	for _, m := range opts.Modes {
		tr := &http.Transport{
			Proxy:               nil,
			DialContext:         Dialer(opts.Timeout, opts.DNS).DialContext,
			DisableKeepAlives:   m == New,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     30 * time.Second,
		}
		transports = append(transports, tr)
		clients[m] = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	send = func(m Mode) sentResult { return do(clients[m], req, opts.Timeout, opts.Retry, opts.RecordHeaders) }
	closeAll = func() {
		for _, tr := range transports {
			tr.CloseIdleConnections()
		}
	}
	return send, closeAll, nil
}

type sentResult struct {
	Result
	sent time.Time
}

// do sends one request and classifies what happens.
func do(c *http.Client, base *http.Request, timeout time.Duration, retry bool, record []string) sentResult {
	sent := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var local string // GotConn runs in Do's goroutine, before Do returns
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		local = i.Conn.LocalAddr().String()
	}})
	req := base.Clone(ctx)
	if !retry {
		// Go's transport resends a request that failed on a reused connection only when
		// the request is replayable: a GET whose Body is nil or NoBody, or has GetBody.
		// An empty Body without GetBody is not replayable, and still goes out as a GET
		// with no body (the transport probes it and finds it empty): no silent retry.
		req.Body = io.NopCloser(strings.NewReader(""))
	}
	resp, err := c.Do(req)
	r := sentResult{sent: sent}
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r.Code = resp.StatusCode
		if len(record) > 0 {
			r.Headers = make([]string, len(record))
			for i, h := range record {
				r.Headers[i] = resp.Header.Get(h)
			}
		}
	}
	r.Latency = time.Since(sent)
	r.Local = local
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
