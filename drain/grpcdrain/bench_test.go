package grpcdrain

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// The cost per RPC over loopback (a health Check on one connection): a bare
// grpc.Server vs a Server, whose interceptors count what is in flight.
func BenchmarkRPCBare(b *testing.B) {
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	benchRPC(b, s)
}

func BenchmarkRPCDrain(b *testing.B) { benchRPC(b, NewServer(Options{}).GRPC()) }

func benchRPC(b *testing.B, s *grpc.Server) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(l)
	defer s.Stop()
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	c := healthpb.NewHealthClient(cc)
	req := &healthpb.HealthCheckRequest{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Check(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
