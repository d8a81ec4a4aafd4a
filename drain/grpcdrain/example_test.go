package grpcdrain_test

import (
	"context"
	"log"
	"net"
	"time"

	"github.com/nap-k8s/nap/drain"
	"github.com/nap-k8s/nap/drain/grpcdrain"
)

// A gRPC service drained on SIGTERM: NOT_SERVING to the readiness probe (readinessProbe:
// grpc: {port: 9090}) at once, serving for 5 s, then GracefulStop within the 20 s.
func Example() {
	gs := grpcdrain.NewServer(grpcdrain.Options{MaxConnectionAge: 5 * time.Minute})
	// pb.RegisterShopServer(gs.GRPC(), shop)
	l, err := net.Listen("tcp", ":9090")
	if err != nil {
		log.Fatal(err)
	}
	d := drain.New(nil, drain.Options{Delay: 5 * time.Second, Timeout: 20 * time.Second})
	if err := d.Run(context.Background(), gs.On(l)); err != nil {
		log.Fatal(err) // a *drain.CutOffError counts the RPCs cut off
	}
}
