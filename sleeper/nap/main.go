package nap

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Main runs the reference nap: it is the specification of the tiny binaries and the
// oracle of their tests. It returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	// Listen before parsing, as the binaries install their handler first: a SIGTERM that
	// arrives while nap starts must still end it (a handler also makes PID 1 hear it).
	sig := make(chan os.Signal, 1)
	for _, s := range Signals {
		signal.Notify(sig, s)
	}
	defer signal.Stop(sig)

	status := 0
	req, err := Parse(args)
	var bad *InvalidError
	switch {
	case errors.Is(err, ErrHelp):
		io.WriteString(stdout, Usage)
		return 0
	case errors.As(err, &bad):
		io.WriteString(stderr, InvalidPrefix+bad.Arg+InvalidSuffix)
		req, status = Request{Duration: Default}, ExitInvalid
	}

	if req.Infinite {
		s := <-sig // inf: until a signal, observing nothing
		return 128 + int(s.(syscall.Signal))
	}
	wait := "" // the verdict's wait field: none without --live
	if req.Live {
		if l, ok := readLive(); ok {
			req, wait = req.Raise(l), WaitLive
		} else {
			io.WriteString(stderr, LiveMissing)
			wait = WaitArgs
		}
	}
	if !req.Adaptive {
		if req.Duration == 0 {
			return status // a total of zero returns at once
		}
		// A fixed delay observes as an adaptive wait whose MAX is 0 (so its limit is
		// MIN, the delay) with QUIET at its default, its own ALLOW and the request
		// signal at ActiveWithin: it ends at the delay, whatever it sees.
		req.Quiet, req.Max, req.Requests = DefaultQuiet, 0, ActiveWithin
	}
	return waitFor(req, status, wait, stderr, sig)
}

// waitFor is the wait (see the package documentation): at least MIN, then, adaptive, until
// no request reached the pod for Quiet (at most Allow new inbound TCP connections, no
// data on an inbound one), at most Max (never less than MIN); a fixed delay (not
// req.Adaptive) waits MIN. A signal ends it as any sleep. status is a fixed delay's exit
// status. Its verdict goes to VerdictPath, with wait as its Wait.
func waitFor(req Request, status int, wait string, stderr io.Writer, sig <-chan os.Signal) int {
	limit := max(req.Max, req.Duration)
	if req.Adaptive {
		status = 0
	}
	log, err := os.OpenFile(VerdictPath, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil { // else no termination message to write to: the wait is the same
		defer log.Close()
		io.WriteString(log, VerdictHead)
	}
	now := time.Duration(0) // the clock: the readings' sleeps
	// sleep waits d, or until a signal: it reports the signal's exit status, or 0.
	sleep := func(d time.Duration) int {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case s := <-sig:
			return 128 + int(s.(syscall.Signal))
		case <-t.C:
			return 0
		}
	}
	// blind: the signals cannot be read. An adaptive wait says so and exits
	// ExitUnreadable; both wait until the limit, reading nothing more.
	blind := false
	unreadable := func(msg string) {
		blind = true
		if req.Adaptive {
			io.WriteString(stderr, msg)
			status = ExitUnreadable
		}
	}
	start, ok := readPassiveOpens()
	if !ok {
		unreadable(Unreadable)
	}
	n, last := start, start    // the count at the last reading, and when the window began
	window := time.Duration(0) // when the quiet window began, from start
	// base is when last was taken: at the window's start, and again each QUIET the
	// window goes on without traffic, so that ALLOW is the background of any QUIET.
	base := time.Duration(0)
	// The last readings that saw new connections, and requests over kept ones.
	lastNew, lastKept := time.Duration(0), time.Duration(0)
readings:
	for reading := 1; ; reading++ {
		step := min(PollInterval, limit-now) // the last sleep ends at the limit
		if code := sleep(step); code != 0 {
			return code // the verdict stays cut
		}
		now += step
		if !blind {
			if n, ok = readPassiveOpens(); !ok {
				unreadable(Unreadable)
			}
		}
		if !blind {
			conns := n-last > uint64(req.Allow) // unsigned: a counter that went back is traffic too
			traffic := conns
			quiet := now-window >= req.Quiet && now >= req.Duration
			// The sockets, with --requests (WITHIN of a millisecond or more): at every
			// SocketsEvery-th reading, and before the wait ends quiet, unless the count
			// already says traffic.
			if req.Requests >= time.Millisecond && !traffic && (quiet || reading%SocketsEvery == 0) {
				active, ok := ReadSockets(req.Requests)
				if !ok {
					unreadable(UnreadableSockets)
				}
				traffic = active > 0
			}
			switch {
			case blind:
			case traffic:
				window, last, base = now, n, now
				if conns {
					lastNew = now
				} else {
					lastKept = now
				}
			case quiet:
				break readings
			case now-base >= req.Quiet:
				last, base = n, now
			}
		}
		if now >= limit {
			break
		}
	}
	// The verdict: blind; late, when a reading saw new connections less than QUIET
	// before the end; held, when one saw only requests over kept connections then; or
	// quiet (a window that began at the start saw nothing).
	v := Verdict{Kind: Quiet, End: now, Last: window, Conns: n - start, Total: start, Kept: lastKept, Wait: wait}
	switch {
	case blind:
		v.Kind = Blind
	case lastNew > 0 && now-lastNew < req.Quiet:
		v.Kind = Late
	case window > 0 && now-window < req.Quiet:
		v.Kind = Held
	}
	if log != nil {
		io.WriteString(log, v.Tail())
	}
	return status
}

// readLive reads LivePath, one read of up to LiveRead bytes, and the live wait in it.
func readLive() (Request, bool) {
	f, err := os.Open(LivePath)
	if err != nil {
		return Request{}, false
	}
	defer f.Close()
	buf := make([]byte, LiveRead)
	n, err := f.Read(buf)
	if err != nil && !errors.Is(err, io.EOF) {
		return Request{}, false
	}
	return ParseLive(buf[:n])
}

// readPassiveOpens reads SnmpPath, one read of up to SnmpRead bytes (the kernel gives
// the whole table at once), and PassiveOpens in it.
func readPassiveOpens() (uint64, bool) {
	f, err := os.Open(SnmpPath)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	buf := make([]byte, SnmpRead)
	n, err := f.Read(buf)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, false
	}
	return PassiveOpens(buf[:n])
}
