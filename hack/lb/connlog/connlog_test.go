package connlog

import (
	"strings"
	"testing"
	"time"
)

// TestParse: lines as HAProxy 2.6 logged them with Format (one connection refused by
// its server, one served), and broken ones, each named.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		line string
		want Entry
		err  string
	}{
		{line: "127.0.0.1:36372 1795909470.068 b/s2 127.0.0.1:41102 1 -1 1 SC",
			want: Entry{Client: "127.0.0.1:36372", Accepted: time.UnixMilli(1795909470068), Backend: "b", Server: "s2", Source: "127.0.0.1:41102",
				Wait: time.Millisecond, Connect: -time.Millisecond, Total: time.Millisecond, State: "SC"}},
		{line: "10.77.1.1:36396 1795909470.257 port80/nap-node2 10.77.1.1:40506 1 0 4 --",
			want: Entry{Client: "10.77.1.1:36396", Accepted: time.UnixMilli(1795909470257), Backend: "port80", Server: "nap-node2", Source: "10.77.1.1:40506",
				Wait: time.Millisecond, Total: 4 * time.Millisecond, State: "--"}},
		{line: "127.0.0.1:1 1795909470.068 b/s2 127.0.0.1:2 1 -1 1", err: "7 fields"},
		{line: "127.0.0.1:1 1795909470 b/s2 127.0.0.1:2 1 -1 1 SC", err: `accept time "1795909470"`},
		{line: "127.0.0.1:1 1795909470.068 b 127.0.0.1:2 1 -1 1 SC", err: `backend/server "b"`},
		{line: "127.0.0.1:1 1795909470.068 b/s 127.0.0.1:2 1 x 1 SC", err: `time "x"`},
		{line: "127.0.0.1:1 1795909470.068 / 127.0.0.1:2 1 1 1 SC", err: `backend/server "/"`},
	} {
		got, err := Parse(c.line)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.line) {
				t.Errorf("%q: error %v, want one naming the line and %q", c.line, err, c.err)
			}
			continue
		}
		if err != nil || !got.Accepted.Equal(c.want.Accepted) {
			t.Errorf("%q: %+v, %v; want %+v", c.line, got, err, c.want)
			continue
		}
		got.Accepted = c.want.Accepted
		if got != c.want {
			t.Errorf("%q: %+v, want %+v", c.line, got, c.want)
		}
	}
}

// TestParseLine: lines of the ring as HAProxy 2.6 wrote them (format iso): a server's
// state change, a connection; a line without its time, or with a broken connection, is
// named.
func TestParseLine(t *testing.T) {
	down := `Server b/s2 is DOWN, reason: Layer4 connection problem, info: "Connection refused", check duration: 1ms. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.`
	l, err := ParseLine("2026-11-28T23:49:19.300747+00:00 " + down)
	if err != nil || l.Conn != nil || l.Message != down || !l.At.Equal(time.Date(2026, 11, 28, 23, 49, 19, 300747000, time.UTC)) {
		t.Errorf("a server's state: %+v, %v", l, err)
	}
	if srv, ok := l.Down(); !ok || srv != "b/s2" {
		t.Errorf("Down() = %q, %v; want b/s2", srv, ok)
	}
	up, _ := ParseLine("2026-11-28T23:49:21.3+00:00 Server b/s2 is UP, reason: Layer4 check passed")
	if srv, ok := up.Down(); ok {
		t.Errorf("a server back up: Down() = %q, true", srv)
	}
	l, err = ParseLine("2026-11-28T23:49:20.939125+00:00 127.0.0.1:57118 1795909760.931 b/s1 127.0.0.1:41948 1 2 7 --\n")
	if err != nil || l.Message != "" || l.Conn == nil || l.Conn.Client != "127.0.0.1:57118" || l.Conn.Server != "s1" || l.Conn.Connect != 2*time.Millisecond {
		t.Errorf("a connection: %+v, %v", l, err)
	}
	if srv, ok := l.Down(); ok {
		t.Errorf("a connection: Down() = %q, true", srv)
	}
	for _, c := range []struct{ line, err string }{
		{"127.0.0.1:57118 1795909760.931 b/s1 127.0.0.1:41948 1 2 7 --", "its time"},
		{"2026-11-28T23:49:20.939125+00:00", "nothing logged"},
		{"2026-11-28T23:49:20.939125+00:00 127.0.0.1:57118 b/s1", "2 fields"},
	} {
		if _, err := ParseLine(c.line); err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.line) {
			t.Errorf("%q: %v, want an error naming it and %q", c.line, err, c.err)
		}
	}
}

// FuzzParse: no line panics, and a line that parses has a client, a backend, a server
// and a state.
func FuzzParse(f *testing.F) {
	f.Add("127.0.0.1:36372 1795909470.068 b/s2 127.0.0.1:41102 1 -1 1 SC")
	f.Fuzz(func(t *testing.T, line string) {
		e, err := Parse(line)
		if err == nil && (e.Client == "" || e.State == "" || e.Backend == "" || e.Server == "") {
			t.Errorf("%q: %+v", line, e)
		}
	})
}

// FuzzParseLine: no line of the ring panics; one that parses is a connection or a
// message, not both, and has its time.
func FuzzParseLine(f *testing.F) {
	f.Add("2026-11-28T23:49:20.939125+00:00 127.0.0.1:57118 1795909760.931 b/s1 127.0.0.1:41948 1 2 7 --")
	f.Add("2026-11-28T23:49:19.300747+00:00 Server b/s2 is DOWN")
	f.Fuzz(func(t *testing.T, line string) {
		l, err := ParseLine(line)
		if err == nil && ((l.Conn == nil) == (l.Message == "") || l.At.IsZero()) {
			t.Errorf("%q: %+v", line, l)
		}
	})
}
