package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestModes runs the app binary in both modes and sends it SIGTERM: plain stops
// answering at once, HTTP and gRPC; drain keeps answering (readiness 503, gRPC health
// NOT_SERVING) for its delay.
func TestModes(t *testing.T) {
	bin := t.TempDir() + "/app"
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v: %s", err, out)
	}
	for _, tc := range []struct {
		mode      string
		readyzAft int    // readiness 200 ms after SIGTERM; 0: refused
		health    string // the gRPC health check 200 ms after SIGTERM
	}{{"plain", 0, "refused"}, {"drain", 503, "NOT_SERVING"}} {
		t.Run(tc.mode, func(t *testing.T) {
			free := func() string {
				l, _ := net.Listen("tcp", "127.0.0.1:0")
				defer l.Close()
				return l.Addr().String()
			}
			addr, grpcAddr := free(), free()
			cmd := exec.Command(bin, "-addr", addr, "-grpc-addr", grpcAddr, "-mode", tc.mode)
			cmd.Env = append(os.Environ(), "NAP_DRAIN_DELAY=1s", "NAP_DRAIN_TIMEOUT=3s")
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			bufio.NewReader(stderr).ReadString('\n') // "serving"
			go io.Copy(io.Discard, stderr)
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
