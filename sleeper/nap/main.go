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
		req, status = Request{Duration: Default}, 2
	}

	if req.Adaptive && !req.Infinite {
		return adaptive(req, stderr, sig)
	}
	var timeout <-chan time.Time
	if !req.Infinite {
		// Go's timers run on the monotonic clock, so a stop/continue cannot shorten this.
		t := time.NewTimer(req.Duration)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case s := <-sig:
		return 128 + int(s.(syscall.Signal))
	case <-timeout:
		return status
	}
}

// adaptive is the adaptive wait (see the package documentation): at least MIN, then until
// no request reached the pod for Quiet (at most Allow new inbound TCP connections, no
// data on an inbound one), at most Max (never less than MIN). A signal ends it as any
// sleep.
func adaptive(req Request, stderr io.Writer, sig <-chan os.Signal) int {
	limit := max(req.Max, req.Duration)
	now := time.Duration(0) // the clock: PollInterval per reading
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
	unreadable := func(msg string) int {
		io.WriteString(stderr, msg)
		if code := sleep(limit - now); code != 0 {
			return code
		}
		return ExitUnreadable
	}
	last, ok := readPassiveOpens()
	if !ok {
		return unreadable(Unreadable)
	}
	window := time.Duration(0) // when the quiet window began, from start
	for reading := 1; ; reading++ {
		if code := sleep(PollInterval); code != 0 {
			return code
		}
		now += PollInterval
		n, ok := readPassiveOpens()
		if !ok {
			return unreadable(Unreadable)
		}
		traffic := n-last > uint64(req.Allow) // unsigned: a counter that went back is traffic too
		quiet := now-window >= req.Quiet && now >= req.Duration
		// The sockets, with --requests (WITHIN of a millisecond or more): at every
		// SocketsEvery-th reading, and before the wait ends quiet, unless the count
		// already says traffic.
		if req.Requests >= time.Millisecond && !traffic && (quiet || reading%SocketsEvery == 0) {
			active, ok := ReadSockets(req.Requests)
			if !ok {
				return unreadable(UnreadableSockets)
			}
			traffic = active > 0
		}
		if traffic {
			window, last = now, n
		} else if quiet {
			return 0
		}
		if now >= limit {
			return 0
		}
	}
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
