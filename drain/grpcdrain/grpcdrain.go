package grpcdrain

import (
	"context"
	"net"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/nap-k8s/nap/drain"
)

// Options of a Server.
type Options struct {
	// MaxConnectionAge ends each client connection with a GOAWAY after this age (gRPC
	// adds ±10% jitter), so that clients spread over new pods; 0: never, gRPC's
	// default.
	MaxConnectionAge time.Duration
	// MaxConnectionAgeGrace is how long the RPCs of a connection so ended get to
	// finish; 0: as long as they take.
	MaxConnectionAgeGrace time.Duration
	// ServerOptions are given to grpc.NewServer after the Server's own.
	ServerOptions []grpc.ServerOption
}

// Server is a grpc.Server that counts its RPCs in flight, with the health service
// registered. Register services on GRPC(); drain it with drain.Drainer.Run(ctx, On(l)).
type Server struct {
	grpc     *grpc.Server
	health   *health.Server
	inflight atomic.Int64
}

// NewServer returns a Server whose health service reports SERVING for "" (the whole
// server) until the drain begins.
func NewServer(opts Options) *Server {
	s := &Server{health: health.NewServer()}
	count := func() func() {
		s.inflight.Add(1)
		return func() { s.inflight.Add(-1) }
	}
	own := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			defer count()()
			return next(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, next grpc.StreamHandler) error {
			defer count()()
			return next(srv, ss)
		}),
	}
	if opts.MaxConnectionAge > 0 {
		own = append(own, grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionAge: opts.MaxConnectionAge, MaxConnectionAgeGrace: opts.MaxConnectionAgeGrace}))
	}
	s.grpc = grpc.NewServer(append(own, opts.ServerOptions...)...)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	return s
}

// GRPC is the server to register services on.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Health is the health service, to set the status of named services while serving.
func (s *Server) Health() *health.Server { return s.health }

// InFlight is the number of RPCs (unary calls and streams) running now.
func (s *Server) InFlight() int64 { return s.inflight.Load() }

// On is s serving on l, as a drain.Server.
func (s *Server) On(l net.Listener) drain.Server { return &served{s: s, l: l} }

type served struct {
	s *Server
	l net.Listener
}

var (
	_ drain.StartDrainer = (*served)(nil)
	_ drain.InFlighter   = (*served)(nil)
)

// Serve serves until the server stops (nil after GracefulStop or Stop).
func (v *served) Serve() error { return v.s.grpc.Serve(v.l) }

// StartDrain reports NOT_SERVING for every service, from now on.
func (v *served) StartDrain() { v.s.health.Shutdown() }

// Shutdown is GracefulStop, given up when ctx ends (Run then Closes).
func (v *served) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		v.s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close is Stop: every connection closed, every RPC cancelled.
func (v *served) Close() error {
	v.s.grpc.Stop()
	return nil
}

func (v *served) InFlight() int64 { return v.s.InFlight() }
