package drain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Defaults, used when neither Options nor the environment say otherwise.
const (
	DefaultDelay   = 5 * time.Second
	DefaultTimeout = 20 * time.Second
)

// The environment variables that set Delay and Timeout when Options leaves them zero.
const (
	EnvDelay   = "NAP_DRAIN_DELAY"
	EnvTimeout = "NAP_DRAIN_TIMEOUT"
)

// Options configure a Drainer. The zero value is usable.
type Options struct {
	// Delay is how long the server keeps serving after the signal, with readiness off.
	Delay time.Duration
	// Timeout bounds everything from the signal to the end: Delay, then Shutdown.
	Timeout time.Duration
	// Signals start the drain; default SIGTERM and SIGINT.
	Signals []os.Signal
	// Logger logs each phase; default slog.Default().
	Logger *slog.Logger
	// Clock measures Delay and Timeout; default the real clock.
	Clock Clock
	// StreamJitter spreads the moments at which open streams (Drainer.Stream) are told
	// to leave over this window from the start of shutdown, so that their clients do
	// not reconnect to the remaining pods all at once; default DefaultStreamJitter, at
	// most half of what the timeout leaves after the delay.
	StreamJitter time.Duration
}

// Clock is the time source of a Drainer, replaceable in tests.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Server is what Run drains. Serve blocks until the server stops; Shutdown stops it
// gracefully, giving up when ctx ends; Close stops it at once.
type Server interface {
	Serve() error
	Shutdown(ctx context.Context) error
	Close() error
}

// A Server may also say when the drain begins and what it cuts off. Run calls
// StartDrain at the first signal, as readiness turns off (a gRPC health service then
// reports NOT_SERVING); InFlight is what a CutOffError counts (by default the HTTP
// requests of the server given to New).
type (
	StartDrainer interface{ StartDrain() }
	InFlighter   interface{ InFlight() int64 }
)

// The phases of a Drainer.
const (
	phaseServing int32 = iota
	phaseDelaying
	phaseShuttingDown
)

// Drainer drains one server. Create it with New.
type Drainer struct {
	srv      *http.Server
	opts     Options
	log      *slog.Logger
	phase    atomic.Int32
	inflight atomic.Int64
	wrapOnce sync.Once

	streamsMu   sync.Mutex
	streams     map[*Stream]struct{}
	streamsGone *sync.Cond // signalled when the last stream is done
}

// New returns a Drainer for srv. srv.Handler (or http.DefaultServeMux) is wrapped when
// serving starts, so handlers may be added to it after New. srv may be nil for a
// Drainer that only Runs another Server (gRPC: package grpcdrain).
func New(srv *http.Server, opts Options) *Drainer {
	d := &Drainer{srv: srv, opts: opts, log: opts.Logger}
	if d.log == nil {
		d.log = slog.Default()
	}
	d.opts.Delay = fromEnv(d.log, opts.Delay, EnvDelay, DefaultDelay)
	d.opts.Timeout = fromEnv(d.log, opts.Timeout, EnvTimeout, DefaultTimeout)
	if d.opts.Delay > d.opts.Timeout {
		d.log.Warn("drain: delay longer than timeout; the delay is cut to the timeout", "delay", d.opts.Delay, "timeout", d.opts.Timeout)
		d.opts.Delay = d.opts.Timeout
	}
	if len(d.opts.Signals) == 0 {
		d.opts.Signals = []os.Signal{syscall.SIGTERM, syscall.SIGINT}
	}
	if d.opts.Clock == nil {
		d.opts.Clock = realClock{}
	}
	if d.opts.StreamJitter == 0 {
		d.opts.StreamJitter = DefaultStreamJitter
	}
	d.opts.StreamJitter = min(d.opts.StreamJitter, (d.opts.Timeout-d.opts.Delay)/2)
	d.streamsGone = sync.NewCond(&d.streamsMu)
	return d
}

