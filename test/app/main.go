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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/nap-k8s/nap/drain"
	"github.com/nap-k8s/nap/drain/grpcdrain"
	"github.com/nap-k8s/nap/drain/wsdrain"
)

func main() {
	addr := flag.String("addr", ":8080", "HTTP listen address")
	grpcAddr := flag.String("grpc-addr", ":9090", "gRPC listen address (the health service); empty: none")
	mode := flag.String("mode", envOr("APP_MODE", "plain"), "shutdown mode: plain or drain")
	fillSpec := flag.String("fill", os.Getenv("APP_FILL"), "before serving, write MiB of data into FILE (FILE:MiB): the disk pressure of an eviction test")
	cat := flag.String("cat", "", "print FILE and exit, serving nothing: what a test reads in the pod (the image has no shell)")
	resolve := flag.String("resolve", "", "print the addresses NAME resolves to in the pod (its resolv.conf: the cluster DNS), one a line, sorted, and exit")
	flag.Parse()
	if *cat != "" || *resolve != "" {
		var err error
		if *cat != "" {
			err = catFile(os.Stdout, *cat)
		} else {
			err = lookup(os.Stdout, *resolve)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "app:", err)
			os.Exit(1)
		}
		return
	}
	if *fillSpec != "" {
		if err := fill(*fillSpec); err != nil {
			fmt.Fprintln(os.Stderr, "app:", err)
			os.Exit(1)
		}
	}
	if err := run(*addr, *grpcAddr, *mode); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
		os.Exit(1)
	}
}

// fill writes spec's MiB of data (zeros, written: every block allocated) into spec's
// file, "FILE:MiB", and syncs it, so that the file system's free space shows it.
func fill(spec string) error {
	file, size, ok := strings.Cut(spec, ":")
	mib, err := strconv.Atoi(size)
	if !ok || file == "" || err != nil || mib <= 0 || mib > 4096 {
		return fmt.Errorf("-fill %q: want FILE:MiB, at most 4096 MiB", spec)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	block := make([]byte, 1<<20)
	for range mib {
		if _, err := f.Write(block); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// catFile copies file to w.
func catFile(w io.Writer, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// lookup writes the addresses name resolves to, one a line, sorted, with Go's own
// resolver: the pod's /etc/resolv.conf, its search path and ndots.
func lookup(w io.Writer, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addrs, err := (&net.Resolver{PreferGo: true}).LookupHost(ctx, name)
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return fmt.Errorf("no address for %s", name)
	}
	slices.Sort(addrs)
	for _, a := range addrs {
		fmt.Fprintln(w, a)
	}
	return nil
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
	// Listening before "serving" is logged: a client that waits for it finds the ports.
	hl, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
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
	// The streams' cadence: a numbered message every 100 ms.
	const every = 100 * time.Millisecond
	errs := make(chan error, 2)
	servers := 1
	switch mode {
	case "drain":
		d := drain.New(srv, drain.Options{Logger: log})
		mux.Handle("/readyz", d.Readiness())
		mux.Handle("/healthz", d.Liveness())
		handleStream(mux, "ws", func(w http.ResponseWriter, r *http.Request) {
			c, ctx, err := wsdrain.Accept(d, w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			sendNumbered(ctx, c.Conn, firstNumber(r), every)
		})
		handleStream(mux, "events", func(w http.ResponseWriter, r *http.Request) {
			es, err := d.EventStream(w)
			if err != nil {
				return
			}
			tick := time.NewTicker(every)
			defer tick.Stop()
			for i := firstNumber(r); ; i++ {
				if es.Send(strconv.Itoa(i), "", strconv.Itoa(i)) != nil {
					es.Done()
					return
				}
				select {
				case <-es.Leave():
					es.End(500 * time.Millisecond)
					return
				case <-r.Context().Done():
					es.Done()
					return
				case <-tick.C:
				}
			}
		})
		if gl != nil {
			servers++
			gs := grpcdrain.NewServer(grpcdrain.Options{})
			go func() { errs <- drain.New(nil, drain.Options{Logger: log}).Run(context.Background(), gs.On(gl)) }()
		}
		log.Info("serving", "addr", addr, "grpc", grpcAddr, "mode", mode, "delay", d.Delay(), "timeout", d.Timeout())
		go func() { errs <- d.Serve(context.Background(), hl) }()
	case "plain":
		mux.HandleFunc("/readyz", ok)
		mux.HandleFunc("/healthz", ok)
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		// What most services do with streams: nothing. A WebSocket dies with the
		// process; an event stream's handler ends with its request's context, which
		// ends at SIGTERM (else Shutdown would wait for it until the grace period).
		srv.BaseContext = func(net.Listener) context.Context { return ctx }
		handleStream(mux, "ws", func(w http.ResponseWriter, r *http.Request) {
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			sendNumbered(context.WithoutCancel(r.Context()), c, firstNumber(r), every)
		})
		handleStream(mux, "events", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			rc := http.NewResponseController(w)
			tick := time.NewTicker(every)
			defer tick.Stop()
			for i := firstNumber(r); ; i++ {
				if _, err := fmt.Fprintf(w, "id: %d\ndata: %d\n\n", i, i); err != nil || rc.Flush() != nil {
					return
				}
				select {
				case <-r.Context().Done():
					return
				case <-tick.C:
				}
			}
		})
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
			if err := srv.Serve(hl); !errors.Is(err, http.ErrServerClosed) {
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

// handleStream serves a stream at /NAME and under one prefix, /PREFIX/NAME: an ingress
// that routes /NAMESPACE/ to the Service passes the path on as it is.
func handleStream(mux *http.ServeMux, name string, h http.HandlerFunc) {
	mux.HandleFunc("/"+name, h)
	mux.HandleFunc("/{prefix}/"+name, h)
}

// firstNumber is the first message number a stream sends: ?from=N, or after an event
// stream's Last-Event-ID: the replay from where a client left off.
func firstNumber(r *http.Request) int {
	if n, err := strconv.Atoi(r.URL.Query().Get("from")); err == nil && n >= 0 {
		return n
	}
	if n, err := strconv.Atoi(r.Header.Get("Last-Event-ID")); err == nil && n >= 0 {
		return n + 1
	}
	return 0
}

// sendNumbered writes from, from+1, ... every interval until a write fails or ctx ends.
func sendNumbered(ctx context.Context, c *websocket.Conn, from int, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := from; ; i++ {
		if c.Write(ctx, websocket.MessageText, []byte(strconv.Itoa(i))) != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
