//go:build linux && amd64

package sleeper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nap-k8s/nap/sleeper/nap"
)

// Host (x86-64) system call numbers seen by the tracer: the arm64 binary's calls arrive
// as qemu-user's host calls, with the same arguments.
const (
	hostWrite     = 1
	hostNanosleep = 35
	hostExit      = 60
	hostExitGroup = 231

	ptraceOExitKill = 0x100000
)

// observation is what a binary asks of the kernel, up to the first sleep.
type observation struct {
	Help   bool  // wrote to stdout (the usage)
	Stderr bool  // wrote to stderr (the invalid-argument message, or the live wait's)
	Sleep  int64 // the nanoseconds of the first nanosleep
	Exit   int   // exit status, when it exits without sleeping; -1 otherwise
}

// observe runs cmd under ptrace and stops it at its first sleep, without waiting.
func observe(cmd *exec.Cmd) (obs observation, err error) {
	runtime.LockOSThread() // ptrace requests must come from the tracing thread
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return obs, err
	}
	pid := cmd.Process.Pid
	defer func() {
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	}()
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil { // stopped at exec
		return obs, err
	}
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACESYSGOOD|ptraceOExitKill); err != nil {
		return obs, err
	}

	obs.Exit = -1
	entry, sig := true, 0
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.PtraceSyscall(pid, sig); err != nil {
			return obs, err
		}
		sig = 0
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return obs, err
		}
		switch {
		case ws.Exited():
			return obs, fmt.Errorf("exited with %d before sleeping or calling exit", ws.ExitStatus())
		case ws.Signaled():
			return obs, fmt.Errorf("killed by %v", ws.Signal())
		case ws.Stopped() && ws.StopSignal() == syscall.SIGTRAP|0x80:
			if entry {
				var regs syscall.PtraceRegs
				if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
					return obs, err
				}
				switch regs.Orig_rax {
				case hostWrite:
					obs.Help = obs.Help || regs.Rdi == 1
					obs.Stderr = obs.Stderr || regs.Rdi == 2
				case hostNanosleep:
					var ts [16]byte
					if _, err := syscall.PtracePeekData(pid, uintptr(regs.Rdi), ts[:]); err != nil {
						return obs, err
					}
					sec, nsec := int64(binary.LittleEndian.Uint64(ts[:8])), int64(binary.LittleEndian.Uint64(ts[8:]))
					if sec > math.MaxInt64/nsPerSecond || nsec >= nsPerSecond {
						return obs, fmt.Errorf("nanosleep{%d, %d}", sec, nsec)
					}
					obs.Sleep = sec*nsPerSecond + nsec
					return obs, nil
				case hostExit, hostExitGroup:
					obs.Exit = int(regs.Rdi)
					return obs, nil
				}
			}
			entry = !entry
		case ws.Stopped():
			sig = int(ws.StopSignal()) // not ours: deliver it
		}
	}
	return obs, errors.New("no sleep or exit within 20s")
}

// dropArgv rewrites the stack of a process stopped at exec whose argv is one string:
// argc 1, argv[0], NULL, envp... becomes argc 0, NULL, envp..., one slot higher.
func dropArgv(pid int) error {
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
		return err
	}
	var argc [8]byte
	if _, err := syscall.PtracePeekData(pid, uintptr(regs.Rsp), argc[:]); err != nil {
		return err
	}
	if n := binary.LittleEndian.Uint64(argc[:]); n != 1 {
		return fmt.Errorf("argc %d, want 1 to drop", n)
	}
	regs.Rsp += 8
	if _, err := syscall.PtracePokeData(pid, uintptr(regs.Rsp), make([]byte, 8)); err != nil {
		return err
	}
	return syscall.PtraceSetRegs(pid, &regs)
}

// expect is what the specification says a binary for arch must ask for.
func expect(args []string) observation {
	req, err := nap.Parse(args)
	var bad *nap.InvalidError
	switch {
	case errors.Is(err, nap.ErrHelp):
		return observation{Help: true, Exit: 0}
	case errors.As(err, &bad):
		// The default, a fixed delay: its first reading's sleep.
		return observation{Stderr: true, Sleep: int64(min(nap.PollInterval, nap.Default)), Exit: -1}
	case req.Infinite:
		return observation{Sleep: math.MaxInt64, Exit: -1} // the longest nanosleep, looped
	}
	var stderr bool // --live: this host's live wait raises the arguments, or is said missing
	if req.Live {
		text, _ := os.ReadFile(nap.LivePath)
		if l, ok := nap.ParseLive(text[:min(len(text), nap.LiveRead)]); ok {
			req = req.Raise(l)
		} else {
			stderr = true
		}
	}
	switch {
	case req.Adaptive:
		// It reads this host's /proc/net/snmp, then sleeps one poll interval, or to
		// its limit if that comes first.
		return observation{Stderr: stderr, Sleep: int64(min(nap.PollInterval, max(req.Max, req.Duration))), Exit: -1}
	case req.Duration == 0:
		return observation{Stderr: stderr, Exit: 0} // no sleep call at all
	}
	// A fixed delay reads the pod's traffic as the adaptive wait does: one poll interval,
	// or the delay if shorter.
	return observation{Stderr: stderr, Sleep: int64(min(nap.PollInterval, req.Duration)), Exit: -1}
}

