package sleeper

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nap-k8s/nap/sleeper/nap"
)

func invalidMsg(arg string) string {
	return "nap: invalid duration \"" + arg + "\"\nnap: sleeping the default 10s\n"
}

var usageText = nap.Usage

// conformance is the contract as a table. Every implementation must produce exactly the
// exit status and output, and end no earlier than sleep (and not much later). A case
// with a signal sends it after `after` and then expects the process to end at once.
var conformance = []struct {
	name   string
	args   []string
	signal syscall.Signal
	after  time.Duration
	code   int
	stdout string
	stderr string
	sleep  time.Duration
}{
	{name: "default", args: nil, sleep: 10 * time.Second},
	{name: "zero", args: []string{"0"}},
	{name: "zeros", args: []string{"0", "0ms0ns"}},
	{name: "seconds fraction", args: []string{"0.25"}, sleep: 250 * time.Millisecond},
	{name: "leading dot", args: []string{".2"}, sleep: 200 * time.Millisecond},
	{name: "trailing dot", args: []string{"0."}},
	{name: "ms", args: []string{"150ms"}, sleep: 150 * time.Millisecond},
	{name: "s unit", args: []string{"0.1s"}, sleep: 100 * time.Millisecond},
	{name: "us", args: []string{"100000us"}, sleep: 100 * time.Millisecond},
	{name: "ns", args: []string{"100000000ns"}, sleep: 100 * time.Millisecond},
	{name: "minutes", args: []string{"0.001m"}, sleep: 60 * time.Millisecond},
	{name: "hours", args: []string{"0.00005h"}, sleep: 180 * time.Millisecond},
	{name: "two arguments", args: []string{"0.1s", "100ms"}, sleep: 200 * time.Millisecond},
	{name: "two terms", args: []string{"50ms50ms"}, sleep: 100 * time.Millisecond},
	{name: "zero minutes", args: []string{"0m0.2s"}, sleep: 200 * time.Millisecond},
	{name: "below a nanosecond", args: []string{"0.0000000001s"}},
	{name: "help", args: []string{"-h"}, stdout: usageText},
	{name: "long help", args: []string{"--help"}, stdout: usageText},
	{name: "help after a duration", args: []string{"5", "-h"}, stdout: usageText},
	{name: "inf until SIGTERM", args: []string{"inf"}, signal: syscall.SIGTERM, after: 300 * time.Millisecond, code: 143},
	{name: "infinity until SIGINT", args: []string{"infinity"}, signal: syscall.SIGINT, after: 300 * time.Millisecond, code: 130},
	{name: "SIGTERM ends a sleep", args: []string{"30"}, signal: syscall.SIGTERM, after: 300 * time.Millisecond, code: 143},
	{name: "SIGHUP ends a sleep", args: []string{"30"}, signal: syscall.SIGHUP, after: 300 * time.Millisecond, code: 129},
	{name: "SIGQUIT ends a sleep", args: []string{"30"}, signal: syscall.SIGQUIT, after: 300 * time.Millisecond, code: 131},
	{name: "SIGUSR1 ends inf", args: []string{"inf"}, signal: syscall.SIGUSR1, after: 300 * time.Millisecond, code: 138},
	{name: "SIGALRM ends a sleep", args: []string{"30"}, signal: syscall.SIGALRM, after: 300 * time.Millisecond, code: 142},
	{name: "SIGTERM ends the default sleep of an invalid argument", args: []string{"x"}, signal: syscall.SIGTERM, after: 300 * time.Millisecond, code: 143, stderr: invalidMsg("x")},
	{name: "empty", args: []string{""}, code: 2, stderr: invalidMsg(""), sleep: 10 * time.Second},
	{name: "negative", args: []string{"-5"}, code: 2, stderr: invalidMsg("-5"), sleep: 10 * time.Second},
	{name: "unknown unit", args: []string{"10sec"}, code: 2, stderr: invalidMsg("10sec"), sleep: 10 * time.Second},
	{name: "exponent", args: []string{"1e3"}, code: 2, stderr: invalidMsg("1e3"), sleep: 10 * time.Second},
	{name: "overflow", args: []string{"9223372036854775808ns"}, code: 2, stderr: invalidMsg("9223372036854775808ns"), sleep: 10 * time.Second},
	{name: "overflowing sum", args: []string{"9223372036854775807ns", "1ns"}, code: 2, stderr: invalidMsg("1ns"), sleep: 10 * time.Second},
	{name: "unknown flag", args: []string{"--verbose"}, code: 2, stderr: invalidMsg("--verbose"), sleep: 10 * time.Second},
	{name: "missing unit", args: []string{"1m30"}, code: 2, stderr: invalidMsg("1m30"), sleep: 10 * time.Second},
	{name: "two dots", args: []string{"1.2.3"}, code: 2, stderr: invalidMsg("1.2.3"), sleep: 10 * time.Second},
	{name: "dot alone", args: []string{"."}, code: 2, stderr: invalidMsg("."), sleep: 10 * time.Second},
	{name: "plus sign", args: []string{"+5"}, code: 2, stderr: invalidMsg("+5"), sleep: 10 * time.Second},
	{name: "micro sign", args: []string{"1µs"}, code: 2, stderr: invalidMsg("1µs"), sleep: 10 * time.Second},
	{name: "upper-case INF", args: []string{"INF"}, code: 2, stderr: invalidMsg("INF"), sleep: 10 * time.Second},
	{name: "inf with a number", args: []string{"inf5"}, code: 2, stderr: invalidMsg("inf5"), sleep: 10 * time.Second},
	{name: "valid then invalid", args: []string{"1s", "1h2x"}, code: 2, stderr: invalidMsg("1h2x"), sleep: 10 * time.Second},
	{name: "invalid before help", args: []string{"bad", "-h"}, code: 2, stderr: invalidMsg("bad"), sleep: 10 * time.Second},
	{name: "inf then invalid sleeps only the default", args: []string{"inf", "x"}, code: 2, stderr: invalidMsg("x"), sleep: 10 * time.Second},
}

