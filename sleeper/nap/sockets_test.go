package nap

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/nap-k8s/nap/internal/testenv"
)

// diagMsg is one message of a dump as the kernel writes it: a socket in state on port
// (host order), with INET_DIAG_SHUTDOWN first and then, when last >= 0, INET_DIAG_INFO
// whose tcpi_last_data_recv is last.
func diagMsg(state byte, port uint16, last int64) []byte {
	m := make([]byte, nlmsgHdrLen+inetDiagMsgLen)
	m[nlmsgHdrLen] = afInet6
	m[nlmsgHdrLen+diagMsgState] = state
	binary.BigEndian.PutUint16(m[nlmsgHdrLen+diagMsgSport:], port)
	m = append(m, 5, 0, 8, 0, 0, 0, 0, 0) // INET_DIAG_SHUTDOWN, 1 byte, padded
	if last >= 0 {
		info := make([]byte, rtaHdrLen+232)
		binary.LittleEndian.PutUint16(info, uint16(len(info)))
		binary.LittleEndian.PutUint16(info[2:], inetDiagInfo)
		binary.LittleEndian.PutUint32(info[rtaHdrLen+tcpInfoLastDataRcv:], uint32(last))
		m = append(m, info...)
	}
	binary.LittleEndian.PutUint32(m, uint32(len(m)))
	binary.LittleEndian.PutUint16(m[4:], tcpDiagGetSock)
	return m
}

func nlmsg(typ uint16, payload ...byte) []byte {
	m := make([]byte, nlmsgHdrLen, nlmsgHdrLen+len(payload))
	m = append(m, payload...)
	binary.LittleEndian.PutUint32(m, uint32(len(m)))
	binary.LittleEndian.PutUint16(m[4:], typ)
	return m
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

var (
	within = ActiveWithin.Milliseconds()
	done   = nlmsg(nlmsgDone, 0, 0, 0, 0)
)

func TestSocketsRead(t *testing.T) {
	listen := diagMsg(tcpListen, 8080, 0)
	tests := []struct {
		name     string
		datagram []byte
		done, ok bool
		active   uint64
	}{
		{name: "empty", datagram: nil, ok: true},
		{name: "the end", datagram: done, done: true, ok: true},
		{name: "a listener alone", datagram: cat(listen, done), done: true, ok: true},
		{name: "inbound, data just now", datagram: cat(listen, diagMsg(tcpEstablished, 8080, 0)), ok: true, active: 1},
		{name: "inbound, data just within", datagram: cat(listen, diagMsg(tcpEstablished, 8080, within-1)), ok: true, active: 1},
		{name: "inbound, idle", datagram: cat(listen, diagMsg(tcpEstablished, 8080, within)), ok: true},
		{name: "inbound, idle for long", datagram: cat(listen, diagMsg(tcpEstablished, 8080, 1<<32-1)), ok: true},
		{name: "outbound: no listener on its port", datagram: cat(listen, diagMsg(tcpEstablished, 8081, 0)), ok: true},
		{name: "same low byte, other port", datagram: cat(listen, diagMsg(tcpEstablished, 8080+256, 0)), ok: true},
		{name: "listener after it: not yet known", datagram: cat(diagMsg(tcpEstablished, 8080, 0), listen), ok: true},
		{name: "several", datagram: cat(listen, diagMsg(tcpListen, 443, 0), diagMsg(tcpEstablished, 8080, 3), diagMsg(tcpEstablished, 443, 150), diagMsg(tcpEstablished, 443, 5000), diagMsg(tcpEstablished, 40000, 1), done), done: true, ok: true, active: 2},
		{name: "other states skipped", datagram: cat(listen, diagMsg(8, 8080, 0) /* CLOSE_WAIT */, diagMsg(6, 8080, -1) /* TIME_WAIT */), ok: true},
		{name: "outbound without its info: not read", datagram: cat(listen, diagMsg(tcpEstablished, 9, -1)), ok: true},
		{name: "after the end, nothing is read", datagram: cat(listen, done, diagMsg(tcpEstablished, 8080, 0)), done: true, ok: true},
		{name: "other message types skipped", datagram: cat(nlmsg(1), listen, diagMsg(tcpEstablished, 8080, 0)), ok: true, active: 1},
		{name: "an error: refused", datagram: cat(listen, nlmsg(nlmsgError, 0xf3, 0xff, 0xff, 0xff)), ok: false},
		{name: "inbound without its info", datagram: cat(listen, diagMsg(tcpEstablished, 8080, -1)), ok: false},
		{name: "a short header", datagram: cat(listen, []byte{1, 2, 3}), ok: false},
		{name: "a length below the header", datagram: func() []byte { m := nlmsg(1); m[0] = 15; return m }(), ok: false},
		{name: "a length past the datagram", datagram: func() []byte { m := nlmsg(1, 0, 0, 0, 0); m[0] = 24; return m }(), ok: false},
		{name: "a socket message too short", datagram: nlmsg(tcpDiagGetSock, make([]byte, inetDiagMsgLen-1)...), ok: false},
		{name: "an attribute past its message", datagram: func() []byte {
			m := diagMsg(tcpEstablished, 8080, 0)
			binary.LittleEndian.PutUint16(m[nlmsgHdrLen+inetDiagMsgLen:], 200)
			return cat(listen, m)
		}(), ok: false},
		{name: "an attribute shorter than its header", datagram: func() []byte {
			m := diagMsg(tcpEstablished, 8080, 0)
			binary.LittleEndian.PutUint16(m[nlmsgHdrLen+inetDiagMsgLen:], 3)
			return cat(listen, m)
		}(), ok: false},
		{name: "an info too short for the field", datagram: func() []byte {
			m := diagMsg(tcpEstablished, 8080, 0)
			info := nlmsgHdrLen + inetDiagMsgLen + 8
			binary.LittleEndian.PutUint16(m[info:], rtaHdrLen+tcpInfoLastDataRcv+3)
			return cat(listen, m[:info+rtaHdrLen+tcpInfoLastDataRcv+4])
		}(), ok: false},
		{name: "a last message unaligned", datagram: func() []byte {
			m := nlmsg(1, 7)
			return cat(listen, m)
		}(), ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Sockets
			done, ok := s.Read(tc.datagram)
			if done != tc.done || ok != tc.ok || (ok && s.Active != tc.active) {
				t.Errorf("Read = done %v, ok %v, active %d; want %v, %v, %d", done, ok, s.Active, tc.done, tc.ok, tc.active)
			}
		})
	}
}

