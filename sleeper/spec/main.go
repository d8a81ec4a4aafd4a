package spec

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
