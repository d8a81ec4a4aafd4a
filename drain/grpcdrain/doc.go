// Package grpcdrain drains a gRPC server (google.golang.org/grpc) the way package drain
// drains HTTP, with the same Drainer:
//
//	gs := grpcdrain.NewServer(grpcdrain.Options{})
//	pb.RegisterShopServer(gs.GRPC(), shop)
//	l, _ := net.Listen("tcp", ":9090")
//	err := drain.New(nil, drain.Options{Delay: 5 * time.Second}).Run(ctx, gs.On(l))
//
// On the first signal the standard health service (grpc.health.v1, registered by
// NewServer) reports NOT_SERVING for every service, so a Kubernetes gRPC readiness probe
// takes the pod out of its Services and clients that check health move away; the server
// keeps serving for the delay; then GracefulStop sends every connection a GOAWAY, so
// clients open new RPCs on their other backends without failing one, and waits for the
// RPCs in flight; what is still running when the timeout ends (a stream whose client
// never closes it) is stopped, and the drain's CutOffError counts those RPCs.
//
// Options.MaxConnectionAge spreads load: a client keeps its connection, and so its pod,
// until the server ends it; a maximum age makes clients reconnect, and balance, every so
// often. A GOAWAY of either kind costs a client no RPC.
package grpcdrain
