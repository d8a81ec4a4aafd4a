package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestModes runs the app binary in both modes and sends it SIGTERM: plain stops
// answering at once, HTTP and gRPC; drain keeps answering (readiness 503, gRPC health
// NOT_SERVING) for its delay.
func TestModes(t *testing.T) {
	bin := buildApp(t)
	for _, tc := range []struct {
		mode      string
		readyzAft int    // readiness 200 ms after SIGTERM; 0: refused
		health    string // the gRPC health check 200 ms after SIGTERM
	}{{"plain", 0, "refused"}, {"drain", 503, "NOT_SERVING"}} {
		t.Run(tc.mode, func(t *testing.T) {
			addr, grpcAddr := freeAddr(), freeAddr()
			cmd := startApp(t, bin, tc.mode, "1s", "-addr", addr, "-grpc-addr", grpcAddr)
			get := func(path string) (int, string) {
				c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}
				for range 50 {
					resp, err := c.Get("http://" + addr + path)
					if err == nil {
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						return resp.StatusCode, string(b)
					}
					if !strings.Contains(err.Error(), "refused") || cmd.ProcessState != nil {
						return 0, err.Error()
					}
					time.Sleep(20 * time.Millisecond)
				}
				return 0, "refused"
			}
			if code, body := get("/"); code != 200 || !strings.HasPrefix(body, "ok ") {
				t.Fatalf("GET / = %d %q", code, body)
			}
			cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			check := func() string {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				r, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
				switch {
				case err != nil && strings.Contains(err.Error(), "refused"):
					return "refused"
				case err != nil:
					return err.Error()
				}
				return r.Status.String()
			}
			if h := check(); h != "SERVING" {
				t.Fatalf("gRPC health before SIGTERM: %s", h)
			}
			cc.Close()
			cc, _ = grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials())) // a new connection
			cmd.Process.Signal(syscall.SIGTERM)
			time.Sleep(200 * time.Millisecond)
			if h := check(); h != tc.health {
				t.Errorf("gRPC health 200ms after SIGTERM: %s, want %s", h, tc.health)
			}
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
			code := 0
			if resp, err := c.Get("http://" + addr + "/readyz"); err == nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
			if code != tc.readyzAft {
				t.Errorf("readiness %d 200ms after SIGTERM, want %d", code, tc.readyzAft)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("exit: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("still running 5s after SIGTERM")
			}
		})
	}
}

// TestStreamsAtSIGTERM: a WebSocket and an event stream open at SIGTERM. plain: the
// WebSocket dies with the process (no close frame) and the event stream just stops;
// drain: after the delay the WebSocket is closed with 1001 and the event stream ends
// with its going-away event. The streams are served under a prefix too (/shop/ws), as
// an ingress routing /NAMESPACE/ passes them on.
func TestStreamsAtSIGTERM(t *testing.T) {
	bin := buildApp(t)
	for _, mode := range []string{"plain", "drain"} {
		t.Run(mode, func(t *testing.T) {
			addr := freeAddr()
			cmd := startApp(t, bin, mode, "300ms", "-addr", addr, "-grpc-addr", "")

			// The streams at /ws and /events, and (drain) under an ingress's prefix.
			prefix := map[string]string{"plain": "", "drain": "/shop"}[mode]
			ws, _, err := websocket.Dial(context.Background(), "ws://"+addr+prefix+"/ws?from=7", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.CloseNow()
			resp, err := http.Get("http://" + addr + prefix + "/events")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			wsEnd := make(chan string, 1)
			go func() {
				first := ""
				for {
					_, b, err := ws.Read(context.Background())
					if err != nil {
						wsEnd <- fmt.Sprintf("first %s, status %d", first, websocket.CloseStatus(err))
						return
					}
					if first == "" {
						first = string(b)
					}
				}
			}()
			body := make(chan string, 1)
			go func() {
				b, _ := io.ReadAll(resp.Body)
				body <- string(b)
			}()
			time.Sleep(300 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGTERM)
			got, events := <-wsEnd, <-body
			wantWS, going := "first 7, status -1", false
			if mode == "drain" {
				wantWS, going = "first 7, status 1001", true
			}
			if got != wantWS {
				t.Errorf("the WebSocket: %s, want %s", got, wantWS)
			}
			if !strings.HasPrefix(events, "id: 0\ndata: 0\n\n") || strings.Contains(events, "event: going-away") != going {
				t.Errorf("the event stream:\n%s\nwant it numbered from 0, ending with going-away: %v", events, going)
			}
			cmd.Wait()
		})
	}
}

// buildApp builds the app binary.
func buildApp(t *testing.T) string {
	t.Helper()
	bin := t.TempDir() + "/app"
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v: %s", err, out)
	}
	return bin
}

// freeAddr is a loopback address nothing listens on.
func freeAddr() string {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	defer l.Close()
	return l.Addr().String()
}

// startApp runs the app in mode with drain's delay (and a 3 s timeout) and args, and
// returns once it has logged that it serves; it is killed when the test ends.
func startApp(t *testing.T, bin, mode, delay string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, append(args, "-mode", mode)...)
	cmd.Env = append(os.Environ(), "NAP_DRAIN_DELAY="+delay, "NAP_DRAIN_TIMEOUT=3s")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	bufio.NewReader(stderr).ReadString('\n') // "serving"
	go io.Copy(io.Discard, stderr)
	return cmd
}

// TestFill: -fill writes the whole size with every block allocated (what a file
// system's free space, and the kubelet's eviction signal, count), and refuses a spec it
// cannot read.
func TestFill(t *testing.T) {
	file := t.TempDir() + "/data"
	if err := fill(file + ":3"); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(file, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 3<<20 || st.Blocks*512 < 3<<20 {
		t.Errorf("%d bytes in %d blocks of 512, want 3 MiB allocated", st.Size, st.Blocks)
	}
	for _, bad := range []string{"", "x", ":1", file + ":0", file + ":-1", file + ":big", file + ":5000"} {
		if err := fill(bad); err == nil || !strings.Contains(err.Error(), "FILE:MiB") {
			t.Errorf("fill(%q): %v, want an error naming FILE:MiB", bad, err)
		}
	}
}

// TestCat: -cat prints a file and exits, serving nothing; a file it cannot read is an
// error naming it and exit 1.
func TestCat(t *testing.T) {
	bin := buildApp(t)
	file := t.TempDir() + "/wait"
	const line = "wait/v1 13000 2000 0 1000\n"
	if err := os.WriteFile(file, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-cat", file, "-addr", "127.0.0.1:1").Output()
	if err != nil || string(out) != line {
		t.Errorf("-cat %s: %q (%v), want %q", file, out, err, line)
	}
	missing := file + ".missing"
	out, err = exec.Command(bin, "-cat", missing).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), missing) {
		t.Errorf("-cat %s: %q (%v), want exit 1 naming the file", missing, out, err)
	}
}

// TestResolve: -resolve prints what a name resolves to, sorted, and exits; a name that
// does not resolve is an error naming it and exit 1.
func TestResolve(t *testing.T) {
	bin := buildApp(t)
	out, err := exec.Command(bin, "-resolve", "localhost").Output()
	if err != nil || !strings.Contains(string(out), "127.0.0.1\n") {
		t.Errorf("-resolve localhost: %q (%v), want 127.0.0.1 among the lines", out, err)
	}
	const bad = "nap-no-such-name.onion" // never asked of DNS (RFC 7686): nothing leaves the machine
	out, err = exec.Command(bin, "-resolve", bad).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), bad) {
		t.Errorf("-resolve %s: %q (%v), want exit 1 naming it", bad, out, err)
	}
}
