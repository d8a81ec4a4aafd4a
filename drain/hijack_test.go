package drain

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOnShutdownTellsHijackedConnections: Shutdown does not track hijacked connections;
// the OnShutdown hook, run after the delay, is how they learn to go.
func TestOnShutdownTellsHijackedConnections(t *testing.T) {
	bye := make(chan struct{})
	mux := http.NewServeMux()
	srv := &http.Server{Handler: mux}
	d := New(srv, Options{Delay: 300 * time.Millisecond, Timeout: 3 * time.Second, Logger: quiet()})
	d.OnShutdown(func() { close(bye) })
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n")
		buf.Flush()
		<-bye
		io.WriteString(conn, "going away\n")
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, l) }()

	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\n")
	r := bufio.NewReader(conn)
	if status, _ := r.ReadString('\n'); !strings.Contains(status, "101") {
		t.Fatalf("upgrade: %q", status)
	}
	start := time.Now()
	cancel()
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	var line string
	for !strings.HasPrefix(line, "going away") {
		if line, err = r.ReadString('\n'); err != nil {
			t.Fatalf("the hijacked connection was not told: %v", err)
		}
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("told after %v, before the delay was over", took)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// TestListenAndServeTLS drains a TLS server the same way.
func TestListenAndServeTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	mux := http.NewServeMux()
	srv := &http.Server{Addr: addr, Handler: mux}
	d := New(srv, Options{Delay: 200 * time.Millisecond, Timeout: 2 * time.Second, Logger: quiet()})
	mux.Handle("/readyz", d.Readiness())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.ListenAndServeTLS(ctx, certFile, keyFile) }()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}, Timeout: 2 * time.Second}
	get := func() int {
		for range 100 {
			resp, err := client.Get("https://" + addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				return resp.StatusCode
			}
			time.Sleep(10 * time.Millisecond)
		}
		return 0
	}
	if code := get(); code != 200 {
		t.Fatalf("readiness over TLS %d, want 200", code)
	}
	cancel()
	for !d.Draining() {
		time.Sleep(time.Millisecond)
	}
	if code := get(); code != 503 {
		t.Fatalf("readiness over TLS while draining %d, want 503", code)
	}
	if err := <-done; err != nil {
		t.Fatalf("ListenAndServeTLS: %v", err)
	}
}

func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	keyDER, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return certFile, keyFile, pool
}
