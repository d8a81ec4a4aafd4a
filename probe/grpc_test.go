package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
)

// grpc:// probes a gRPC server's health service over a connection per call and over a
// shared one: every call of a serving server succeeds (NOT_SERVING too: the call went
// through); once it is gone, calls on new connections are refused, and a service the
// server does not know is a status failure with its code.
func TestGRPC(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	h := health.NewServer()
	healthpb.RegisterHealthServer(srv, h)
	go srv.Serve(l)
	defer srv.Stop()
	url := "grpc://" + l.Addr().String()
	run := func(url string, d time.Duration) map[Mode]*Counts {
		by := map[Mode]*Counts{New: {}, Reuse: {}}
		if err := Run(context.Background(), Options{URL: url, Rate: 200, Duration: d, Timeout: time.Second}, func(r Result) { by[r.Mode].add(r) }); err != nil {
			t.Fatal(err)
		}
		return by
	}
	h.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	for m, c := range run(url, 500*time.Millisecond) {
		if c.Requests != 50 || c.Failed != 0 {
			t.Errorf("%s: %d calls, %d failed %v; want 50, none", m, c.Requests, c.Failed, c.ByKind)
		}
	}
	for m, c := range run(url+"/shop.Cart", 100*time.Millisecond) {
		if c.Failed != c.Requests || c.ByKind[Status] != c.Requests || c.ByStatus[5] != c.Requests { // NOT_FOUND
			t.Errorf("%s, an unknown service: %v %v, want every call a status failure, code 5", m, c.ByKind, c.ByStatus)
		}
	}
	srv.Stop()
	if c := run(url, 200*time.Millisecond)[New]; c.ByKind[Refused] != c.Requests {
		t.Errorf("new connections to a stopped server: %v, want every call refused", c.ByKind)
	}
}

// Options.Host names the server as an ingress that routes by host needs it: HTTP's Host
// header and gRPC's :authority, on new and reused connections alike; unset, the URL's.
func TestHost(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	saw := func(h string) {
		mu.Lock()
		seen[h]++
		mu.Unlock()
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { saw("http " + r.Host) }))
	defer hs.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		saw("grpc " + strings.Join(md.Get(":authority"), ","))
		return next(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(l)
	defer srv.Stop()
	for _, c := range []struct{ url, host, want string }{
		{hs.URL, "shop.example", "http shop.example"},
		{hs.URL, "", "http " + strings.TrimPrefix(hs.URL, "http://")},
		{"grpc://" + l.Addr().String(), "grpc.shop.example", "grpc grpc.shop.example"},
		{"grpc://" + l.Addr().String(), "", "grpc " + l.Addr().String()},
	} {
		clear(seen)
		if err := Run(context.Background(), Options{URL: c.url, Host: c.host, Rate: 100, Duration: 200 * time.Millisecond, Timeout: time.Second}, func(Result) {}); err != nil {
			t.Fatal(err)
		}
		if len(seen) != 1 || seen[c.want] != 20 {
			t.Errorf("%s with Host %q: the server saw %v; want %q 20 times", c.url, c.host, seen, c.want)
		}
	}
}

// A call's Local is its connection's end as the server saw it; a refused call has none.
func TestGRPCLocal(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var seen sync.Map
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		if p, ok := peer.FromContext(ctx); ok {
			seen.Store(p.Addr.String(), true)
		}
		return next(ctx, req)
	}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(l)
	defer srv.Stop()
	url := "grpc://" + l.Addr().String()
	var got []Result
	run := func() {
		got = nil
		if err := Run(context.Background(), Options{URL: url, Rate: 100, Duration: 100 * time.Millisecond, Timeout: time.Second}, func(r Result) { got = append(got, r) }); err != nil {
			t.Fatal(err)
		}
	}
	run()
	for _, r := range got {
		if _, ok := seen.Load(r.Local); r.Kind != OK || !ok {
			t.Errorf("%s: %s from %q, want OK from an address the server saw", r.Mode, r.Kind, r.Local)
		}
	}
	srv.Stop()
	run()
	for _, r := range got {
		if r.Mode == New && (r.Kind != Refused || r.Local != "") {
			t.Errorf("%s: %s from %q, want refused from no connection", r.Mode, r.Kind, r.Local)
		}
	}
}

// A call over a new connection that TCP connects but whose server never answers the
// HTTP/2 handshake (a listener nobody serves) times out, and its result still names the
// connection's client end: the port that finds it in the nodes' connection tracking.
func TestGRPCUnansweredHandshake(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan string, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c.RemoteAddr().String()
			defer c.Close() // held open, silent, until the listener closes
		}
	}()
	var got []Result
	if err := Run(context.Background(), Options{URL: "grpc://" + l.Addr().String(), Rate: 10, Duration: 100 * time.Millisecond, Timeout: 300 * time.Millisecond, Modes: []Mode{New}},
		func(r Result) { got = append(got, r) }); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("no call made")
	}
	clients := map[string]bool{}
	for range len(got) {
		select {
		case a := <-accepted:
			clients[a] = true
		case <-time.After(time.Second):
		}
	}
	for _, r := range got {
		if r.Kind != Timeout || !strings.Contains(r.Err, "waiting for connections to become ready") {
			t.Errorf("a call to a silent server: %s %q, want a timeout waiting for the connection", r.Kind, r.Err)
		}
		if !clients[r.Local] {
			t.Errorf("a call's client end %q, want one of the connections the server accepted %v", r.Local, clients)
		}
	}
}