// fuzzArgs turns a fuzz input into an argument vector: lines, at most 4, no NUL.
func fuzzArgs(s string) []string {
	s = strings.ReplaceAll(s, "\x00", "")
	if s == "" {
		return nil
	}
	args := strings.Split(s, "\n")
	return args[:min(len(args), 4)]
}

// FuzzDifferential: for any argument vector, each binary asks the kernel for exactly what
// the specification (Parse) says, observed with ptrace, never waited for.
// maxFuzzInput bounds fuzz inputs, as FuzzParse's does: past a few kilobytes the
// fuzzer's time goes to copying, not to new paths.
const maxFuzzInput = 4096

func FuzzDifferential(f *testing.F) {
	for _, tc := range conformance {
		f.Add(strings.Join(tc.args, "\n"))
	}
	for _, tc := range adaptiveCases {
		f.Add(strings.Join(tc.args, "\n"))
	}
	for _, tc := range requestCases {
		f.Add(strings.Join(tc.args, "\n"))
	}
	for _, s := range []string{"1h1m1s1ms1us1ns", "0.00000000001666666666666666666667m", "0.00000000001666666666666666666666m",
		"0.0000000000027777777777777778h", "9223372036854775807ns", "9223372036854775807ns\n0", "2562047h47m16.854775807s",
		"2562047h47m16.854775808s", "18446744073709551616ns", "1844674407370955161.6s", "000000000000000000000001s", "1.5h\n30m\ninf",
		"-h\nx", "1\n2\n3\n4", "1s.5", ".s", "5s5", "1ms1m", "1mss", "  ", "\t1", "0\n0ns", "inf\ninf", "inf\n0",
		"--quiet\n1s", "5s\n--max\n1m\n--allow\n3", "--quiet", "1s\n--max", "--max\ninf", "--allow\n--quiet\n1", "inf\n--quiet\n0",
		"--requests", "--requests\n1s\n--requests", "--requests\n0", "2s\n--requests\n1.5\n--max\n3s",
		"--live", "--live\n--live", "inf\n--live", "--live\ninf", "--quiet\n--live", "--live\nx", "0\n--live", "--live\n-h"} {
		f.Add(s)
	}
	ims := impls(f)[1:]
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzInput {
			t.Skip() // see maxFuzzInput
		}
		args := fuzzArgs(s)
		for _, im := range ims {
			got, err := observe(im.command(args...))
			if err != nil {
				t.Fatalf("%s %q: %v", im.name, args, err)
			}
			if want := expect(args); got != want {
				t.Errorf("%s %q: asked for %+v, the specification says %+v", im.name, args, got, want)
			}
		}
	})
}

// TestNoArgv: with argc 0 (kernels before 5.18 allow an empty argv), argv[0] is the NULL
// that ends argv and the environment follows it. nap must see no argument and sleep the
// default, not read the environment ("0.3" here) as durations, nor crash (the
// reference's os.Args is empty). This kernel inserts an argv[0] itself, so the stack is
// rewritten before the first instruction: with ptrace at exec natively, through
// qemu-user's gdb stub for the other architecture.
func TestNoArgv(t *testing.T) {
	for _, im := range impls(t) {
		t.Run(im.name, func(t *testing.T) {
			cmd := im.command()
			cmd.Env = []string{"0.3"}
			start := startNoArgv
			if im.qemu != "" {
				start = func(cmd *exec.Cmd) error {
					g, err := startUnderGDBStub(cmd, false)
					if err == nil {
						if err = g.dropArgvARM64(); err != nil {
							cmd.Process.Kill()
							cmd.Wait()
						}
					}
					return err
				}
			}
			if err := start(cmd); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				t.Fatalf("with argc 0 it ended after less than 2s: %v", err)
			case <-time.After(2 * time.Second):
			}
			cmd.Process.Signal(syscall.SIGTERM)
			var exit *exec.ExitError
			if err := <-done; !errors.As(err, &exit) || exit.ExitCode() != 143 {
				t.Errorf("with argc 0, after SIGTERM: %v, want exit status 143", err)
			}
		})
	}
}

// startNoArgv starts cmd, whose argv is its path alone, with argc 0 (see dropArgv).
func startNoArgv(cmd *exec.Cmd) error {
	runtime.LockOSThread() // ptrace requests must come from the tracing thread
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil { // stopped at exec
		return err
	}
	err := dropArgv(pid)
	if derr := syscall.PtraceDetach(pid); err == nil {
		err = derr
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
	return err
}
