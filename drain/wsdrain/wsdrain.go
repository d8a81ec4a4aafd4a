package wsdrain

import (
	"bufio"
	"context"
	"net"
	"net/http"

	"github.com/coder/websocket"

	"github.com/nap-k8s/nap/drain"
)

// Reason is the close reason sent with 1001.
const Reason = "server shutting down"

// Conn is an accepted WebSocket registered with a Drainer. Close or CloseNow it when
// done (defer c.CloseNow()): that ends it for the drain too.
type Conn struct {
	*websocket.Conn
	cancel context.CancelFunc
}

// Close closes with a status and reason, as websocket.Conn.Close does.
func (c *Conn) Close(code websocket.StatusCode, reason string) error {
	defer c.cancel()
	return c.Conn.Close(code, reason)
}

// CloseNow closes at once, as websocket.Conn.CloseNow does.
func (c *Conn) CloseNow() error {
	defer c.cancel()
	return c.Conn.CloseNow()
}

// Accept accepts a WebSocket as websocket.Accept does and registers it with d. ctx ends
// when the connection is closed, by the handler or by the drain; use it for Read and
// Write, which also fail once the client has closed.
func Accept(d *drain.Drainer, w http.ResponseWriter, r *http.Request, opts *websocket.AcceptOptions) (*Conn, context.Context, error) {
	rec := &hijackRecorder{ResponseWriter: w}
	ws, err := websocket.Accept(rec, r, opts)
	if err != nil {
		return nil, nil, err
	}
	// The request's context ends with the handler, not with the hijacked connection.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &Conn{Conn: ws, cancel: cancel}
	// At the deadline the TCP connection itself: the library's CloseNow would wait for
	// a close handshake in progress (up to 5 s).
	s := d.Stream(func() { rec.conn.Close() })
	go func() {
		defer s.Done()
		select {
		case <-s.Leave():
			// 1001 and the close handshake (the library bounds it at 5 s); the
			// handler's Read or Write then fails and it returns.
			ws.Close(websocket.StatusGoingAway, Reason)
			cancel()
		case <-ctx.Done():
		}
	}()
	return c, ctx, nil
}

// hijackRecorder keeps the connection the WebSocket library hijacks.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = c
	return c, brw, err
}

func (h *hijackRecorder) Unwrap() http.ResponseWriter { return h.ResponseWriter }
