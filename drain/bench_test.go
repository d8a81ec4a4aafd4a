package drain

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })

// The wrapper's cost per request, without the network: compare ns/op of the two.
func BenchmarkHandlerBare(b *testing.B) { benchHandler(b, okHandler) }

func BenchmarkHandlerDrain(b *testing.B) {
	srv := &http.Server{Handler: okHandler}
	d := New(srv, Options{Logger: quiet()})
	d.wrap()
	benchHandler(b, srv.Handler)
}

func benchHandler(b *testing.B, h http.Handler) {
	req := httptest.NewRequest("GET", "/", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}

// The same over loopback with a keep-alive client: a bare http.Server vs one served by
// a Drainer.
func BenchmarkServerBare(b *testing.B) {
	srv := &http.Server{Handler: okHandler}
	l := listenLoopback(b)
	go srv.Serve(l)
	defer srv.Close()
	benchServer(b, l.Addr().String())
}

func BenchmarkServerDrain(b *testing.B) {
	srv := &http.Server{Handler: okHandler}
	d := New(srv, Options{Logger: quiet(), Delay: 1, Timeout: 1})
	l := listenLoopback(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx, l) }()
	benchServer(b, l.Addr().String())
	cancel()
	<-done
}

func listenLoopback(b *testing.B) net.Listener {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func benchServer(b *testing.B, addr string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	url := "http://" + addr + "/"
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// The cost per event stream message: a hand-written event and flush vs EventStream.Send.
func BenchmarkEventBare(b *testing.B) {
	w := httptest.NewRecorder()
	rc := http.NewResponseController(w)
	b.ReportAllocs()
	for b.Loop() {
		io.WriteString(w, "id: 12345\ndata: 12345\n\n")
		rc.Flush()
		w.Body.Reset()
	}
}

func BenchmarkEventDrain(b *testing.B) {
	w := httptest.NewRecorder()
	es, err := New(nil, Options{Logger: quiet()}).EventStream(w)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		es.Send("12345", "", "12345")
		w.Body.Reset()
	}
}
