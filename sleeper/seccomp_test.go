package sleeper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/nap-k8s/nap/sleeper/nap"
)

// denyEnv makes the test binary a launcher: it installs a seccomp filter that fails some
// system calls (comma-separated numbers) with EPERM, as a container runtime's profile
// may, then execs the rest of its arguments. A real filter, in the kernel, on the real
// binary. Under qemu-user the guest's calls are made as the host's: the same filter
// denies them.
const denyEnv = "NAP_TEST_DENY_SYSCALL"

// hostSyscall are the numbers the launcher and the tests need, for the host's
// architecture.
type hostSyscall struct {
	seccomp, exitGroup, nanosleep, clockNanosleep, ppoll, openat, socket uintptr
}

var hostSyscalls = map[string]hostSyscall{
	"amd64": {seccomp: 317, exitGroup: 231, nanosleep: 35, clockNanosleep: 230, ppoll: 271, openat: 257, socket: 41},
	"arm64": {seccomp: 277, exitGroup: 94, nanosleep: 101, clockNanosleep: 115, ppoll: 73, openat: 56, socket: 198},
}

// denied returns the command that runs cmd under the launcher, with nrs denied.
func denied(t *testing.T, cmd *exec.Cmd, nrs ...uintptr) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, nr := range nrs {
		list = append(list, strconv.Itoa(int(nr)))
	}
	c := exec.Command(self, append([]string{cmd.Path}, cmd.Args[1:]...)...)
	c.Env = append(os.Environ(), denyEnv+"="+strings.Join(list, ","))
	return c
}

// launchDenied runs in TestMain's process when denyEnv is set; it never returns.
func launchDenied() {
	runtime.LockOSThread()
	var nrs []uint32
	var err error
	for _, f := range strings.Split(os.Getenv(denyEnv), ",") {
		var nr uint64
		if nr, err = strconv.ParseUint(f, 10, 32); err != nil {
			break
		}
		nrs = append(nrs, uint32(nr))
	}
	if err == nil {
		err = denySyscalls(nrs)
	}
	if err == nil {
		os.Unsetenv(denyEnv)
		err = syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
	}
	fmt.Fprintln(os.Stderr, "seccomp launcher:", err)
	os.Exit(125)
}

// denySyscalls installs, for every thread and what they exec, a filter that fails the
// system calls nrs with EPERM and allows the rest.
func denySyscalls(nrs []uint32) error {
	type sockFilter struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	prog := []sockFilter{{code: 0x20, k: 0}} // ld [0]: the system call number
	for i, nr := range nrs {
		// jeq nr: to the ERRNO return, past the other checks and the ALLOW
		prog = append(prog, sockFilter{code: 0x15, jt: uint8(len(nrs) - i), jf: 0, k: nr})
	}
	prog = append(prog,
		sockFilter{code: 0x06, k: 0x7fff0000},     // ret ALLOW
		sockFilter{code: 0x06, k: 0x00050000 | 1}, // ret ERRNO(EPERM)
	)
	fprog := struct {
		len    uint16
		filter *sockFilter
	}{len: uint16(len(prog)), filter: &prog[0]}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0, 0, 0, 0); e != 0 {
		return e
	}
	nums, ok := hostSyscalls[runtime.GOARCH]
	if !ok {
		return errors.New("no seccomp system call number for " + runtime.GOARCH)
	}
	// SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC
	if _, _, e := syscall.RawSyscall(nums.seccomp, 1, 1, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}

// A profile that denies exit_group: the binary must not run on past its exit call (the
// next instructions would read the environment as durations and sleep again, forever);
// it traps and dies at once.
func TestExitDenied(t *testing.T) {
	nums, ok := hostSyscalls[runtime.GOARCH]
	if !ok {
		t.Fatalf("no system call numbers for %s", runtime.GOARCH)
	}
	for _, im := range impls(t) {
		if im.arch == "" {
			continue // the reference is Go's runtime, not ours
		}
		// Under qemu-user the guest's exit_group is the host's: the filter denies both.
		want := map[string]syscall.Signal{"amd64": syscall.SIGILL, "arm64": syscall.SIGTRAP}[im.arch]
		for _, args := range [][]string{{"0"}, {"-h"}, {"0.05s"}} {
			cmd := denied(t, im.command(args...), nums.exitGroup)
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("%s %v with exit_group denied still runs after 10 s", im.name, args)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("%s %v: %v", im.name, args, err)
			}
			ws := ee.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != want {
				t.Errorf("%s %v with exit_group denied: %v after %v, want killed by %v", im.name, args, ws, time.Since(start), want)
			}
		}
	}
}

