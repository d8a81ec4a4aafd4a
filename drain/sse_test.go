package drain

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sseHandler sends a numbered event every 20 ms until the drain asks the stream to
// leave, then ends it with a retry of 500 ms.
func sseHandler(d *Drainer) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		es, err := d.EventStream(w)
		if err != nil {
			return
		}
		for i := 0; ; i++ {
			if err := es.Send(strconv.Itoa(i), "", "tick "+strconv.Itoa(i)); err != nil {
				es.Done()
				return
			}
			select {
			case <-es.Leave():
				es.End(500 * time.Millisecond)
				return
			case <-r.Context().Done():
				es.Done()
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// readEvents reads an event stream to its end: the events' ids, the last event's type
// and retry, and how the body ended.
func readEvents(body io.Reader) (ids []string, lastType, retry string, end error) {
	r := bufio.NewReader(body)
	var typ string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return ids, lastType, retry, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			ids = append(ids, strings.TrimPrefix(line, "id: "))
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "retry: "):
			retry = strings.TrimPrefix(line, "retry: ")
		case line == "":
			lastType, typ = typ, ""
		}
	}
}

// An event stream open when the drain begins gets, after the delay, a last event that
// says to reconnect after 500 ms, and then a clean end of the response; the drain is
// clean. Against a bare http.Server.Shutdown the same stream is cut: the client reads
// an unexpected EOF in the middle of the chunked body, with no event to say why.
func TestEventStream(t *testing.T) {
	for _, drained := range []bool{true, false} {
		t.Run(map[bool]string{true: "drain", false: "bare shutdown"}[drained], func(t *testing.T) {
			mux := http.NewServeMux()
			srv := &http.Server{Handler: mux}
			d := New(srv, Options{Delay: 100 * time.Millisecond, Timeout: 3 * time.Second, StreamJitter: 50 * time.Millisecond})
			mux.Handle("/events", sseHandler(d))
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ran := make(chan error, 1)
			if drained {
				go func() { ran <- d.Serve(ctx, l) }()
			} else {
				go srv.Serve(l)
			}
			resp, err := http.Get("http://" + l.Addr().String() + "/events")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("Content-Type %q", ct)
			}
			read := make(chan struct{})
			var ids []string
			var lastType, retry string
			var end error
			go func() {
				ids, lastType, retry, end = readEvents(resp.Body)
				close(read)
			}()
			time.Sleep(200 * time.Millisecond)
			if drained {
				cancel()
				if err := <-ran; err != nil {
					t.Errorf("the drain: %v, want clean", err)
				}
			} else {
				sctx, scancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				srv.Shutdown(sctx) // waits for the stream, in vain
				scancel()
				srv.Close()
			}
			<-read
			if len(ids) < 5 {
				t.Errorf("%d events before the end, want a stream's worth", len(ids))
			}
			if drained && (lastType != GoingAway || retry != "500" || !errors.Is(end, io.EOF)) {
				t.Errorf("the end: last event %q retry %q, body %v; want %q, 500 and a clean EOF", lastType, retry, end, GoingAway)
			}
			if !drained && (lastType == GoingAway || !errors.Is(end, io.ErrUnexpectedEOF)) {
				t.Errorf("the bare end: last event %q, body %v; want a cut: unexpected EOF", lastType, end)
			}
		})
	}
}
