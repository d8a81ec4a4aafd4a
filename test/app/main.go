package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nap-k8s/nap/drain"
	"github.com/nap-k8s/nap/drain/grpcdrain"
)

func main() {
	addr := flag.String("addr", ":8080", "HTTP listen address")
	grpcAddr := flag.String("grpc-addr", ":9090", "gRPC listen address (the health service); empty: none")
	mode := flag.String("mode", envOr("APP_MODE", "plain"), "shutdown mode: plain or drain")
	flag.Parse()
	if err := run(*addr, *grpcAddr, *mode); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// run serves HTTP on addr and gRPC on grpcAddr until both have shut down in mode.
func run(addr, grpcAddr, mode string) error {
	if mode != "plain" && mode != "drain" {
		return fmt.Errorf("-mode %q: want plain or drain", mode)
	}
	host, _ := os.Hostname()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	var gl net.Listener
	if grpcAddr != "" {
		l, err := net.Listen("tcp", grpcAddr)
		if err != nil {
			return err
		}
		gl = l
	}
	mux := http.NewServeMux()
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	routes(mux, host)
	errs := make(chan error, 2)
	servers := 1
	switch mode {
	case "drain":
		d := drain.New(srv, drain.Options{Logger: log})
		mux.Handle("/readyz", d.Readiness())
		mux.Handle("/healthz", d.Liveness())
		if gl != nil {
			servers++
			gs := grpcdrain.NewServer(grpcdrain.Options{})
			go func() { errs <- drain.New(nil, drain.Options{Logger: log}).Run(context.Background(), gs.On(gl)) }()
		}
		log.Info("serving", "addr", addr, "grpc", grpcAddr, "mode", mode, "delay", d.Delay(), "timeout", d.Timeout())
		go func() { errs <- d.ListenAndServe(context.Background()) }()
	case "plain":
		mux.HandleFunc("/readyz", ok)
		mux.HandleFunc("/healthz", ok)
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		if gl != nil {
			// What most gRPC services do: GracefulStop at the first SIGTERM (the
			// listener closes at once, connections get a GOAWAY).
			servers++
			gs := grpc.NewServer()
			healthpb.RegisterHealthServer(gs, health.NewServer())
			go func() {
				<-ctx.Done()
				gs.GracefulStop()
			}()
			go func() { errs <- gs.Serve(gl) }()
		}
		go func() {
			<-ctx.Done()
			log.Info("signal: shutting down")
			srv.Shutdown(context.Background())
		}()
		log.Info("serving", "addr", addr, "grpc", grpcAddr, "mode", mode)
		go func() {
			if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				errs <- err
				return
			}
			errs <- nil
		}()
	}
	var first error
	for range servers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func routes(mux *http.ServeMux, host string) {
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if d := r.URL.Query().Get("d"); d != "" {
			t, err := time.ParseDuration(d)
			if err != nil || t < 0 || t > time.Minute {
				http.Error(w, "d: a duration up to 1m", http.StatusBadRequest)
				return
			}
			time.Sleep(t)
		}
		io.WriteString(w, "ok "+host+"\n")
	})
}

func ok(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") }
