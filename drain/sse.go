package drain

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// EventStream serves server-sent events (text/event-stream) as a Stream of its
// Drainer: when the drain asks it to leave, End sends its last event and a retry: so
// that the browser's EventSource (or any client) reconnects, to another pod, after
// that long, resuming from the last id it saw (Last-Event-ID), and the response ends
// cleanly: no broken stream.
type EventStream struct {
	*Stream
	w   http.ResponseWriter
	f   *http.ResponseController
	buf []byte
}

// EventStream starts an event stream on w: the headers are sent at once.
func (d *Drainer) EventStream(w http.ResponseWriter) (*EventStream, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return nil, fmt.Errorf("drain: an event stream needs a flushing ResponseWriter: %w", err)
	}
	return &EventStream{Stream: d.Stream(nil), w: w, f: rc}, nil
}

// Send sends one event: its id (resent by the client as Last-Event-ID when it
// reconnects; "" for none), its type ("" for message) and its data, one data: line
// per line.
func (e *EventStream) Send(id, event, data string) error {
	if strings.ContainsAny(id, "\r\n") || strings.ContainsAny(event, "\r\n") {
		return errors.New("drain: an event's id and type have no line breaks")
	}
	b := e.buf[:0]
	if id != "" {
		b = append(append(append(b, "id: "...), id...), '\n')
	}
	if event != "" {
		b = append(append(append(b, "event: "...), event...), '\n')
	}
	for {
		line, rest, more := strings.Cut(data, "\n")
		b = append(append(append(b, "data: "...), line...), '\n')
		if !more {
			break
		}
		data = rest
	}
	b = append(b, '\n')
	e.buf = b
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	return e.f.Flush()
}

// GoingAway is the type of the last event End sends.
const GoingAway = "going-away"

// End sends the last event — type GoingAway, with retry: after — and marks the stream
// done: return from the handler then, and the response ends cleanly.
func (e *EventStream) End(after time.Duration) error {
	defer e.Done()
	_, err := fmt.Fprintf(e.w, "event: %s\nretry: %d\ndata: server shutting down\n\n", GoingAway, after.Milliseconds())
	if err == nil {
		err = e.f.Flush()
	}
	return err
}
