package sleeper

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// The arm64 program's netlink calls, where qemu's stub stands in (serveSockets).
var armSocketPC, armClosePC = func() (uint64, uint64) {
	obj, err := Object("arm64")
	if err != nil {
		return 0, 0
	}
	return obj.Labels["diag_socket"], obj.Labels["diag_close"]
}()

// inNetns runs f for im in a network namespace of its own, its loopback up
// (testenv.InNewNetns): the processes f starts are in it, and so are the sockets f
// makes. An arm64 binary under qemu-user cannot open its netlink socket (qemu refuses
// NETLINK_SOCK_DIAG): f gets one opened in the namespace, for runWith to hand it, and
// nil for the others (and with refused).
func inNetns(im impl, refused bool, f func(sockets *os.File) error) error {
	return testenv.InNewNetns(func() error {
		if im.qemu == "" || refused {
			return f(nil)
		}
		fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, nap.NetlinkSockDiag)
		if err != nil {
			return fmt.Errorf("netlink socket: %w", err)
		}
		sockets := os.NewFile(uintptr(fd), "sock_diag")
		defer sockets.Close()
		return f(sockets)
	})
}

// every is the times from 0 to until, step apart.
func every(step, until time.Duration) []time.Duration {
	var ts []time.Duration
	for at := time.Duration(0); at <= until; at += step {
		ts = append(ts, at)
	}
	return ts
}

// requestCases: the request signal against real sockets in the run's own network
// namespace, where the test keeps a listener and one client connection to it, opened
// before nap starts, and sends requests over it at the times given (from nap's start).
// The run must end from lo to hi (plus the implementation's slack). Without --requests,
// every wait here ends after QUIET (the first cases, the negative control): lo above it
// is the proof that the request signal reads the requests.
var requestCases = []struct {
	name     string
	args     []string
	idle     time.Duration   // how long the connection has been idle when nap starts
	sends    []time.Duration // when the client sends a request over it
	outbound bool            // the pod's own connection: its port listens no more, the far side sends
	refused  bool            // no socket call: seccomp, or qemu-user without the stub
	signal   syscall.Signal
	after    time.Duration
	code     int
	stderr   string
	lo, hi   time.Duration
}{
	// The last request at 2.4 s: a new quiet window at a reading of the sockets within
	// ActiveWithin after it, QUIET from there.
	{name: "requests over a kept connection hold the wait", args: []string{"--quiet", "500ms", "--max", "10s", "--requests", "1s"},
		sends: every(200*time.Millisecond, 2400*time.Millisecond), lo: 2900 * time.Millisecond, hi: 2400*time.Millisecond + nap.ActiveWithin + 500*time.Millisecond},
	// The negative control: the same requests without --requests, and with WITHIN
	// below a millisecond, which turns it off too: the wait ends QUIET after its start.
	{name: "without --requests, requests do not hold it", args: []string{"--quiet", "500ms", "--max", "10s"},
		sends: every(200*time.Millisecond, 2400*time.Millisecond), lo: 500 * time.Millisecond, hi: 500 * time.Millisecond},
	{name: "WITHIN under a millisecond is off", args: []string{"--quiet", "500ms", "--max", "10s", "--requests", "999us"},
		sends: every(200*time.Millisecond, 2400*time.Millisecond), lo: 500 * time.Millisecond, hi: 500 * time.Millisecond},
	// WITHIN as given: 300 ms, sockets read every 500 ms and at the window's end; the
	// requests every 200 ms to 2.4 s, then idle.
	{name: "WITHIN as given", args: []string{"--quiet", "500ms", "--max", "10s", "--requests", "300ms"},
		sends: every(200*time.Millisecond, 2400*time.Millisecond), lo: 2400 * time.Millisecond, hi: 2400*time.Millisecond + 300*time.Millisecond + 500*time.Millisecond + 500*time.Millisecond},
	{name: "an idle kept connection does not", args: []string{"--quiet", "500ms", "--max", "5s", "--requests", "1s"},
		idle: nap.ActiveWithin + 200*time.Millisecond, lo: 500 * time.Millisecond, hi: 500 * time.Millisecond},
	// Background over a kept connection sparser than QUIET (a scrape every 3 s): it ends
	// the wait after the first, never at MAX.
	{name: "a scrape every 3 s does not hold it to MAX", args: []string{"--quiet", "500ms", "--max", "8s", "--requests", "1s"},
		idle: nap.ActiveWithin + 200*time.Millisecond, sends: []time.Duration{200 * time.Millisecond, 3200 * time.Millisecond, 6200 * time.Millisecond},
		lo: 700 * time.Millisecond, hi: 200*time.Millisecond + nap.ActiveWithin + 500*time.Millisecond},
	{name: "the pod's own connection receiving does not count", args: []string{"--quiet", "500ms", "--max", "5s", "--requests", "1s"},
		outbound: true, sends: every(100*time.Millisecond, 5*time.Second), lo: 500 * time.Millisecond, hi: 500 * time.Millisecond},
	{name: "requests that end before MIN: MIN", args: []string{"2s", "--quiet", "500ms", "--max", "10s", "--requests", "1s"},
		sends: every(200*time.Millisecond, 400*time.Millisecond), lo: 2 * time.Second, hi: 2 * time.Second},
	{name: "sockets refused: MAX, exit 3", args: []string{"--quiet", "300ms", "--max", "1200ms", "--requests", "1s"},
		refused: true, code: nap.ExitUnreadable, stderr: nap.UnreadableSockets, lo: 1200 * time.Millisecond, hi: 1200 * time.Millisecond},
	// A fixed delay reads the sockets too (TestFixedDelayReadsRequests): refused, it
	// says nothing, keeps its exit status and waits its delay (its verdict blind).
	{name: "a fixed delay, sockets refused: its delay, silent", args: []string{"1200ms"},
		sends: every(200*time.Millisecond, 2*time.Second), refused: true, lo: 1200 * time.Millisecond, hi: 1200 * time.Millisecond},
	{name: "SIGTERM ends a wait the requests hold", args: []string{"--quiet", "500ms", "--max", "10s", "--requests", "1s"},
		sends: every(200*time.Millisecond, 5*time.Second), signal: syscall.SIGTERM, after: 1500 * time.Millisecond, code: 143},
}