func fromEnv(log *slog.Logger, v time.Duration, name string, def time.Duration) time.Duration {
	if v != 0 {
		return v
	}
	s, ok := os.LookupEnv(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		log.Error("drain: ignoring an invalid duration", "env", name, "value", s, "default", def)
		return def
	}
	return d
}

// Delay and Timeout are the effective settings.
func (d *Drainer) Delay() time.Duration   { return d.opts.Delay }
func (d *Drainer) Timeout() time.Duration { return d.opts.Timeout }

// Draining tells whether the drain has started.
func (d *Drainer) Draining() bool { return d.phase.Load() != phaseServing }

// Readiness answers 200 while serving and 503 from the first signal on.
func (d *Drainer) Readiness() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if d.Draining() {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "draining")
			return
		}
		fmt.Fprintln(w, "ok")
	})
}

// Liveness answers 200 until the process exits: draining is not dying.
func (d *Drainer) Liveness() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
}

// OnShutdown registers f to run when Shutdown starts, after the delay: the place to tell
// hijacked connections (WebSockets), which Shutdown does not track, to close.
func (d *Drainer) OnShutdown(f func()) {
	if d.srv != nil {
		d.srv.RegisterOnShutdown(f)
	}
}

// wrap counts requests in flight and asks clients to leave while draining:
// "Connection: close" ends an HTTP/1.1 connection after the response, and Go's HTTP/2
// server turns it into a GOAWAY.
func (d *Drainer) wrap() {
	d.wrapOnce.Do(func() {
		next := d.srv.Handler
		if next == nil {
			next = http.DefaultServeMux
		}
		d.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d.inflight.Add(1)
			defer d.inflight.Add(-1)
			if d.phase.Load() != phaseServing {
				w.Header().Set("Connection", "close")
			}
			next.ServeHTTP(w, r)
		})
	})
}

// ListenAndServe listens on srv.Addr (":http" if empty) and serves until drained.
func (d *Drainer) ListenAndServe(ctx context.Context) error {
	if d.srv == nil {
		return errNoHTTP
	}
	l, err := listen(d.srv.Addr, ":http")
	if err != nil {
		return err
	}
	return d.Serve(ctx, l)
}

// ListenAndServeTLS is ListenAndServe with TLS, as http.Server.ListenAndServeTLS.
func (d *Drainer) ListenAndServeTLS(ctx context.Context, certFile, keyFile string) error {
	if d.srv == nil {
		return errNoHTTP
	}
	l, err := listen(d.srv.Addr, ":https")
	if err != nil {
		return err
	}
	return d.run(ctx, httpServer{srv: d.srv, serve: func() error { return d.srv.ServeTLS(l, certFile, keyFile) }})
}

func listen(addr, def string) (net.Listener, error) {
	if addr == "" {
		addr = def
	}
	return net.Listen("tcp", addr)
}

// Serve serves on l until drained. It returns nil after a clean drain.
//
// With srv.TLSConfig set it serves TLS, as http.Server.ServeTLS does (HTTP/2 offered by
// ALPN), with the certificates from TLSConfig.Certificates, GetCertificate or
// GetConfigForClient. A TLSConfig with none of them is an error: a server configured
// for TLS never falls back to plain HTTP.
func (d *Drainer) Serve(ctx context.Context, l net.Listener) error {
	if d.srv == nil {
		return errNoHTTP
	}
	if c := d.srv.TLSConfig; c != nil {
		if len(c.Certificates) == 0 && c.GetCertificate == nil && c.GetConfigForClient == nil {
			return errors.New("drain: srv.TLSConfig has no certificate source (Certificates, GetCertificate or GetConfigForClient)")
		}
		return d.run(ctx, httpServer{srv: d.srv, serve: func() error { return d.srv.ServeTLS(l, "", "") }})
	}
	return d.run(ctx, httpServer{srv: d.srv, serve: func() error { return d.srv.Serve(l) }})
}

