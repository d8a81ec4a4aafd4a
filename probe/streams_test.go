package probe

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/nap-k8s/nap/drain"
	"github.com/nap-k8s/nap/internal/testutil/golden"
)

// streamServer serves numbered messages every 10 ms from the number asked (?from= for
// WebSockets, Last-Event-ID + 1 for event streams) and ends each connection after
// 300 ms: with its protocol's close (clean), by dropping it (broken), or cleanly but
// resuming 5 numbers further than asked (skip).
func streamServer(t *testing.T, end string) (ws, sse string) {
	t.Helper()
	first := func(r *http.Request) int {
		if n, err := strconv.Atoi(r.URL.Query().Get("from")); err == nil {
			return n
		}
		if n, err := strconv.Atoi(r.Header.Get("Last-Event-ID")); err == nil {
			return n + 1
		}
		return 0
	}
	skip := 0
	if end == "skip" {
		skip = 5
	}
	d := drain.New(nil, drain.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		stop := time.After(300 * time.Millisecond)
		for i := first(r) + skip; ; i++ {
			if c.Write(r.Context(), websocket.MessageText, []byte(strconv.Itoa(i))) != nil {
				return
			}
			select {
			case <-stop:
				if end != "broken" {
					c.Close(websocket.StatusGoingAway, "bye")
				}
				return // broken: CloseNow, no close frame
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		es, err := d.EventStream(w)
		if err != nil {
			return
		}
		stop := time.After(300 * time.Millisecond)
		for i := first(r) + skip; ; i++ {
			if es.Send(strconv.Itoa(i), "", "tick") != nil {
				es.Done()
				return
			}
			select {
			case <-stop:
				if end != "broken" {
					es.End(20 * time.Millisecond)
				} else {
					es.Done() // the response ends with no event to say so
				}
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws", srv.URL + "/sse"
}

// Held streams are counted by how they end, resume where they left off, and the
// messages a server skips across a reconnect are counted lost.
func TestStreams(t *testing.T) {
	for _, end := range []string{"clean", "broken", "skip"} {
		ws, sse := streamServer(t, end)
		for _, url := range []string{ws, sse} {
			t.Run(end+" "+url[:strings.Index(url, ":")], func(t *testing.T) {
				r, err := RunStreams(context.Background(), Options{URL: url, Streams: 4, Duration: 1100 * time.Millisecond, Timeout: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				ends := r.Clean + r.Broken
				got := fmt.Sprintf("opened %d, clean %d, broken %d, connect failed %d, messages %d, lost %d", r.Opened, r.Clean, r.Broken, r.ConnectFailed, r.Messages, r.Lost)
				t.Log(got)
				if r.Opened < 4*3 || ends < 4*3 || r.ConnectFailed != 0 || r.Messages < 4*50 {
					t.Fatalf("%s: want each of 4 streams through 3 connections or more, messages every 10 ms", got)
				}
				switch end {
				case "clean":
					if r.Broken != 0 || r.Lost != 0 {
						t.Errorf("%s: want every end clean and nothing lost", got)
					}
				case "broken":
					if r.Clean != 0 || r.Lost != 0 || r.FirstBroken == "" {
						t.Errorf("%s: want every end broken (first %q), nothing lost", got, r.FirstBroken)
					}
				case "skip":
					if r.Broken != 0 || r.Lost != 5*ends {
						t.Errorf("%s: want 5 lost at each of %d reconnects", got, ends)
					}
				}
				var sum StreamBucket
				for _, b := range r.Buckets {
					sum.merge(b)
				}
				if sum.Messages != r.Messages || sum.Opened != r.Opened || sum.Clean != r.Clean || sum.Broken != r.Broken || sum.ConnectFailed != r.ConnectFailed || sum.Lost != r.Lost || r.BucketSeconds != AutoBucket.Seconds() {
					t.Errorf("%s: the buckets (%gs) add up to %+v", got, r.BucketSeconds, sum)
				}
				if r.Reconnect.Max == 0 || r.Reconnect.P50 > 500 {
					t.Errorf("reconnect %+v: want it measured, within the retry and a connect", r.Reconnect)
				}
			})
		}
	}
}

// The streams' timeline keeps every count where it happened, coarsening as the run
// grows past MaxAutoBuckets.
func TestStreamTimeline(t *testing.T) {
	start := time.Now()
	tl := &streamTimeline{start: start, bucket: AutoBucket}
	for i := range 1300 { // 130 s in steps of 100 ms
		b := tl.at(start.Add(time.Duration(i) * 100 * time.Millisecond))
		b.Messages++
		if i%100 == 0 {
			b.Clean++
		}
	}
	var sum StreamBucket
	for _, b := range tl.buckets {
		sum.merge(b)
	}
	if tl.bucket != 4*AutoBucket || len(tl.buckets) != 325 || sum.Messages != 1300 || sum.Clean != 13 {
		t.Fatalf("bucket %v, %d buckets, %+v: want 400ms, 325 buckets, 1300 messages, 13 clean", tl.bucket, len(tl.buckets), sum)
	}
	if b := tl.buckets[250]; b.OffsetSeconds != 100 || b.Messages != 4 || b.Clean != 1 {
		t.Errorf("the bucket at 100s: %+v", b)
	}
}

// A rollout under held WebSockets: the plot stacks the ends by how they ended, the
// messages lost on top, and draws the messages as a line.
func TestStreamsSVG(t *testing.T) {
	s := Summary{Title: "a rolling restart, WebSockets", URL: "ws://web/ws", BucketSeconds: 0.1, DurationSeconds: 3,
		Streams: &StreamReport{Protocol: "websocket", Streams: 20, Opened: 40, Clean: 14, Broken: 6, ConnectFailed: 2, Messages: 5400, Lost: 9, BucketSeconds: 0.5}}
	for i := range 6 {
		b := StreamBucket{OffsetSeconds: float64(i) * 0.5, Messages: 1000 - 100*i}
		if i == 2 {
			b.Clean, b.Broken, b.Lost = 14, 6, 9
		}
		if i == 3 {
			b.ConnectFailed, b.Opened = 2, 20
		}
		s.Streams.Buckets = append(s.Streams.Buckets, b)
	}
	var svg bytes.Buffer
	if err := SVG(&svg, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`fill="` + cleanColor + `"><title>1s: 14 ended cleanly</title>`,
		`fill="` + brokenColor + `"><title>1s: 6 broken</title>`,
		`fill="` + lostColor + `"><title>1s: 9 messages lost</title>`,
		`fill="` + connectFailedColor + `"><title>1.5s: 2 delivered nothing</title>`,
		`stroke="` + messagesColor + `"`,
		"14 ends clean, 6 broken, 2 connections delivered nothing, 9 messages lost",
	} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("SVG lacks %s", want)
		}
	}
	if err := xml.Unmarshal(svg.Bytes(), new(struct{})); err != nil {
		t.Errorf("the SVG is not well-formed XML: %v", err)
	}
	golden.Check(t, filepath.Join("testdata", "streams.svg"), svg.Bytes())
}