// TestRequestSignal runs every case on every implementation at once, each in a network
// namespace of its own; the arm64 binary runs under qemu-user with its stub standing in
// for the netlink socket call (serveSockets), or without it where the case refuses the
// sockets (qemu itself refuses them). The reference and the amd64 binary have the
// socket call refused by a seccomp filter.
func TestRequestSignal(t *testing.T) {
	testenv.RequireRoot(t)
	nums, ok := hostSyscalls[runtime.GOARCH]
	if !ok {
		t.Fatalf("no system call numbers for %s", runtime.GOARCH)
	}
	if armSocketPC == 0 || armClosePC == 0 {
		t.Fatal("the arm64 program has no diag_socket or diag_close label")
	}
	ims := impls(t)
	got := make([][]outcome, len(ims))
	var wg sync.WaitGroup
	for i, im := range ims {
		got[i] = make([]outcome, len(requestCases))
		for j, tc := range requestCases {
			cmd := im.command(tc.args...)
			if tc.refused && im.qemu == "" {
				cmd = denied(t, cmd, nums.socket)
			}
			wg.Go(func() {
				got[i][j] = withKeptConnection(im, tc.refused, cmd, tc.idle, tc.sends, nil, tc.outbound, tc.signal, tc.after)
			})
		}
	}
	wg.Wait()
	for i, im := range ims {
		for j, tc := range requestCases {
			t.Run(im.name+"/"+tc.name, func(t *testing.T) {
				got[i][j].checkWait(t, im, tc.code, tc.stderr, tc.lo, tc.hi, tc.signal != 0)
			})
		}
	}
}

// withKeptConnection runs cmd for im in a network namespace of its own (inNetns, refused
// as there) with keptConnection's connection in it, signalled as runWith does, and
// returns its outcome.
func withKeptConnection(im impl, refused bool, cmd *exec.Cmd, idle time.Duration, sends, dials []time.Duration, outbound bool, sig syscall.Signal, after time.Duration) outcome {
	var o outcome
	err := inNetns(im, refused, func(sockets *os.File) error {
		stop, err := keptConnection(idle, sends, dials, outbound)
		if err != nil {
			return err
		}
		defer stop()
		o = runWith(cmd, sig, after, im.qemu != "", sockets)
		return nil
	})
	if err != nil {
		return outcome{err: err}
	}
	return o
}