func (d *Drainer) run(ctx context.Context, s httpServer) error {
	d.wrap()
	return d.Run(ctx, s)
}

// httpServer adapts an http.Server to Server.
type httpServer struct {
	srv   *http.Server
	serve func() error
}

func (h httpServer) Serve() error {
	if err := h.serve(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
func (h httpServer) Shutdown(ctx context.Context) error { return h.srv.Shutdown(ctx) }
func (h httpServer) Close() error                       { return h.srv.Close() }

var errNoHTTP = errors.New("drain: no http.Server: New(nil, ...) only Runs other servers")

// CutOffError is returned when the drain did not finish in time, or a second signal
// forced it: the remaining connections were closed.
type CutOffError struct {
	Requests int64         // requests (RPCs) in flight when the connections were closed
	Streams  int           // streams (Drainer.Stream) still open
	After    time.Duration // time from the first signal
	Forced   bool          // a second signal, not the timeout
}

func (e *CutOffError) Error() string {
	why := "timeout"
	if e.Forced {
		why = "second signal"
	}
	return fmt.Sprintf("drain: %s after %v: closed the remaining connections, %d request(s) and %d stream(s) cut off", why, e.After.Round(time.Millisecond), e.Requests, e.Streams)
}

// Run serves s and drains it on the first signal (or when ctx ends), as the package
// documentation describes. It listens for the signals before it starts serving: a
// signal that arrives before Run gets its default action. Readiness and the counts of requests in flight work for the
// http.Server given to New; Run itself serves any Server.
func (d *Drainer) Run(ctx context.Context, s Server) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, d.opts.Signals...)
	defer signal.Stop(sigs)

	served := make(chan error, 1)
	go func() { served <- s.Serve() }()

	select {
	case err := <-served:
		return err
	case sig := <-sigs:
		d.log.Info("drain: signal received: readiness off, still serving", "signal", sig, "delay", d.opts.Delay)
	case <-ctx.Done():
		d.log.Info("drain: context done: readiness off, still serving", "delay", d.opts.Delay)
	}
	start := d.opts.Clock.Now()
	d.phase.Store(phaseDelaying)
	if sd, ok := s.(StartDrainer); ok {
		sd.StartDrain()
	}
	inflight := d.inflight.Load
	if f, ok := s.(InFlighter); ok {
		inflight = f.InFlight
	}
	forced := func() error {
		n := inflight()
		streams := d.cutOffStreams()
		s.Close()
		err := &CutOffError{Requests: n, Streams: streams, After: d.opts.Clock.Now().Sub(start), Forced: true}
		d.log.Error("drain: second signal", "err", err)
		return err
	}

	select {
	case <-d.opts.Clock.After(d.opts.Delay):
	case <-sigs:
		return forced()
	case err := <-served:
		return err
	}

	d.phase.Store(phaseShuttingDown)
	budget := d.opts.Timeout - d.opts.Delay
	d.log.Info("drain: shutting down", "budget", budget, "in_flight", inflight(), "streams", d.Streams())
	d.askStreams(d.opts.StreamJitter)
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shut := make(chan error, 1)
	go func() {
		// Shutdown waits for handlers, an event stream's too, but not for hijacked
		// connections: then the streams that are left.
		err := s.Shutdown(sctx)
		if err == nil {
			err = d.waitStreams(sctx)
		}
		shut <- err
	}()
	select {
	case err := <-shut:
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		if err := <-served; err != nil {
			return err
		}
		d.log.Info("drain: done", "took", d.opts.Clock.Now().Sub(start))
		return nil
	case <-d.opts.Clock.After(budget):
		n := inflight()
		cancel()
		streams := d.cutOffStreams()
		s.Close()
		err := &CutOffError{Requests: n, Streams: streams, After: d.opts.Clock.Now().Sub(start)}
		d.log.Error("drain: timeout", "err", err)
		return err
	case <-sigs:
		cancel()
		return forced()
	}
}
