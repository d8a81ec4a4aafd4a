// Package wsdrain drains WebSockets (github.com/coder/websocket) with package drain's
// Drainer. http.Server.Shutdown does not know hijacked connections: without this, a
// WebSocket open when the pod stops is cut without a close frame, and its client sees a
// broken connection (1006) instead of a reason to reconnect.
//
//	func chat(w http.ResponseWriter, r *http.Request) {
//		c, ctx, err := wsdrain.Accept(d, w, r, nil)
//		if err != nil {
//			return
//		}
//		for { ... c.Read(ctx) / c.Write(ctx, ...) until ctx ends ... }
//	}
//
// When the drain asks streams to leave (shutdown begins, after the delay, each stream
// at its own moment within Options.StreamJitter), the connection is closed with 1001
// "going away", the close handshake done, and ctx ends; the client reconnects, through
// the Service, to a pod that is not stopping. At the drain's deadline a connection still
// open is closed at once and counted in CutOffError.Streams.
package wsdrain