// keptConnection opens, in the calling thread's network namespace, a listener and one
// client connection to it, sends a request over it, waits idle, then sends a request
// over it at each of sends and opens a new connection to the listener (which the
// kernel accepts: a passive open) at each of dials
// (from its return); with outbound, the listener closes once it has accepted and the
// server's side sends instead: the client's side is then the pod's own connection out.
// stop ends it all.
func keptConnection(idle time.Duration, sends, dials []time.Duration, outbound bool) (stop func(), err error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
		b := make([]byte, 512)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
		}
	}()
	client, err := net.Dial("tcp4", l.Addr().String())
	if err != nil {
		l.Close()
		return nil, err
	}
	server, ok := <-accepted
	if !ok {
		client.Close()
		l.Close()
		return nil, fmt.Errorf("no connection accepted")
	}
	sender := client
	if outbound {
		l.Close()
		sender = server
		go func() {
			b := make([]byte, 512)
			for {
				if _, err := client.Read(b); err != nil {
					return
				}
			}
		}()
	}
	// One request before nap starts: a kept connection has served before (one
	// request alone is a new connection's, which nap.KeptSegs leaves to the count).
	sender.Write([]byte("GET / HTTP/1.1\r\nHost: pod\r\n\r\n"))
	time.Sleep(idle)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		for _, at := range sends {
			select {
			case <-done:
				return
			case <-time.After(time.Until(start.Add(at))):
				sender.Write([]byte("GET / HTTP/1.1\r\nHost: pod\r\n\r\n"))
			}
		}
	}()
	// The dials' sockets are made here, in the namespace (a goroutine's thread is
	// not): a socket connects in the namespace it was made in.
	to := &syscall.SockaddrInet4{Port: l.Addr().(*net.TCPAddr).Port, Addr: [4]byte{127, 0, 0, 1}}
	fds := make([]int, len(dials))
	for k := range dials {
		if fds[k], err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0); err != nil {
			return nil, err
		}
	}
	go func() {
		defer func() {
			for _, fd := range fds {
				syscall.Close(fd)
			}
		}()
		for k, at := range dials {
			select {
			case <-done:
				return
			case <-time.After(time.Until(start.Add(at))):
				syscall.Connect(fds[k], to)
			}
		}
	}()
	return func() {
		close(done)
		client.Close()
		server.Close()
		l.Close()
	}, nil
}

// fixedRequestCases: a fixed delay reads the requests over connections the pod accepted
// earlier as the request signal does (at nap.ActiveWithin), and ends at its delay
// whatever it reads: no new connection comes but at dials, so the count alone would read
// quiet in the others (conns=0), and held is the sockets' word alone; late is the new
// connections'. kept is whether the verdict's kept is set (a reading saw the requests
// alone). With live
// (the file at nap.LivePath), the live wait's WITHIN turns the request signal on for
// arguments that have none: the wait ends from lo to hi, and its verdict says wait.
var fixedRequestCases = []struct {
	name    string
	args    []string
	idle    time.Duration
	sends   []time.Duration
	dials   []time.Duration
	verdict string
	kept    bool
	live    *string
	lo, hi  time.Duration
	stderr  string
	wait    string
}{
	{name: "requests over a kept connection to the end: held", args: []string{"1500ms"}, sends: every(200*time.Millisecond, 3*time.Second), verdict: nap.Held, kept: true},
	// New connections within QUIET of the end, whatever the kept connection does: late.
	{name: "a new connection near the end: late", args: []string{"1500ms"}, sends: every(200*time.Millisecond, 3*time.Second),
		dials: []time.Duration{900 * time.Millisecond}, verdict: nap.Late, kept: true},
	// New connections that stopped QUIET before the end, requests on to it: held.
	{name: "new connections stopped, requests on: held", args: []string{"4s"}, sends: every(200*time.Millisecond, 5*time.Second),
		dials: []time.Duration{300 * time.Millisecond}, verdict: nap.Held, kept: true},
	{name: "an idle kept connection: quiet", args: []string{"1500ms"}, idle: nap.ActiveWithin + 200*time.Millisecond, verdict: nap.Quiet},
	{name: "requests that stopped early: quiet", args: []string{"4s"}, sends: every(200*time.Millisecond, 400*time.Millisecond), verdict: nap.Quiet, kept: true},
	// An adaptive wait admitted without the request signal, the live wait's WITHIN
	// 1 s: it holds while the requests come, then QUIET; without the live wait it
	// ends at QUIET, its requests unseen.
	{name: "live: its WITHIN holds the wait for the requests", args: []string{"--quiet", "500ms", "--max", "6s", "--live"}, live: ptr("wait/v1 0 0 0 1000\n"),
		sends: every(200*time.Millisecond, 2*time.Second), verdict: nap.Quiet, lo: 2500 * time.Millisecond, hi: 4 * time.Second, wait: nap.WaitLive, kept: true},
	{name: "live: none there, the requests unseen", args: []string{"--quiet", "500ms", "--max", "6s", "--live"},
		sends: every(200*time.Millisecond, 2*time.Second), verdict: nap.Quiet, lo: 500 * time.Millisecond, hi: 600 * time.Millisecond, stderr: nap.LiveMissing, wait: nap.WaitArgs},
}

