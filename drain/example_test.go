package drain_test

import (
	"context"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/nap-k8s/nap/drain"
)

// A service drained on SIGTERM: readiness turns 503, the server keeps serving for 5s with
// "Connection: close", then shuts down within the rest of 20s.
func ExampleDrainer_ListenAndServe() {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello\n")) })
	srv := &http.Server{Addr: ":8080", Handler: mux}

	d := drain.New(srv, drain.Options{Delay: 5 * time.Second, Timeout: 20 * time.Second})
	mux.Handle("/readyz", d.Readiness()) // the readinessProbe
	mux.Handle("/livez", d.Liveness())   // the livenessProbe
	if err := d.ListenAndServe(context.Background()); err != nil {
		log.Fatal(err) // a *drain.CutOffError says how many requests were cut off
	}
}

// grpcLike stands for a server of another kind: Serve(l), GracefulStop(), Stop() (for
// gRPC itself, package drain/grpcdrain does all of this).
type grpcLike interface {
	Serve(net.Listener) error
	GracefulStop()
	Stop()
}

// grpcServer adapts it to drain.Server.
type grpcServer struct {
	s grpcLike
	l net.Listener
}

func (g grpcServer) Serve() error { return g.s.Serve(g.l) }
func (g grpcServer) Close() error { g.s.Stop(); return nil }
func (g grpcServer) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() { g.s.GracefulStop(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Any server with a graceful stop drains the same way; the readiness handler is served
// by a small HTTP health server beside it.
func ExampleDrainer_Run() {
	var s grpcLike // grpc.NewServer(...)
	l, err := net.Listen("tcp", ":9090")
	if err != nil {
		log.Fatal(err)
	}
	health := http.NewServeMux()
	d := drain.New(&http.Server{Addr: ":8081", Handler: health}, drain.Options{})
	health.Handle("/readyz", d.Readiness())
	go http.ListenAndServe(":8081", health)
	if err := d.Run(context.Background(), grpcServer{s: s, l: l}); err != nil {
		log.Fatal(err)
	}
}
