package grpcdrain

import (
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// spreader stands for a Service's virtual IP: each new connection goes to one of the
// backends of the moment, in turn, as kube-proxy picks an endpoint per connection. It
// counts the connections it made.
type spreader struct {
	l     net.Listener
	mu    sync.Mutex
	to    []string
	next  int
	conns atomic.Int64
}

func newSpreader(t *testing.T, backends ...string) *spreader {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &spreader{l: l, to: backends}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			to := s.to[s.next%len(s.to)]
			s.next++
			s.mu.Unlock()
			s.conns.Add(1)
			go splice(c, to)
		}
	}()
	return s
}

// add makes backend one of the spreader's.
func (s *spreader) add(backend string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.to = append(s.to, backend)
}

func splice(c net.Conn, to string) {
	defer c.Close()
	b, err := net.Dial("tcp", to)
	if err != nil {
		return
	}
	defer b.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(b, c); done <- struct{}{} }()
	go func() { io.Copy(c, b); done <- struct{}{} }()
	<-done
}

// ageRun is what TestMaxConnectionAge measured with one maximum age.
type ageRun struct {
	age               time.Duration
	sent, failed      int64
	reconnects        int64
	newShare          float64 // of the calls in the last stretch, the new backend's
	p50, p99, slowest time.Duration
}

// measureAge runs ageClients clients, each on its own connection through a spreader,
// each calling every ageEvery, against backend A alone and, from ageJoin on, A and B (a
// new pod of the Service), until ageFor; the backends end connections at age (0:
// never).
func measureAge(t *testing.T, age time.Duration) ageRun {
	const (
		ageClients = 10
		ageEvery   = 50 * time.Millisecond // 200 calls a second in all
		ageJoin    = time.Second
		ageFrom    = 2500 * time.Millisecond // the stretch whose calls newShare counts
		ageFor     = 4 * time.Second
	)
	opts := Options{MaxConnectionAge: age}
	a, b := newBackendWith(t, opts), newBackendWith(t, opts)
	for _, x := range []*backend{a, b} {
		go x.GRPC().Serve(x.l)
		t.Cleanup(x.GRPC().Stop)
	}
	sp := newSpreader(t, a.l.Addr().String())
	r := ageRun{age: age}
	var mu sync.Mutex
	var took []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	var aAt, bAt int64
	for range ageClients {
		cc := dial(t, sp.l.Addr().String())
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(ageEvery)
			defer tick.Stop()
			for range int(ageFor / ageEvery) { // bounded in count
				<-tick.C
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				t0 := time.Now()
				_, err := check(ctx, cc)
				d := time.Since(t0)
				cancel()
				mu.Lock()
				r.sent++
				if err != nil {
					r.failed++
				} else {
					took = append(took, d)
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(ageJoin - time.Since(start))
	sp.add(b.l.Addr().String())
	time.Sleep(ageFrom - time.Since(start))
	aAt, bAt = a.answers.Load(), b.answers.Load()
	wg.Wait()
	da, db := a.answers.Load()-aAt, b.answers.Load()-bAt
	if da+db > 0 {
		r.newShare = float64(db) / float64(da+db)
	}
	r.reconnects = sp.conns.Load() - ageClients
	slices.Sort(took)
	if n := len(took); n > 0 {
		r.p50, r.p99, r.slowest = took[n/2], took[n*99/100], took[n-1]
	}
	return r
}

// TestMaxConnectionAge: what Options.MaxConnectionAge costs and buys. Ten clients call
// through a Service-like spreader; a second backend (a new pod) joins after 1 s. Without
// a maximum age no client ever reaches it; with 1 s, half the calls go to it within two
// ages, for a reconnect per client per age. No call fails either way (the GOAWAY of an
// aged connection moves its client without losing a call). The latencies are reported,
// not judged: this machine's steal moves them more than the reconnects do.
func TestMaxConnectionAge(t *testing.T) {
	never := measureAge(t, 0)
	aged := measureAge(t, time.Second)
	for _, r := range []ageRun{never, aged} {
		t.Logf("max age %v: %d calls, %d failed; %d reconnects; the new backend's share of the last 1.5 s %.0f%%; latency p50 %v, p99 %v, slowest %v",
			r.age, r.sent, r.failed, r.reconnects, 100*r.newShare, r.p50, r.p99, r.slowest)
		if r.failed > 0 {
			t.Errorf("max age %v: %d of %d calls failed", r.age, r.failed, r.sent)
		}
	}
	if never.newShare != 0 || never.reconnects != 0 {
		t.Errorf("no max age: the new backend got %.0f%% of the calls after %d reconnects; want none: clients keep their connections", 100*never.newShare, never.reconnects)
	}
	if aged.newShare < 0.25 || aged.reconnects < 10 {
		t.Errorf("max age 1s: the new backend got %.0f%% of the calls after %d reconnects; want at least 25%% after at least one reconnect per client", 100*aged.newShare, aged.reconnects)
	}
}