// TestSocketsAcrossDatagrams: the listening ports learned from one datagram (a dump,
// or an earlier one) hold for the next.
func TestSocketsAcrossDatagrams(t *testing.T) {
	var s Sockets
	for _, d := range [][]byte{cat(diagMsg(tcpListen, 80, 0), done), cat(diagMsg(tcpListen, 65535, 0), done), cat(diagMsg(tcpEstablished, 80, 0), diagMsg(tcpEstablished, 65535, 10)), done} {
		if _, ok := s.Read(d); !ok {
			t.Fatalf("Read(%x): not ok", d)
		}
	}
	if s.Active != 2 {
		t.Errorf("active %d, want 2", s.Active)
	}
}

// TestDiagRequests: the two requests, byte for byte (struct nlmsghdr, then struct
// inet_diag_req: family, address lengths, the INFO extension, the socket id, states, dbs).
func TestDiagRequests(t *testing.T) {
	zero := func(n int) string { return strings.Repeat("00", n) }
	for i, states := range []string{"00040000", "02000000"} {
		want := "4c000000" + "1200" + "0103" + zero(8) + "000000" + "02" + zero(48) + states + zero(4)
		if got := hex.EncodeToString(DiagRequests[i][:]); got != want {
			t.Errorf("request %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func FuzzSocketsRead(f *testing.F) {
	f.Add(cat(diagMsg(tcpListen, 8080, 0), diagMsg(tcpEstablished, 8080, 0), done))
	f.Add(cat(diagMsg(tcpListen, 1, 0), diagMsg(tcpEstablished, 1, 1000), nlmsg(1, 9, 9)))
	f.Add(nlmsg(nlmsgError, 1, 2, 3, 4))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Sockets
		done, ok := s.Read(b)
		if done && !ok {
			t.Fatal("done but not ok")
		}
		// Each counted socket is a whole message of its own.
		if max := uint64(len(b) / (nlmsgHdrLen + inetDiagMsgLen + rtaHdrLen + tcpInfoLastDataRcv + 4)); s.Active > max {
			t.Fatalf("active %d in %d bytes", s.Active, len(b))
		}
	})
}

// inNetns runs f on a goroutine whose thread is in a new network namespace, its
// loopback up: the sockets f makes (and ReadSockets there) are that namespace's, as a
// pod's are its own. The thread is never reused: the goroutine ends locked to it.
func inNetns(t testing.TB, f func()) {
	t.Helper()
	testenv.RequireRoot(t)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		if err := loopbackUp(); err != nil {
			errc <- err
			return
		}
		f()
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// loopbackUp sets lo up in the thread's network namespace (SIOCSIFFLAGS).
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr [40]byte
	copy(ifr[:], "lo")
	binary.NativeEndian.PutUint16(ifr[16:], syscall.IFF_UP|syscall.IFF_RUNNING)
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr[0]))); e != 0 {
		return fmt.Errorf("lo up: %w", e)
	}
	return nil
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
			n, ok := ReadSockets()
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
		// A new connection counts as having received data at its start.
		if n := read("three new connections"); n != 3 {
			t.Errorf("three connections just accepted: %d active, want 3", n)
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
		// Each way in, one request: active for ActiveWithin, then idle again.
		for i, c := range clients {
			if _, err := c.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(10 * time.Millisecond)
			if n := read("a request"); n != 1 {
				t.Errorf("client %d: a request 10 ms ago: %d active, want 1", i, n)
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
		fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, netlinkSockDiag)
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
		var s Sockets
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
					if _, ok := ReadSockets(); !ok {
						b.Error("not ok")
						return
					}
				}
			})
		})
	}
}
