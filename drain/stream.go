package drain

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// DefaultStreamJitter is Options.StreamJitter's default.
const DefaultStreamJitter = time.Second

// Stream is one long-lived stream a handler serves — a WebSocket, an event stream, a
// long poll — registered with its Drainer (Drainer.Stream) so that the drain can tell
// it to go and wait for it: http.Server.Shutdown neither tells streams to end nor
// waits for hijacked connections (WebSockets) at all.
type Stream struct {
	d      *Drainer
	leave  chan struct{}
	asked  sync.Once // leave closed
	once   sync.Once // Done
	cutOff func()
}

// goAway closes Leave, once.
func (s *Stream) goAway() { s.asked.Do(func() { close(s.leave) }) }

// Stream registers a stream. Leave is closed when it should end, in its protocol's own
// words (WebSocket close 1001 "going away"; an event stream's last event with its
// retry:): when shutdown begins, after the delay, each stream at its own moment within
// Options.StreamJitter, so that their clients do not all reconnect at once. Done must
// be called when it has ended. cutOff, if not nil, closes it at once: the drain calls it
// at the deadline for a stream still open, and counts it in CutOffError.Streams. Call it
// from the handler that serves the stream: the handler then counts as a stream, not as
// a request in flight.
func (d *Drainer) Stream(cutOff func()) *Stream {
	s := &Stream{d: d, leave: make(chan struct{}), cutOff: cutOff}
	d.inflight.Add(-1)
	d.streamsMu.Lock()
	defer d.streamsMu.Unlock()
	if d.streams == nil {
		d.streams = map[*Stream]struct{}{}
	}
	d.streams[s] = struct{}{}
	if d.phase.Load() == phaseShuttingDown {
		s.goAway() // opened after shutdown began: go at once
	}
	return s
}

// Leave is closed when the stream should end.
func (s *Stream) Leave() <-chan struct{} { return s.leave }

// Done unregisters the stream; calling it again does nothing.
func (s *Stream) Done() {
	s.once.Do(func() {
		s.d.inflight.Add(1)
		s.d.streamsMu.Lock()
		delete(s.d.streams, s)
		n := len(s.d.streams)
		s.d.streamsMu.Unlock()
		if n == 0 {
			s.d.streamsGone.Broadcast()
		}
	})
}

// Streams is the number of streams open now.
func (d *Drainer) Streams() int {
	d.streamsMu.Lock()
	defer d.streamsMu.Unlock()
	return len(d.streams)
}

// askStreams closes each open stream's Leave at a random moment within jitter, and
// every later one's at once (the phase is shutting down).
func (d *Drainer) askStreams(jitter time.Duration) {
	d.streamsMu.Lock()
	defer d.streamsMu.Unlock()
	for s := range d.streams {
		wait := time.Duration(0)
		if jitter > 0 {
			wait = rand.N(jitter)
		}
		time.AfterFunc(wait, s.goAway)
	}
}

// waitStreams waits until no stream is open or ctx ends.
func (d *Drainer) waitStreams(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		d.streamsMu.Lock()
		d.streamsGone.Broadcast()
		d.streamsMu.Unlock()
	})
	defer stop()
	d.streamsMu.Lock()
	defer d.streamsMu.Unlock()
	for len(d.streams) > 0 && ctx.Err() == nil {
		d.streamsGone.Wait()
	}
	return ctx.Err()
}

// cutOffStreams closes the streams still open and returns how many there were.
func (d *Drainer) cutOffStreams() int {
	d.streamsMu.Lock()
	var open []*Stream
	for s := range d.streams {
		open = append(open, s)
	}
	d.streamsMu.Unlock()
	for _, s := range open {
		s.goAway()
		if s.cutOff != nil {
			s.cutOff()
		}
	}
	return len(open)
}
