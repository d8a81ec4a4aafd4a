package nap

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/testenv"
)

// inNetns runs f in a network namespace of its own (testenv.InNewNetns): the sockets f
// makes, and ReadSockets there, are that namespace's, as a pod's are its own.
func inNetns(t testing.TB, f func()) {
	t.Helper()
	testenv.RequireRoot(t)
	if err := testenv.InNewNetns(func() error { f(); return nil }); err != nil {
		t.Fatal(err)
	}
}

// server accepts on l and reads every connection until it ends; the server's side of
// each connection comes out on conns.
func server(l net.Listener, conns chan<- net.Conn) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		conns <- c
		go func() {
			b := make([]byte, 512)
			for {
				if _, err := c.Read(b); err != nil {
					return
				}
			}
		}()
	}
}

// TestReadSocketsKernel holds the rule to a real kernel, on real sockets in a network
// namespace of the test's own: what counts as an inbound connection that received data,
// on IPv4, IPv6 and IPv4-mapped, and what does not (an idle pooled connection, the pod's
// own outbound connection while it receives, a listener).
func TestReadSocketsKernel(t *testing.T) {
	inNetns(t, func() {
		read := func(what string) uint64 {
			n, ok := ReadSockets(ActiveWithin)
			if !ok {
				t.Errorf("%s: ReadSockets not ok", what)
			}
			return n
		}
		if n := read("an empty namespace"); n != 0 {
			t.Errorf("an empty namespace: %d active", n)
		}
		conns := make(chan net.Conn, 16)
		var listeners []net.Listener
		for _, a := range [][2]string{{"tcp4", "127.0.0.1:0"}, {"tcp", ":0"} /* dual stack */, {"tcp6", "[::1]:0"}} {
			l, err := net.Listen(a[0], a[1])
			if err != nil {
				t.Errorf("listen %v: %v", a, err)
				return
			}
			defer l.Close()
			listeners = append(listeners, l)
			go server(l, conns)
		}
		port := func(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }
		dial := func(addr string) net.Conn {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Errorf("dial %s: %v", addr, err)
				return nil
			}
			<-conns // accepted
			return c
		}
		// One client per way in: IPv4, IPv4-mapped to the dual-stack listener, IPv6.
		clients := []net.Conn{
			dial(fmt.Sprintf("127.0.0.1:%d", port(listeners[0]))),
			dial(fmt.Sprintf("127.0.0.1:%d", port(listeners[1]))),
			dial(fmt.Sprintf("[::1]:%d", port(listeners[2]))),
		}
		for _, c := range clients {
			if c == nil {
				return
			}
			defer c.Close()
		}
		// A new connection has received no data yet: the count of new connections sees it,
		// the sockets do not (KeptSegs).
		if n := read("three new connections"); n != 0 {
			t.Errorf("three connections just accepted: %d active, want 0", n)
		}
		// The pod's own outbound connection: the server's side writes to the client's
		// (an ephemeral port no socket listens on) every 20 ms; the client's side
		// receives, the server's side does not.
		out, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port(listeners[0])))
		if err != nil {
			t.Error(err)
			return
		}
		defer out.Close()
		outServer := <-conns
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
					outServer.Write([]byte("event"))
				}
			}
		}()
		go func() {
			b := make([]byte, 512)
			for {
				if _, err := out.Read(b); err != nil {
					return
				}
			}
		}()
		// A client's TCP keepalive probes and the server's ACKs carry no data: an idle
		// pooled connection that keeps itself alive stays idle. (The probes, one a second
		// after a second, do reach the server: the namespace's InSegs rises by 2 a
		// second on such a connection alone.)
		kept, err := (&net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 9}}).Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port(listeners[1])))
		if err != nil {
			t.Error(err)
			return
		}
		defer kept.Close()
		<-conns
		time.Sleep(ActiveWithin + 150*time.Millisecond)
		for i := range 25 { // 2.5 s: 2 probes
			if n := read("idle"); n != 0 {
				t.Errorf("reading %d: idle inbound connections (one with keepalive probes every second), one outbound receiving: %d active, want 0", i, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Each way in, a first request (a new connection's, as a kubelet's probe: not
		// kept), then a second (kept): active for ActiveWithin, then idle again.
		for i, c := range clients {
			for j, want := range []uint64{0, 1} {
				if _, err := c.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(10 * time.Millisecond)
				if n := read("a request"); n != want {
					t.Errorf("client %d: request %d, 10 ms ago: %d active, want %d", i, j+1, n, want)
				}
			}
			time.Sleep(ActiveWithin + 100*time.Millisecond)
			if n := read("after a request"); n != 0 {
				t.Errorf("client %d: a request %v ago: %d active, want 0", i, ActiveWithin+110*time.Millisecond, n)
			}
		}
	})
}

// TestReadSocketsRequestRefused: a request the kernel refuses is answered with
// NLMSG_ERROR, which Read does not take for a dump.
func TestReadSocketsRequestRefused(t *testing.T) {
	inNetns(t, func() {
		fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, NetlinkSockDiag)
		if err != nil {
			t.Error(err)
			return
		}
		defer syscall.Close(fd)
		req := DiagRequests[0]
		req[4] = 99 // no such request: the kernel answers NLMSG_ERROR
		if _, err := syscall.Write(fd, req[:]); err != nil {
			t.Errorf("write: %v", err)
			return
		}
		buf := make([]byte, DiagRead)
		n, err := syscall.Read(fd, buf)
		if err != nil {
			t.Error(err)
			return
		}
		s := Sockets{Within: uint64(ActiveWithin.Milliseconds())}
		if _, ok := s.Read(buf[:n]); ok {
			t.Errorf("a refused request read as ok: %x", buf[:n])
		}
	})
}

// BenchmarkReadSockets is one reading in a namespace with one listener and n inbound
// connections, idle but for every tenth (docs/adaptive.md, "The request signal").
func BenchmarkReadSockets(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprint(n, " connections"), func(b *testing.B) {
			inNetns(b, func() {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Error(err)
					return
				}
				defer l.Close()
				conns := make(chan net.Conn, n)
				go server(l, conns)
				for i := range n {
					c, err := net.Dial("tcp", l.Addr().String())
					if err != nil {
						b.Error(err)
						return
					}
					defer c.Close()
					<-conns
					if i%10 == 0 {
						c.Write([]byte("x"))
					}
				}
				b.ResetTimer()
				for b.Loop() {
					if _, ok := ReadSockets(ActiveWithin); !ok {
						b.Error("not ok")
						return
					}
				}
			})
		})
	}
}
