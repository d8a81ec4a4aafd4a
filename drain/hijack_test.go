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
	"log"
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
	l, cancel, done := serveLoopback(t, d)

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

// TestServeTLSConfig: Serve with a TLSConfig serves TLS and offers HTTP/2, whichever
// source the certificate comes from; a TLSConfig with no certificate is refused rather
// than served as plain HTTP.
func TestServeTLSConfig(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  *tls.Config
	}{
		{name: "Certificates", cfg: &tls.Config{Certificates: []tls.Certificate{cert}}},
		{name: "GetCertificate", cfg: &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil }}},
		{name: "GetConfigForClient", cfg: &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}, nil
		}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, h2 := range []bool{true, false} {
				mux := http.NewServeMux()
				srv := &http.Server{Handler: mux, TLSConfig: c.cfg.Clone(), ErrorLog: log.New(io.Discard, "", 0)}
				d := New(srv, Options{Delay: 50 * time.Millisecond, Timeout: 2 * time.Second, Logger: quiet()})
				mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) })
				l, cancel, done := serveLoopback(t, d)
				tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: h2}
				if !h2 {
					tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1 only
				}
				client := &http.Client{Transport: tr, Timeout: 2 * time.Second}
				resp, err := client.Get("https://" + l.Addr().String() + "/")
				if err != nil {
					t.Fatalf("h2 %v: %v", h2, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := "HTTP/1.1"
				if h2 {
					want = "HTTP/2.0"
				}
				if resp.TLS == nil || string(body) != want {
					t.Errorf("h2 %v: TLS %v, served %q; want TLS and %s", h2, resp.TLS != nil, body, want)
				}
				// Plain HTTP on the same port gets no page.
				if resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + l.Addr().String() + "/"); err == nil {
					if resp.StatusCode == 200 {
						t.Errorf("plain HTTP served with a TLSConfig set")
					}
					resp.Body.Close()
				}
				tr.CloseIdleConnections()
				cancel()
				if err := <-done; err != nil {
					t.Fatalf("Serve: %v", err)
				}
			}
		})
	}
	t.Run("no certificate", func(t *testing.T) {
		srv := &http.Server{Handler: http.NewServeMux(), TLSConfig: &tls.Config{MinVersion: tls.VersionTLS13}}
		d := New(srv, Options{Delay: time.Millisecond, Timeout: time.Second, Logger: quiet()})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if err := d.Serve(context.Background(), l); err == nil || !strings.Contains(err.Error(), "no certificate source") {
			t.Errorf("Serve: %v, want an error naming the missing certificate", err)
		}
	})
}
