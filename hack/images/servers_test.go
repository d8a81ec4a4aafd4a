package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/oci"
	"github.com/nap-k8s/nap/internal/testenv"
)

// TestServerImages runs the lab's third-party server images as the kubelet would, from
// their files alone: chrooted into them (no shell, no library but those copied), as
// nobody, with an empty /tmp, in a network namespace of their own. Each answers its
// readiness path on 8080 twice over one kept-alive connection, and ends on its stop
// signal (the image's STOPSIGNAL, else SIGTERM) with status 0.
func TestServerImages(t *testing.T) {
	testenv.RequireRoot(t)
	host, _ := os.Hostname()
	for _, tc := range []struct {
		name  string
		image func() (oci.Image, error)
		path  string
		body  string // "" any
		stop  string
	}{
		{name: "nginx", image: func() (oci.Image, error) { return nginx(testenv.Nginx(t)) }, path: "/readyz", body: "ok " + host + "\n", stop: "SIGQUIT"},
		{name: "go-httpbin", image: func() (oci.Image, error) { return httpbin(testenv.Tool(t, "go-httpbin")) }, path: "/status/200", stop: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := tc.image()
			if err != nil {
				t.Fatal(err)
			}
			if img.StopSignal != tc.stop {
				t.Errorf("STOPSIGNAL %q, want %q", img.StopSignal, tc.stop)
			}
			sig := map[string]syscall.Signal{"": syscall.SIGTERM, "SIGQUIT": syscall.SIGQUIT}[img.StopSignal]
			root := t.TempDir()
			for _, f := range img.Files {
				p := filepath.Join(root, f.Path)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, f.Data, os.FileMode(f.Mode)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Mkdir(filepath.Join(root, "tmp"), 0o1777); err != nil {
				t.Fatal(err)
			}
			os.Chmod(filepath.Join(root, "tmp"), 0o1777)
			if _, err := os.Stat(filepath.Join(root, "bin", "sh")); err == nil {
				t.Error("the image has a shell")
			}
			if err := testenv.InNewNetns(func() error { return serve(t, img, root, tc.path, tc.body, sig) }); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// serve runs img's entrypoint chrooted into root, asks path twice over one connection,
// then stops it with sig.
func serve(t *testing.T, img oci.Image, root, path, body string, sig syscall.Signal) error {
	cmd := exec.Command(img.Entrypoint[0], img.Entrypoint[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stderr strings.Builder
	cmd.Stderr, cmd.Stdout = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	var conn net.Conn
	for deadline := time.Now().Add(10 * time.Second); conn == nil; time.Sleep(50 * time.Millisecond) {
		conn, _ = net.DialTimeout("tcp", "127.0.0.1:8080", time.Second)
		if conn == nil && time.Now().After(deadline) {
			return fmt.Errorf("no answer on 8080 after 10 s: %s", stderr.String())
		}
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for i := range 2 { // one connection, kept alive
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: nap\r\n\r\n", path)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return fmt.Errorf("request %d: %w (%s)", i, err, stderr.String())
		}
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || body != "" && string(got) != body || resp.Close {
			return fmt.Errorf("request %d: %s %q (closed %v)", i, resp.Status, got, resp.Close)
		}
	}
	if err := cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("after %v: %v (%s)", sig, err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		return fmt.Errorf("still running 10 s after %v: %s", sig, stderr.String())
	}
	t.Logf("its log:\n%s", stderr.String())
	return nil
}
