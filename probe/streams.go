package probe

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// StreamReport is what held streams saw: how each connection ended, how long the next
// took to deliver, and the messages lost in between.
type StreamReport struct {
	Protocol string `json:"protocol"` // websocket or sse
	Streams  int    `json:"streams"`  // held open at once
	// Opened counts the connections that delivered a first message; each held stream
	// opens one, then one more after each end.
	Opened int `json:"opened"`
	// Clean counts the ends the server announced in its protocol's words (WebSocket
	// close 1001 going away or 1000; an event stream's last event going-away); Broken
	// every other end before the probe's own (a close 1006, a reset, an EOF mid-stream,
	// an event stream that simply stopped).
	Clean  int `json:"clean"`
	Broken int `json:"broken"`
	// ConnectFailed counts connections that delivered nothing (refused, an error
	// status); the stream tries again 100 ms later.
	ConnectFailed int `json:"connect_failed"`
	// Messages received; Lost: numbers skipped across a reconnect (the demo app numbers
	// its messages and resumes from the number asked, Last-Event-ID or ?from=).
	Messages int `json:"messages"`
	Lost     int `json:"lost"`
	// Reconnect is the time from a stream's end to the first message of the next.
	Reconnect Percentiles `json:"reconnect"`
	// FirstBroken is the first broken end's error as the client saw it.
	FirstBroken string `json:"first_broken,omitempty"`
	// Buckets are the same counts over time (the plot), BucketSeconds each: as for
	// requests, AutoBucket doubled whenever the run would pass MaxAutoBuckets.
	BucketSeconds float64        `json:"bucket_seconds,omitempty"`
	Buckets       []StreamBucket `json:"buckets,omitempty"`
}

// StreamBucket is what the held streams saw in one interval of the run: the messages
// received, the connections that delivered a first message, the ends by kind and the
// messages lost, each counted in the interval it happened in.
type StreamBucket struct {
	OffsetSeconds float64 `json:"offset_seconds"`
	Messages      int     `json:"messages"`
	Opened        int     `json:"opened"`
	Clean         int     `json:"clean"`
	Broken        int     `json:"broken"`
	ConnectFailed int     `json:"connect_failed"`
	Lost          int     `json:"lost"`
}

func (b *StreamBucket) merge(o StreamBucket) {
	b.Messages += o.Messages
	b.Opened += o.Opened
	b.Clean += o.Clean
	b.Broken += o.Broken
	b.ConnectFailed += o.ConnectFailed
	b.Lost += o.Lost
}

// streamTimeline buckets what happens to the streams by when it happened.
type streamTimeline struct {
	start   time.Time
	bucket  time.Duration
	buckets []StreamBucket
}

// at is the bucket of the moment t, made (and the buckets coarsened) as needed.
func (tl *streamTimeline) at(t time.Time) *StreamBucket {
	off := max(t.Sub(tl.start), 0)
	for int(off/tl.bucket) >= MaxAutoBuckets {
		tl.bucket *= 2
		n := (len(tl.buckets) + 1) / 2
		for j := range n {
			b := StreamBucket{OffsetSeconds: (time.Duration(j) * tl.bucket).Seconds()}
			b.merge(tl.buckets[2*j])
			if 2*j+1 < len(tl.buckets) {
				b.merge(tl.buckets[2*j+1])
			}
			tl.buckets[j] = b
		}
		tl.buckets = tl.buckets[:n]
	}
	i := int(off / tl.bucket)
	for len(tl.buckets) <= i {
		tl.buckets = append(tl.buckets, StreamBucket{OffsetSeconds: (time.Duration(len(tl.buckets)) * tl.bucket).Seconds()})
	}
	return &tl.buckets[i]
}

// Failed is what counts against a run: broken ends, connections that delivered nothing,
// lost messages.
func (r *StreamReport) Failed() int {
	if r == nil {
		return 0
	}
	return r.Broken + r.ConnectFailed + r.Lost
}

// streamEnd is how one connection ended.
type streamEnd struct {
	clean bool
	err   string
}

// streamConn reads one connection: it calls msg for each message's number (-1 when
// the message is not a number) until the connection ends or ctx does.
type streamConn func(ctx context.Context, from int, msg func(seq int)) (delivered bool, end streamEnd)

