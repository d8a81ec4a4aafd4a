package sleeper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// denyEnv makes the test binary a launcher: it installs a seccomp filter that fails one
// system call with EPERM, as a container runtime's profile may, then execs the rest of
// its arguments. A real filter, in the kernel, on the real binary.
const denyEnv = "NAP_TEST_DENY_SYSCALL"

// hostSyscalls are the numbers the launcher needs, for the host's architecture.
var hostSyscalls = map[string]struct{ seccomp, exitGroup uintptr }{
	"amd64": {seccomp: 317, exitGroup: 231},
	"arm64": {seccomp: 277, exitGroup: 94},
}

// launchDenied runs in TestMain's process when denyEnv is set; it never returns.
func launchDenied() {
	runtime.LockOSThread()
	nr, err := strconv.ParseUint(os.Getenv(denyEnv), 10, 32)
	if err == nil {
		err = denySyscall(uint32(nr))
	}
	if err == nil {
		os.Unsetenv(denyEnv)
		err = syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
	}
	fmt.Fprintln(os.Stderr, "seccomp launcher:", err)
	os.Exit(125)
}

// denySyscall installs, for every thread and what they exec, a filter that fails system
// call nr with EPERM and allows the rest.
func denySyscall(nr uint32) error {
	type sockFilter struct {
		code   uint16
		jt, jf uint8
		k      uint32
	}
	prog := []sockFilter{
		{code: 0x20, k: 0},                // ld [0]: the system call number
		{code: 0x15, jt: 0, jf: 1, k: nr}, // jeq nr
		{code: 0x06, k: 0x00050000 | 1},   // ret ERRNO(EPERM)
		{code: 0x06, k: 0x7fff0000},       // ret ALLOW
	}
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
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range impls(t) {
		if im.arch == "" {
			continue // the reference is Go's runtime, not ours
		}
		// Under qemu-user the guest's exit_group is the host's: the filter denies both.
		want := map[string]syscall.Signal{"amd64": syscall.SIGILL, "arm64": syscall.SIGTRAP}[im.arch]
		for _, args := range [][]string{{"0"}, {"-h"}, {"0.05s"}} {
			run := im.command(args...) // nap, or qemu-user and nap
			cmd := exec.Command(self, append([]string{run.Path}, run.Args[1:]...)...)
			cmd.Env = append(os.Environ(), denyEnv+"="+strconv.Itoa(int(nums.exitGroup)))
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
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
