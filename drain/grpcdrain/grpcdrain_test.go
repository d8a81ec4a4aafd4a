package grpcdrain

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/nap-k8s/nap/drain"
)

// backend is a Server on a loopback port that counts the calls it answered and, for a
// call with metadata "slow", takes that long.
type backend struct {
	*Server
	l       net.Listener
	answers atomic.Int64
}

func newBackend(t *testing.T) *backend { return newBackendWith(t, Options{}) }

// newBackendWith is newBackend with opts (their ServerOptions are the backend's own).
func newBackendWith(t *testing.T, opts Options) *backend {
	t.Helper()
	b := &backend{}
	opts.ServerOptions = []grpc.ServerOption{grpc.UnaryInterceptor(
		func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("slow")) == 1 {
				d, _ := time.ParseDuration(md.Get("slow")[0])
				time.Sleep(d)
			}
			b.answers.Add(1)
			return next(ctx, req)
		})}
	b.Server = NewServer(opts)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.l = l
	return b
}

func dial(t *testing.T, target string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(target, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func check(ctx context.Context, cc *grpc.ClientConn) (healthpb.HealthCheckResponse_ServingStatus, error) {
	r, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return 0, err
	}
	return r.Status, nil
}

// A drained server's clients, balanced over it and another backend (a Service's two
// pods, as a client-side balancer sees them), lose no RPC: during the delay the server
// reports NOT_SERVING and still answers; GracefulStop's GOAWAY moves them to the other
// backend; an RPC in flight at that moment finishes.
func TestDrainLosesNoRPC(t *testing.T) {
	a, b := newBackend(t), newBackend(t)
	go b.On(b.l).Serve()
	t.Cleanup(b.GRPC().Stop)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const delay, timeout = 500 * time.Millisecond, 5 * time.Second
	d := drain.New(nil, drain.Options{Delay: delay, Timeout: timeout})
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx, a.On(a.l)) }()

	r := manual.NewBuilderWithScheme("pods")
	r.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: a.l.Addr().String()}, {Addr: b.l.Addr().String()}}})
	cc := dial(t, "pods:///shop", grpc.WithResolvers(r), grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	direct := dial(t, a.l.Addr().String())
	if st, err := check(context.Background(), direct); err != nil || st != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("before the drain: %v %v, want SERVING", st, err)
	}

	l := startLoad(cc)
	time.Sleep(300 * time.Millisecond)
	if a.answers.Load() == 0 {
		t.Fatal("the balancer sent nothing to the server to drain")
	}

	// A slow call in flight on the drained server when GracefulStop begins.
	slow := make(chan error, 1)
	cancel() // the drain begins
	time.Sleep(100 * time.Millisecond)
	if st, err := check(context.Background(), direct); err != nil || st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("during the delay: %v %v, want NOT_SERVING and an answer", st, err)
	}
	before := a.answers.Load()
	go func() {
		_, err := check(metadata.AppendToOutgoingContext(context.Background(), "slow", "800ms"), direct)
		slow <- err
	}()
	time.Sleep(delay)
	if a.answers.Load() == before {
		t.Error("the server answered nothing during the delay")
	}
	if err := <-slow; err != nil {
		t.Errorf("a call in flight at GracefulStop: %v, want it answered", err)
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run: %v, want a clean drain", err)
		}
	case <-time.After(timeout):
		t.Fatal("Run did not return")
	}
	afterStop := b.answers.Load()
	time.Sleep(300 * time.Millisecond)
	l.stop()
	if b.answers.Load() == afterStop {
		t.Error("the other backend answered nothing after the drained server stopped")
	}
	if l.failed.Load() != 0 {
		t.Errorf("%d of %d calls failed across the drain (first: %v), want none", l.failed.Load(), l.sent.Load(), l.firstErr.Load())
	}
	t.Logf("%d calls, %d failed; the drained server answered %d, the other %d", l.sent.Load(), l.failed.Load(), a.answers.Load(), b.answers.Load())
}

// The same load against a server stopped bare (grpc.Server.Stop, what a process that
// exits on SIGTERM does) fails the calls it was answering: what the drain is for.
func TestBareStopFailsRPCs(t *testing.T) {
	a, b := newBackend(t), newBackend(t)
	for _, x := range []*backend{a, b} {
		go x.GRPC().Serve(x.l)
		t.Cleanup(x.GRPC().Stop)
	}
	r := manual.NewBuilderWithScheme("pods")
	r.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: a.l.Addr().String()}, {Addr: b.l.Addr().String()}}})
	cc := dial(t, "pods:///shop", grpc.WithResolvers(r), grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	l := startLoad(cc)
	time.Sleep(300 * time.Millisecond)
	a.GRPC().Stop()
	time.Sleep(300 * time.Millisecond)
	l.stop()
	if l.failed.Load() == 0 {
		t.Errorf("no call of %d failed when a server stopped bare under load", l.sent.Load())
	}
	t.Logf("%d calls, %d failed (first: %v)", l.sent.Load(), l.failed.Load(), l.firstErr.Load())
}

// load is an open loop of health checks through a balancer: 200 a second, each taking
// the server 20 ms (so that some are always in flight), at most 600 of them.
type load struct {
	failed, sent atomic.Int64
	firstErr     atomic.Value
	wg           sync.WaitGroup
	done         chan struct{}
	ended        chan struct{}
}

func startLoad(cc *grpc.ClientConn) *load {
	l := &load{done: make(chan struct{}), ended: make(chan struct{})}
	go func() {
		defer close(l.ended)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for range 600 {
			select {
			case <-l.done:
				return
			case <-tick.C:
			}
			l.wg.Add(1)
			l.sent.Add(1)
			go func() {
				defer l.wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				if _, err := check(metadata.AppendToOutgoingContext(ctx, "slow", "20ms"), cc); err != nil {
					l.failed.Add(1)
					l.firstErr.CompareAndSwap(nil, err.Error())
				}
			}()
		}
	}()
	return l
}

// stop ends the loop and waits for its calls.
func (l *load) stop() {
	close(l.done)
	<-l.ended
	l.wg.Wait()
}

// A stream whose client never ends it (a health Watch) holds GracefulStop; at the
// timeout the drain stops the server and counts it cut off.
func TestDrainCutsOffAtTimeout(t *testing.T) {
	a := newBackend(t)
	ctx, cancel := context.WithCancel(context.Background())
	d := drain.New(nil, drain.Options{Delay: 100 * time.Millisecond, Timeout: 600 * time.Millisecond})
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx, a.On(a.l)) }()
	cc := dial(t, a.l.Addr().String())
	w, err := healthpb.NewHealthClient(cc).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Recv(); err != nil {
		t.Fatal(err)
	}
	if a.InFlight() != 1 {
		t.Fatalf("%d RPCs in flight, want the stream", a.InFlight())
	}
	start := time.Now()
	cancel()
	var cut *drain.CutOffError
	select {
	case err := <-ran:
		if !errors.As(err, &cut) || cut.Requests != 1 || cut.Forced {
			t.Fatalf("Run: %v, want a timeout cutting off 1 RPC", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return: GracefulStop held by the stream")
	}
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("cut off after %v, before the timeout", took)
	}
	// The stream saw NOT_SERVING, then its end.
	var statuses []string
	for {
		r, err := w.Recv()
		if err != nil {
			break
		}
		statuses = append(statuses, r.Status.String())
	}
	if fmt.Sprint(statuses) != "[NOT_SERVING]" {
		t.Errorf("the watch saw %v after the first SERVING, want [NOT_SERVING]", statuses)
	}
}
