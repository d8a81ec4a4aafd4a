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

	"github.com/nap-k8s/nap/internal/testenv"
)

// TestNginxImage runs the lab's nginx image as the kubelet would, from its files alone:
// chrooted into them (no shell, no library but those copied), as nobody, with an empty
// /tmp, in a network namespace of its own. It answers on 8080 over one kept-alive
// connection, and ends on its STOPSIGNAL (SIGQUIT) with status 0.
func TestNginxImage(t *testing.T) {
	testenv.RequireRoot(t)
	img, err := nginx(testenv.Nginx(t))
	if err != nil {
		t.Fatal(err)
	}
	if img.StopSignal != "SIGQUIT" {
		t.Errorf("STOPSIGNAL %q, want SIGQUIT", img.StopSignal)
	}
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
	if err := os.Mkdir(filepath.Join(root, "tmp"), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(root, "tmp"), 0o1777)
	if _, err := os.Stat(filepath.Join(root, "bin", "sh")); err == nil {
		t.Error("the image has a shell")
	}
	err = testenv.InNewNetns(func() error {
		cmd := exec.Command(img.Entrypoint[0], img.Entrypoint[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var stderr strings.Builder
		cmd.Stderr = &stderr
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
				return fmt.Errorf("nginx does not answer on 8080 after 10 s: %s", stderr.String())
			}
		}
		defer conn.Close()
		host, _ := os.Hostname()
		r := bufio.NewReader(conn)
		for i := range 2 { // one connection, kept alive
			fmt.Fprintf(conn, "GET /readyz HTTP/1.1\r\nHost: nap\r\n\r\n")
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				return fmt.Errorf("request %d: %w (%s)", i, err, stderr.String())
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != "ok "+host+"\n" || resp.Close {
				return fmt.Errorf("request %d: %s %q (closed %v)", i, resp.Status, body, resp.Close)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
			return err
		}
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("after SIGQUIT: %v (%s)", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			return fmt.Errorf("nginx did not end 10 s after SIGQUIT: %s", stderr.String())
		}
		t.Logf("nginx's log:\n%s", stderr.String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
