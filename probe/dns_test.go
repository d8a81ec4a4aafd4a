package probe

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// dnsServer answers A queries for name with addr on a UDP socket of its own on
// loopback, and counts them; any other name gets NXDOMAIN.
func dnsServer(t *testing.T, name string, addr [4]byte) (string, *atomic.Int64) {
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
				r.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: qu.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 30},
					Body: &dnsmessage.AResource{A: addr}}}
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
