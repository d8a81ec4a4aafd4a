package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// The paths and headers of the server.
const (
	// PreStopPath is for the pod's preStop hook: httpGet PreStopPath?hold=60s.
	PreStopPath = "/prestop"
	// PodHeader names the pod that answered.
	PodHeader = "X-Nap-Pod"
	// NodeHeader names its node, when known.
	NodeHeader = "X-Nap-Node"
	// TerminatingHeader is how long ago the pod's termination began, in seconds with
	// millisecond precision; absent before.
	TerminatingHeader = "X-Nap-Terminating-For"
)

// Server answers every path but PreStopPath, /healthz and /readyz with 200 and the
// pod's name.
type Server struct {
	Pod, Node string
	// MaxHold bounds a preStop hold (default 10 minutes).
	MaxHold time.Duration
	now     func() time.Time

	mu          sync.Mutex
	terminating time.Time
	stop        chan struct{} // closed at Shutdown: a held preStop returns
	once        sync.Once
}

// New returns a server for the pod named pod on node.
func New(pod, node string) *Server {
	return &Server{Pod: pod, Node: node, MaxHold: 10 * time.Minute, now: time.Now, stop: make(chan struct{})}
}

// TerminatingSince is when the preStop hook first called, or the zero time.
func (s *Server) TerminatingSince() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.terminating
}

// ServeHTTP answers one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set(PodHeader, s.Pod)
	if s.Node != "" {
		h.Set(NodeHeader, s.Node)
	}
	switch r.URL.Path {
	case "/healthz", "/readyz":
		fmt.Fprintln(w, "ok")
		return
	case PreStopPath:
		s.preStop(w, r)
		return
	}
	if t := s.TerminatingSince(); !t.IsZero() {
		h.Set(TerminatingHeader, strconv.FormatFloat(s.now().Sub(t).Seconds(), 'f', 3, 64))
		// As a draining server does: a keep-alive client (or a proxy's pool) must come
		// back on a new connection, which finds the pod only while routes still name it.
		// Otherwise a kept connection would reach it for the whole hold.
		h.Set("Connection", "close")
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, s.Pod)
}

// preStop notes the start of termination (the first call only) and holds the hook for
// ?hold=DURATION (default 0), at most MaxHold, or until the server shuts down.
func (s *Server) preStop(w http.ResponseWriter, r *http.Request) {
	var hold time.Duration
	if v := r.URL.Query().Get("hold"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			http.Error(w, fmt.Sprintf("hold %q: want a duration such as 60s", v), http.StatusBadRequest)
			return
		}
		hold = min(d, s.MaxHold)
	}
	s.mu.Lock()
	if s.terminating.IsZero() {
		s.terminating = s.now()
	}
	s.mu.Unlock()
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.stop:
	case <-r.Context().Done():
	}
	fmt.Fprintln(w, "held", hold)
}

// ListenAndServe serves on addr until ctx ends, then shuts down within grace: a held
// preStop returns, in-flight requests finish.
func (s *Server) ListenAndServe(ctx context.Context, addr string, grace time.Duration) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, l, grace)
}

// Serve is ListenAndServe on a listener.
func (s *Server) Serve(ctx context.Context, l net.Listener, grace time.Duration) error {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.once.Do(func() { close(s.stop) })
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
