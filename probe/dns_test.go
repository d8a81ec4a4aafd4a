package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// dnsServer answers A queries for name with addrs on a UDP socket of its own on
// loopback, and counts them; any other name gets NXDOMAIN.
func dnsServer(t *testing.T, name string, addrs ...[4]byte) (string, *atomic.Int64) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	var asked atomic.Int64
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var q dnsmessage.Message
			if q.Unpack(buf[:n]) != nil || len(q.Questions) != 1 {
				continue
			}
			r := dnsmessage.Message{Header: dnsmessage.Header{ID: q.ID, Response: true, Authoritative: true}, Questions: q.Questions}
			switch qu := q.Questions[0]; {
			case !strings.EqualFold(qu.Name.String(), name):
				r.RCode = dnsmessage.RCodeNameError
			case qu.Type == dnsmessage.TypeA:
				asked.Add(1)
				for _, a := range addrs {
					r.Answers = append(r.Answers, dnsmessage.Resource{Header: dnsmessage.ResourceHeader{Name: qu.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 30},
						Body: &dnsmessage.AResource{A: a}})
				}
			}
			if b, err := r.Pack(); err == nil {
				pc.WriteTo(b, from)
			}
		}
	}()
	return pc.LocalAddr().String(), &asked
}

// TestDNS: with Options.DNS, the probe resolves the URL's host at that server, once
// per new connection (Go's resolver keeps no cache): a client of a headless Service
// that resolves per connection.
func TestDNS(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	dns, asked := dnsServer(t, "app.nap.test.", [4]byte{127, 0, 0, 1})
	var ok, results int
	err := Run(context.Background(), Options{URL: "http://app.nap.test:" + port + "/", Rate: 20, Duration: time.Second, Modes: []Mode{New}, DNS: dns},
		func(r Result) {
			results++
			if r.Kind == OK {
				ok++
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	if results < 10 || ok != results || asked.Load() < int64(results) {
		t.Errorf("%d of %d requests answered, %d A queries at %s: want every request answered and one query each", ok, results, asked.Load(), dns)
	}
	// A name the server does not know fails: nothing else is asked.
	if _, err := Dialer(time.Second, dns).DialContext(context.Background(), "tcp", "other.nap.test:"+port); err == nil {
		t.Error("a name the server does not know resolved")
	}
}

// With Options.DNS, grpc:// resolves its name at that server: over a shared connection
// as gRPC's client-side balancing does (round_robin over a connection to each address,
// name resolved once), over a connection per call at each call. A server that stops
// gracefully (GOAWAY) leaves the shared connection's calls to the other: none fails.
func TestGRPCDNS(t *testing.T) {
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l1.Addr().String())
	l2, err := net.Listen("tcp", "127.0.0.2:"+port)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := map[string]int{} // by server
	var servers []*grpc.Server
	for _, l := range []net.Listener{l1, l2} {
		addr := l.Addr().String()
		srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			mu.Lock()
			calls[addr]++
			mu.Unlock()
			return next(ctx, req)
		}))
		healthpb.RegisterHealthServer(srv, health.NewServer())
		go srv.Serve(l)
		defer srv.Stop()
		servers = append(servers, srv)
	}
	dns, asked := dnsServer(t, "app.nap.test.", [4]byte{127, 0, 0, 1}, [4]byte{127, 0, 0, 2})
	url := "grpc://app.nap.test:" + port
	run := func(m Mode, stop func()) (by Counts) {
		t.Helper()
		mu.Lock()
		clear(calls)
		mu.Unlock()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		err := Run(ctx, Options{URL: url, Rate: 100, Duration: time.Second, Timeout: time.Second, Modes: []Mode{m}, DNS: dns}, func(r Result) {
			by.add(r)
			if n++; n == 50 && stop != nil {
				stop()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return by
	}
	before := asked.Load()
	c := run(New, nil)
	mu.Lock()
	t.Logf("new: %d calls, %d A queries, by server %v", c.Requests, asked.Load()-before, calls)
	if c.Failed != 0 || asked.Load()-before < int64(c.Requests) || calls[l1.Addr().String()] != c.Requests {
		t.Errorf("a connection per call: %v, %d A queries, by server %v; want every call answered by the answer's first address, a query each", c.ByKind, asked.Load()-before, calls)
	}
	mu.Unlock()
	before = asked.Load()
	c = run(Reuse, func() { go servers[0].GracefulStop() })
	mu.Lock()
	t.Logf("shared: %d calls, %d A queries, by server %v", c.Requests, asked.Load()-before, calls)
	if c.Failed != 0 || calls[l1.Addr().String()] == 0 || calls[l2.Addr().String()] <= c.Requests/2 || asked.Load()-before > 2 {
		t.Errorf("round_robin, one server stopped halfway: %v, by server %v, %d A queries; want none failed, both served, the second the rest, the name resolved once", c.ByKind, calls, asked.Load()-before)
	}
	mu.Unlock()
}