// runtimeDeath tells whether a run ended in the Go runtime's own report of a signal
// (a register and goroutine dump), which only comes before the program's main.
func runtimeDeath(o outcome) bool {
	return strings.Contains(o.stderr, "\nPC=") && strings.Contains(o.stderr, "\ngoroutine ")
}

// outcome is what one run did.
type outcome struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
	after          time.Duration // when the signal was sent (from the start; not sent: when due)
	err            error
}

// run runs cmd, signalling it after `after` when sig is set; underQemu first waits for
// the guest to be asleep (see waitAsleep).
func run(cmd *exec.Cmd, sig syscall.Signal, after time.Duration, underQemu bool) outcome {
	return runWith(cmd, sig, after, underQemu, nil)
}

// runWith is run; with sockets set, cmd is an arm64 guest under qemu-user, run through
// its stub from the calling thread, that gets sockets as its netlink socket (see
// serveSockets).
func runWith(cmd *exec.Cmd, sig syscall.Signal, after time.Duration, underQemu bool, sockets *os.File) outcome {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	stubDone := make(chan error, 1)
	if sockets == nil {
		if err := cmd.Start(); err != nil {
			return outcome{err: err}
		}
		stubDone <- nil
	} else {
		cmd.ExtraFiles = []*os.File{sockets}
		g, err := startUnderGDBStub(cmd, true)
		if err != nil {
			return outcome{err: err}
		}
		go func() { stubDone <- g.serveSockets(armSocketPC, armClosePC, 3) }()
	}
	// When the signal went: on a loaded machine the timer fires late, and under qemu
	// it waits for the guest to sleep; the process answers from then, not from after.
	var sent atomic.Int64
	if sig != 0 {
		pid := cmd.Process.Pid
		timer := time.AfterFunc(after, func() {
			if underQemu {
				waitAsleep(pid)
			}
			sent.Store(int64(time.Since(start)))
			cmd.Process.Signal(sig)
		})
		defer timer.Stop()
	}
	err := cmd.Wait()
	o := outcome{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start), after: max(after, time.Duration(sent.Load()))}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		o.code = exit.ExitCode()
	case err != nil:
		o.err = err
	}
	if err := <-stubDone; err != nil && o.err == nil {
		o.err = fmt.Errorf("qemu's stub: %w", err)
	}
	return o
}

// waitAsleep waits (up to 5s) until process pid (qemu-user running the guest on its main
// thread) blocks in the guest's sleep: qemu-user can
// take longer than a case's `after` to start the guest under a parallel load, and a
// signal then would kill qemu itself, not test the program.
func waitAsleep(pid int) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		w, err := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
		if err != nil {
			return
		}
		if s := string(w); strings.Contains(s, "sleep") || strings.Contains(s, "pause") || strings.Contains(s, "poll") {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestConformance(t *testing.T) {
	ims := impls(t)
	// Every run starts at once (most of them sleep), then each is checked in a subtest.
	got := make([][]outcome, len(ims))
	var wg sync.WaitGroup
	for i, im := range ims {
		got[i] = make([]outcome, len(conformance))
		for j, tc := range conformance {
			wg.Go(func() {
				got[i][j] = run(im.command(tc.args...), tc.signal, tc.after, im.qemu != "")
				// A signal that reached the reference (a Go program) before its main ran
				// was the Go runtime's to handle, not the program's: under a heavy load
				// its start can outlast `after`. Run such a case again, signalling later.
				for after := tc.after; tc.signal != 0 && runtimeDeath(got[i][j]) && after < 8*time.Second; {
					after *= 4
					got[i][j] = run(im.command(tc.args...), tc.signal, after, im.qemu != "")
				}
			})
		}
	}
	wg.Wait()
	for i, im := range ims {
		for j, tc := range conformance {
			t.Run(im.name+"/"+tc.name, func(t *testing.T) {
				o := got[i][j]
				if o.err != nil {
					t.Fatal(o.err)
				}
				if o.code != tc.code {
					t.Errorf("exit status %d, want %d", o.code, tc.code)
				}
				if o.stdout != tc.stdout {
					t.Errorf("stdout %q, want %q", o.stdout, tc.stdout)
				}
				if o.stderr != tc.stderr {
					t.Errorf("stderr %q, want %q", o.stderr, tc.stderr)
				}
				lo, hi := tc.sleep, tc.sleep+im.slack
				if tc.signal != 0 {
					lo, hi = o.after, o.after+im.slack
				}
				if o.elapsed < lo || o.elapsed > hi {
					t.Errorf("ended after %v, want %v to %v", o.elapsed, lo, hi)
				}
			})
		}
	}
}
