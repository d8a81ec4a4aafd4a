package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nap-k8s/nap/drain"
)

func main() {
	addr := flag.String("addr", ":8080", "listen address")
	mode := flag.String("mode", envOr("APP_MODE", "plain"), "shutdown mode: plain or drain")
	flag.Parse()
	if err := run(*addr, *mode); err != nil {
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

func run(addr, mode string) error {
	host, _ := os.Hostname()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	mux := http.NewServeMux()
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	routes(mux, host)
	switch mode {
	case "drain":
		d := drain.New(srv, drain.Options{Logger: log})
		mux.Handle("/readyz", d.Readiness())
		mux.Handle("/healthz", d.Liveness())
		log.Info("serving", "addr", addr, "mode", mode, "delay", d.Delay(), "timeout", d.Timeout())
		return d.ListenAndServe(context.Background())
	case "plain":
		mux.HandleFunc("/readyz", ok)
		mux.HandleFunc("/healthz", ok)
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		go func() {
			<-ctx.Done()
			log.Info("signal: shutting down")
			srv.Shutdown(context.Background())
		}()
		log.Info("serving", "addr", addr, "mode", mode)
		if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
	return fmt.Errorf("-mode %q: want plain or drain", mode)
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