// TestSleepRefused: a profile that refuses nanosleep (and then clock_nanosleep) never
// shortens the delay: the binaries say so on stderr and wait another way, the whole
// time. Refused everything, they exit 1 at once, said three times, not a silent 0. And
// inf with its sleep call refused waits without spinning.
func TestSleepRefused(t *testing.T) {
	nums, ok := hostSyscalls[runtime.GOARCH]
	if !ok {
		t.Fatalf("no system call numbers for %s", runtime.GOARCH)
	}
	const request = 600 * time.Millisecond
	for _, im := range impls(t) {
		if im.arch == "" {
			continue // the reference sleeps with Go's runtime
		}
		for _, tc := range []struct {
			name   string
			deny   []uintptr
			args   []string
			code   int
			stderr string
			sleep  time.Duration
			native bool // only where the binary runs natively
		}{
			{name: "nanosleep", deny: []uintptr{nums.nanosleep}, args: []string{"0.6"}, stderr: nap.Refused, sleep: request},
			{name: "nanosleep and clock_nanosleep", deny: []uintptr{nums.nanosleep, nums.clockNanosleep}, args: []string{"600ms"}, stderr: strings.Repeat(nap.Refused, 2), sleep: request},
			{name: "nanosleep, invalid argument", deny: []uintptr{nums.nanosleep}, args: []string{"x"}, code: 2, stderr: invalidMsg("x") + nap.Refused, sleep: nap.Default},
			{name: "every way", deny: []uintptr{nums.nanosleep, nums.clockNanosleep, nums.ppoll}, args: []string{"5"}, code: nap.ExitCannotSleep, stderr: strings.Repeat(nap.Refused, 3)},
			// The adaptive wait with its table refused: the longest wait, said, exit 3.
			{name: "openat, adaptive", deny: []uintptr{nums.openat}, args: []string{"--quiet", "100ms", "--max", "600ms"},
				code: nap.ExitUnreadable, stderr: nap.Unreadable, sleep: request, native: true},
		} {
			if tc.native && im.qemu != "" {
				continue // qemu-user opens files of its own, which the profile would refuse it
			}
			t.Run(im.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				o := run(denied(t, im.command(tc.args...), tc.deny...), 0, 0, false)
				if o.err != nil {
					t.Fatal(o.err)
				}
				if o.code != tc.code || o.stderr != tc.stderr {
					t.Errorf("exit status %d, stderr %q; want %d, %q", o.code, o.stderr, tc.code, tc.stderr)
				}
				if o.elapsed < tc.sleep || o.elapsed > tc.sleep+im.slack {
					t.Errorf("ended after %v, want %v to %v", o.elapsed, tc.sleep, tc.sleep+im.slack)
				}
			})
		}
		t.Run(im.name+"/inf", func(t *testing.T) {
			t.Parallel()
			cmd := denied(t, im.command("inf"), nums.nanosleep)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			const wall = 1500 * time.Millisecond
			time.Sleep(wall)
			cpu, err := cpuTime(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			// Spinning would take the whole 1.5 s; start-up (qemu-user's too) takes far less.
			if cpu > wall/3 {
				t.Errorf("nap inf with nanosleep refused used %v of CPU in %v", cpu, wall)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			var exit *exec.ExitError
			if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 143 || stderr.String() != nap.Refused {
				t.Errorf("after SIGTERM: %v, stderr %q; want exit status 143, %q", err, stderr.String(), nap.Refused)
			}
		})
	}
}

// cpuTime is the user and system time process pid has used (/proc/pid/stat, in clock
// ticks of 10 ms).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.Atoi(f[11])
	stime, err2 := strconv.Atoi(f[12])
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}
