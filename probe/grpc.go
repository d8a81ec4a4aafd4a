package probe

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// newGRPCSender probes grpc://HOST:PORT[/SERVICE] with unary calls of the standard
// health service's Check (grpc.health.v1; SERVICE is the service checked, default ""):
// an answer of any serving status is a success, as the call went through; what a
// client of the server would see otherwise is classified like HTTP's failures. New
// opens a connection per call; Reuse sends every call over one connection (HTTP/2
// multiplexes them), as a gRPC client does. gRPC's transparent retry of a call the
// server never saw (a GOAWAY's race) stays on, as in every gRPC client; Options.Retry
// turns on the retries a service config may ask for.
//
// With Options.DNS, HOST is a name that gRPC's own DNS resolver asks that server for
// (the target dns://DNS/HOST:PORT): a client of a headless Service. Reuse is then
// gRPC's client-side balancing, round_robin over a connection to each address of the
// answer, kept until the server closes it (a GOAWAY), the name resolved again only
// then and at most every 30 s (grpc-go's default); New resolves at each call and
// connects to the answer's first address that takes the connection.
func newGRPCSender(u *url.URL, opts Options) (func(Mode) sentResult, func(), error) {
	if u.Host == "" {
		return nil, nil, errors.New("URL " + u.String() + ": want grpc://HOST:PORT")
	}
	dial := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithNoProxy()}
	if !opts.Retry {
		dial = append(dial, grpc.WithDisableRetry())
	}
	if opts.Host != "" {
		dial = append(dial, grpc.WithAuthority(opts.Host))
	}
	target, sharedDial := u.Host, dial
	if opts.DNS != "" {
		target = "dns://" + opts.DNS + "/" + u.Host
		// No service config from DNS (TXT records): the balancing is the client's.
		dial = append(dial, grpc.WithDisableServiceConfig())
		sharedDial = append(dial[:len(dial):len(dial)], grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`))
	}
	req := &healthpb.HealthCheckRequest{Service: strings.TrimPrefix(u.Path, "/")}
	shared, err := grpc.NewClient(target, sharedDial...)
	if err != nil {
		return nil, nil, err
	}
	call := func(cc *grpc.ClientConn) sentResult {
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
		defer cancel()
		var p peer.Peer // the call's connection, when it got one
		_, err := healthpb.NewHealthClient(cc).Check(ctx, req, grpc.Peer(&p))
		r := sentResult{sent: sent}
		if p.LocalAddr != nil {
			r.Local = p.LocalAddr.String()
		}
		r.Latency = time.Since(sent)
		r.Kind, r.Code = classifyRPC(err)
		if err != nil {
			r.Err = err.Error()
		}
		return r
	}
	send := func(m Mode) sentResult {
		if m == Reuse {
			return call(shared)
		}
		// The connection's client end as soon as TCP connects: a call that fails later,
		// its HTTP/2 handshake unanswered ("while waiting for connections to become
		// ready"), has no peer, and this port is what finds it in connection tracking.
		var mu sync.Mutex
		var local string
		dialer := grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
			if err == nil {
				mu.Lock()
				local = c.LocalAddr().String()
				mu.Unlock()
			}
			return c, err
		})
		cc, err := grpc.NewClient(target, append(dial[:len(dial):len(dial)], dialer)...) // a copy: calls run concurrently
		if err != nil {
			return sentResult{Result: Result{Kind: Other, Err: err.Error()}, sent: time.Now()}
		}
		defer cc.Close()
		r := call(cc)
		if r.Local == "" {
			mu.Lock()
			r.Local = local
			mu.Unlock()
		}
		return r
	}
	return send, func() { shared.Close() }, nil
}

// classifyRPC is a call's kind, and its gRPC status code when the kind is Status (a
// status other than OK that says more than the connection's failure).
func classifyRPC(err error) (Kind, int) {
	if err == nil {
		return OK, 0
	}
	st := status.Convert(err)
	msg := st.Message()
	switch st.Code() {
	case codes.DeadlineExceeded:
		return Timeout, 0
	case codes.Unavailable:
		switch {
		case strings.Contains(msg, "connection refused"):
			return Refused, 0
		case strings.Contains(msg, "connection reset"), strings.Contains(msg, "broken pipe"):
			return Reset, 0
		case strings.Contains(msg, "EOF"):
			return EOF, 0
		case strings.Contains(msg, "timeout"):
			return Timeout, 0
		}
	}
	return Status, int(st.Code())
}