// TestFixedDelayReadsRequests runs fixedRequestCases (the fixed delay, and the live
// wait's request signal) on every implementation at once,
// each in a network namespace of its own with the test's kept connection, and in a root
// of its own (chroot) with the kernel's /proc, whose net/snmp is the reader's namespace's,
// and a termination message to append to; the arm64 binary under qemu-user with its
// stub handing it the netlink socket.
func TestFixedDelayReadsRequests(t *testing.T) {
	testenv.RequireRoot(t)
	ims := impls(t)
	got := make([][]outcome, len(ims))
	logs := make([][]string, len(ims))
	var wg sync.WaitGroup
	for i, im := range ims {
		got[i] = make([]outcome, len(fixedRequestCases))
		logs[i] = make([]string, len(fixedRequestCases))
		for j, tc := range fixedRequestCases {
			root, inside := rootWith(t, im)
			for _, d := range []string{"proc", "dev"} {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := syscall.Mount("proc", filepath.Join(root, "proc"), "proc", 0, ""); err != nil {
				t.Fatalf("proc in the root: %v", err)
			}
			t.Cleanup(func() { syscall.Unmount(filepath.Join(root, "proc"), syscall.MNT_DETACH) })
			logs[i][j] = filepath.Join(root, nap.VerdictPath)
			if err := os.WriteFile(logs[i][j], []byte(appLine), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.live != nil {
				if err := os.WriteFile(filepath.Join(root, nap.LivePath), []byte(*tc.live), 0o444); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command("chroot", append([]string{root}, append(inside, tc.args...)...)...)
			cmd.Dir = "/"
			wg.Go(func() { got[i][j] = withKeptConnection(im, false, cmd, tc.idle, tc.sends, tc.dials, false, 0, 0) })
		}
	}
	wg.Wait()
	for i, im := range ims {
		for j, tc := range fixedRequestCases {
			t.Run(im.name+"/"+tc.name, func(t *testing.T) {
				req, err := nap.Parse(tc.args)
				if err != nil {
					t.Fatal(err)
				}
				lo, hi := req.Duration, req.Duration
				if tc.hi != 0 {
					lo, hi = tc.lo, tc.hi
				}
				got[i][j].checkWait(t, im, 0, tc.stderr, lo, hi, false)
				b, err := os.ReadFile(logs[i][j])
				if err != nil {
					t.Fatal(err)
				}
				msg, _ := strings.CutPrefix(string(b), appLine)
				v, ok := nap.ParseVerdict(msg)
				if !ok || v.Kind != tc.verdict || v.End < lo || v.End > hi || v.Conns != uint64(len(tc.dials)) || v.Wait != tc.wait || (v.Kept > 0) != tc.kept {
					t.Errorf("verdict %q, want %s from %v to %v, with %d new connections, kept set %v, wait %q", msg, tc.verdict, lo, hi, len(tc.dials), tc.kept, tc.wait)
				}
				t.Logf("verdict %q", strings.TrimSuffix(msg, "\n"))
			})
		}
	}
}