// RunStreams holds opts.Streams streams open on opts.URL until ctx ends or
// opts.Duration has passed: ws:// or wss:// as WebSockets, http:// or https:// as event
// streams (text/event-stream). Each stream reconnects at once when it ends (an event
// stream after the retry: its server asked for), resuming after the last message it
// saw.
func RunStreams(ctx context.Context, opts Options) (*StreamReport, error) {
	u, err := url.Parse(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("URL %q: %w", opts.URL, err)
	}
	opts = opts.Defaults()
	rep := &StreamReport{Streams: opts.Streams}
	var conn func() streamConn
	switch u.Scheme {
	case "ws", "wss":
		rep.Protocol = "websocket"
		conn = func() streamConn { return wsConn(u, opts.Timeout) }
	case "http", "https":
		rep.Protocol = "sse"
		conn = func() streamConn { return sseConn(u, opts.Timeout) }
	default:
		return nil, fmt.Errorf("URL %q: streams want ws://, wss://, http:// or https://", opts.URL)
	}
	if opts.Streams < 1 || opts.Streams > 10_000 {
		return nil, fmt.Errorf("streams %d: from 1 to 10,000", opts.Streams)
	}
	if opts.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Duration)
		defer cancel()
	}
	var mu sync.Mutex
	var reconnect Histogram
	var wg sync.WaitGroup
	tl := &streamTimeline{start: time.Now(), bucket: AutoBucket}
	for range opts.Streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			read := conn()
			next := -1 // the number expected next; -1: none yet
			var ended time.Time
			for ctx.Err() == nil {
				first := true
				delivered, end := read(ctx, next, func(seq int) {
					mu.Lock()
					defer mu.Unlock()
					b := tl.at(time.Now())
					rep.Messages++
					b.Messages++
					if first {
						first = false
						rep.Opened++
						b.Opened++
						if !ended.IsZero() {
							reconnect.Record(time.Since(ended))
						}
					}
					if seq >= 0 {
						if next >= 0 && seq > next {
							rep.Lost += seq - next
							b.Lost += seq - next
						}
						next = seq + 1
					}
				})
				if ctx.Err() != nil {
					return // the probe's own end
				}
				mu.Lock()
				b := tl.at(time.Now())
				switch {
				case !delivered:
					rep.ConnectFailed++
					b.ConnectFailed++
				case end.clean:
					rep.Clean++
					b.Clean++
				default:
					rep.Broken++
					b.Broken++
					if rep.FirstBroken == "" {
						rep.FirstBroken = end.err
					}
				}
				mu.Unlock()
				if delivered {
					ended = time.Now()
				} else {
					select {
					case <-ctx.Done():
					case <-time.After(100 * time.Millisecond):
					}
				}
			}
		}()
	}
	wg.Wait()
	rep.Reconnect = percentiles(&reconnect)
	rep.BucketSeconds, rep.Buckets = tl.bucket.Seconds(), tl.buckets
	return rep, nil
}

// wsConn reads a WebSocket; from is asked as the query parameter from.
func wsConn(u *url.URL, timeout time.Duration) streamConn {
	return func(ctx context.Context, from int, msg func(int)) (bool, streamEnd) {
		target := *u
		if from >= 0 {
			q := target.Query()
			q.Set("from", strconv.Itoa(from))
			target.RawQuery = q.Encode()
		}
		dctx, cancel := context.WithTimeout(ctx, timeout)
		c, _, err := websocket.Dial(dctx, target.String(), &websocket.DialOptions{HTTPClient: noProxyClient})
		cancel()
		if err != nil {
			return false, streamEnd{err: err.Error()}
		}
		defer c.CloseNow()
		delivered := false
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				switch websocket.CloseStatus(err) {
				case websocket.StatusGoingAway, websocket.StatusNormalClosure:
					return delivered, streamEnd{clean: true}
				}
				return delivered, streamEnd{err: err.Error()}
			}
			delivered = true
			msg(number(string(data)))
		}
	}
}

// sseConn reads an event stream; from is asked as Last-Event-ID (from-1: the last
// one seen), and the server's retry: is waited before the next connection.
func sseConn(u *url.URL, timeout time.Duration) streamConn {
	retry := time.Duration(0)
	return func(ctx context.Context, from int, msg func(int)) (bool, streamEnd) {
		if retry > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(retry):
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return false, streamEnd{err: err.Error()}
		}
		req.Header.Set("Accept", "text/event-stream")
		if from > 0 {
			req.Header.Set("Last-Event-ID", strconv.Itoa(from-1))
		}
		c := *noProxyClient
		c.Transport = &http.Transport{Proxy: nil, ResponseHeaderTimeout: timeout, DisableKeepAlives: true}
		resp, err := c.Do(req)
		if err != nil {
			return false, streamEnd{err: err.Error()}
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, streamEnd{err: resp.Status}
		}
		r := bufio.NewReader(resp.Body)
		delivered, typ, id := false, "", ""
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return delivered, streamEnd{err: "ended without a going-away event: " + err.Error()}
			}
			line = strings.TrimRight(line, "\r\n")
			switch {
			case strings.HasPrefix(line, "id:"):
				id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
			case strings.HasPrefix(line, "event:"):
				typ = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "retry:"):
				if ms, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "retry:"))); err == nil && ms >= 0 {
					retry = time.Duration(ms) * time.Millisecond
				}
			case line == "":
				if typ == goingAwayEvent {
					return delivered, streamEnd{clean: true}
				}
				if id != "" {
					delivered = true
					msg(number(id))
				}
				typ, id = "", ""
			}
		}
	}
}

// goingAwayEvent is the event type that announces an event stream's end (drain's
// EventStream.End sends it).
const goingAwayEvent = "going-away"

// noProxyClient never goes through a proxy: probes reach the address given.
var noProxyClient = &http.Client{Transport: &http.Transport{Proxy: nil}}

// number is s as a message number, or -1.
func number(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return -1
	}
	return n
}
