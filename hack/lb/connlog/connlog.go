package connlog

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Ring is the HAProxy ring (its in-memory log, read with `show events Ring` on the
// admin socket) each connection is logged to when it ends, beside HAProxy's own
// messages (a server's state changing); each line begins with when it was logged
// (ISO 8601, microseconds).
const Ring = "connections"

// Format is the line HAProxy logs (its log-format): the client's address, when HAProxy
// accepted the connection (Unix seconds.milliseconds), backend/server, HAProxy's own
// address towards the server (the connection's source port on the node, for
// conntrack), the times it waited for a server, took to connect and lasted (ms; -1:
// never), and how it ended (two letters: who ended it, in which phase).
const Format = "%ci:%cp %Ts.%ms %b/%s %bi:%bp %Tw %Tc %Tt %ts"

// Config is the part of an HAProxy configuration that logs every connection: a ring
// section (global scope) and the lines of a defaults section.
func Config() (ring, defaults string) {
	return fmt.Sprintf("ring %s\n  format iso\n  maxlen 512\n  size 8388608\n", Ring),
		fmt.Sprintf("  log ring@%s local0\n  log-format \"%s\"\n", Ring, Format)
}

// Entry is one logged connection.
type Entry struct {
	Client   string    // the client's address, host:port
	Accepted time.Time // when HAProxy accepted it
	Backend  string
	Server   string // the server it went to; "<NOSRV>": none
	Source   string // HAProxy's address towards the server, host:port
	// Wait, Connect and Total are negative when the connection never got that far.
	Wait, Connect, Total time.Duration
	State                string // HAProxy's termination state, "--": a normal end
}

// Line is one line of the ring: when HAProxy logged it, and a connection (Conn) or one
// of HAProxy's own messages (Message).
type Line struct {
	At      time.Time
	Conn    *Entry
	Message string
}

// Down is the server (BACKEND/SERVER) a message of HAProxy's says went out of service
// ("Server port80/nap-node is DOWN, ..."); ok false for any other line.
func (l Line) Down() (server string, ok bool) {
	b, ok := strings.CutPrefix(l.Message, "Server ")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(strings.SplitN(b, ",", 2)[0], " is DOWN")
}

// ParseLine reads one line of the ring. A message that begins with a letter is
// HAProxy's own ("Server port80/nap-node is DOWN, ..."); any other is a connection, in
// Format.
func ParseLine(line string) (Line, error) {
	at, msg, _ := strings.Cut(strings.TrimSpace(line), " ")
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return Line{}, fmt.Errorf("connection log line %q: its time: %w", line, err)
	}
	if msg == "" {
		return Line{}, fmt.Errorf("connection log line %q: nothing logged", line)
	}
	if c := msg[0]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
		return Line{At: t, Message: msg}, nil
	}
	e, err := parse(msg)
	if err != nil {
		return Line{}, fmt.Errorf("connection log line %q: %w", line, err)
	}
	return Line{At: t, Conn: &e}, nil
}

// Parse reads one connection, logged in Format.
func Parse(line string) (Entry, error) {
	e, err := parse(line)
	if err != nil {
		return Entry{}, fmt.Errorf("connection log line %q: %w", line, err)
	}
	return e, nil
}

func parse(line string) (Entry, error) {
	f := strings.Fields(line)
	if len(f) != 8 {
		return Entry{}, fmt.Errorf("%d fields, want 8 (%s)", len(f), Format)
	}
	var e Entry
	e.Client, e.Source, e.State = f[0], f[3], f[7]
	sec, ms, ok := strings.Cut(f[1], ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	m, err2 := strconv.ParseInt(ms, 10, 64)
	if !ok || err1 != nil || err2 != nil || m < 0 || m > 999 {
		return Entry{}, fmt.Errorf("accept time %q", f[1])
	}
	e.Accepted = time.Unix(s, m*int64(time.Millisecond))
	var cut bool
	if e.Backend, e.Server, cut = strings.Cut(f[2], "/"); !cut || e.Backend == "" || e.Server == "" {
		return Entry{}, fmt.Errorf("backend/server %q", f[2])
	}
	for i, d := range []*time.Duration{&e.Wait, &e.Connect, &e.Total} {
		n, err := strconv.ParseInt(f[4+i], 10, 64)
		if err != nil {
			return Entry{}, fmt.Errorf("time %q: %w", f[4+i], err)
		}
		*d = time.Duration(n) * time.Millisecond
	}
	return e, nil
}

// String is what a test says of e.
func (e Entry) String() string {
	ms := func(d time.Duration) string {
		if d < 0 {
			return "never"
		}
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("to %s/%s from %s, connected %s, ended %s after %s", e.Backend, e.Server, e.Source, ms(e.Connect), e.State, ms(e.Total))
}
