package sleeper

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// waitHandler waits until pid has a handler for every signal of nap.Signals (SigCgt in
// /proc; the binaries install SIGTERM's first and SIGHUP's last), or for a
// fixed time under qemu-user, which catches every host signal from the start. The Go
// runtime of the reference also catches every signal before main runs signal.Notify
// (a SIGTERM in between exits 2), so the reference gets time to reach main; the tiny
// binaries install their handler in their first instructions.
func waitHandler(t *testing.T, im impl, pid int) {
	t.Helper()
	if im.qemu != "" {
		time.Sleep(500 * time.Millisecond)
		return
	}
	if im.arch == "" {
		defer time.Sleep(200 * time.Millisecond)
	}
	var want uint64
	for _, s := range nap.Signals {
		want |= 1 << (s - 1)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		status, err := os.ReadFile("/proc/" + itoa(pid) + "/status")
		if err == nil {
			for _, line := range strings.Split(string(status), "\n") {
				var mask uint64
				if n, _ := fmtSscanf(line, "SigCgt:\t%x", &mask); n == 1 && mask&want == want {
					return
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("no handler for every signal after 5s")
}

// TestPID1: nap infinity as PID 1 of a new PID namespace, where a signal with the
// default action is dropped, still ends at once with 128+signal on the signals a
// container runtime sends as its stop signal: SIGTERM, and SIGQUIT or SIGHUP where an
// image says so (nginx stops on SIGQUIT).
func TestPID1(t *testing.T) {
	testenv.RequireRoot(t)
	for _, im := range impls(t) {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP} {
			t.Run(im.name+"/"+sig.String(), func(t *testing.T) { pid1(t, im, sig) })
		}
	}
}

func pid1(t *testing.T, im impl, sig syscall.Signal) {
	cmd := im.command("infinity")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitHandler(t, im, cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	sent := time.Now()
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		took := time.Since(sent)
		var exit *exec.ExitError
		if want := 128 + int(sig); !errors.As(err, &exit) || exit.ExitCode() != want {
			t.Fatalf("PID 1 ended with %v, want exit status %d", err, want)
		}
		// At once (infinity has no later wake-up): 100 ms, plus the implementation's
		// slack for load (arm64 under qemu-user on a busy 2-core machine took 428 ms once).
		if most := 100*time.Millisecond + im.slack; took > most {
			t.Errorf("PID 1 took %v to end after %v, want under %v", took, sig, most)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("PID 1 ignored %v for 3s", sig)
	}
}

// TestStopContinue: stopping and continuing nap never shortens the sleep, whether the
// stop ends before the deadline or after it.
func TestStopContinue(t *testing.T) {
	const request = 700 * time.Millisecond
	for _, im := range impls(t) {
		for _, stopFor := range []time.Duration{100 * time.Millisecond, time.Second} {
			t.Run(im.name+"/stopped "+stopFor.String(), func(t *testing.T) {
				t.Parallel()
				cmd := im.command("0.7")
				start := time.Now()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond)
				cmd.Process.Signal(syscall.SIGSTOP)
				time.Sleep(stopFor)
				cmd.Process.Signal(syscall.SIGCONT)
				err := cmd.Wait()
				elapsed := time.Since(start)
				if err != nil {
					t.Fatalf("nap 0.7 with a stop: %v", err)
				}
				if elapsed < request {
					t.Errorf("ended after %v: a stop of %v shortened a %v sleep", elapsed, stopFor, request)
				}
				if max := max(request, 200*time.Millisecond+stopFor) + im.slack; elapsed > max {
					t.Errorf("ended after %v, want at most %v", elapsed, max)
				}
			})
		}
	}
}

// TestEmptyReadOnlyRoot: the binary alone in an empty directory, mounted read-only,
// chrooted into, runs as root and as an unprivileged UID: it needs no file, no /dev,
// no /proc, no libc. (Under qemu-user, the static qemu sits next to it.)
func TestEmptyReadOnlyRoot(t *testing.T) {
	testenv.RequireRoot(t)
	unshare := testenv.LookPath(t, "unshare", "prereqs")
	for _, im := range impls(t)[1:] {
		for _, user := range []string{"0:0", "65534:65534"} {
			t.Run(im.name+"/uid "+user, func(t *testing.T) {
				root, inside := rootWith(t, im)
				if err := os.Chmod(root, 0o555); err != nil {
					t.Fatal(err)
				}
				for _, tc := range []struct {
					args   []string
					stdout string
				}{{args: []string{"0.1"}}, {args: []string{"--help"}, stdout: usageText}} {
					// Exit 99 would mean the root is writable after all.
					script := `root=$1 user=$2; shift 2
mount --bind -o ro "$root" "$root" || exit 98
touch "$root/x" 2>/dev/null && exit 99
exec chroot --userspec="$user" "$root" "$@"`
					args := append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", root, user}, append(inside, tc.args...)...)
					cmd := exec.Command(unshare, args...)
					cmd.Dir = "/"
					cmd.Env = []string{}
					var stderr strings.Builder
					cmd.Stderr = &stderr
					out, err := cmd.Output()
					if err != nil {
						t.Fatalf("nap %v in an empty read-only root as %s: %v: %s", tc.args, user, err, stderr.String())
					}
					if string(out) != tc.stdout || stderr.Len() != 0 {
						t.Errorf("nap %v: stdout %q stderr %q, want stdout %q", tc.args, out, stderr.String(), tc.stdout)
					}
				}
			})
		}
	}
}

// rootWith makes a directory holding im as /nap/nap, in nap's volume as a pod mounts it
// (nap.LivePath beside it), and qemu-user as /qemu where im needs it, and returns it with
// the command that runs nap chrooted there.
func rootWith(t *testing.T, im impl) (root string, inside []string) {
	t.Helper()
	root = t.TempDir()
	// In memory (a tmpfs of its own), so that what a test writes into the root as the run
	// goes (TestAdaptiveConformance's /proc/net/snmp) never waits on the disk: while the
	// lab starts beside the unit tests, a write and rename there stalled for 300-500 ms,
	// a quiet window, and the adaptive wait rightly ended early.
	if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size=32m,mode=0755"); err != nil {
		t.Fatalf("a tmpfs for the root: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(root, syscall.MNT_DETACH) })
	if err := os.Mkdir(filepath.Join(root, filepath.Dir(nap.LivePath)), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(nap.LivePath), "nap")
	copyFile(t, im.path, filepath.Join(root, bin), 0o555)
	if im.qemu == "" {
		return root, []string{bin}
	}
	copyFile(t, im.qemu, filepath.Join(root, "qemu"), 0o555)
	return root, []string{"/qemu", bin}
}

// copyFile copies from to to, holding syscall.ForkLock so that no process forked
// meanwhile (tests start them concurrently) inherits the file open for writing: exec'd
// while such a child has not yet exec'd, it fails with ETXTBSY ("text file busy").
func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestShortWrite: the invalid-argument message goes to a non-blocking pipe with room for
// 10 bytes; the rest fits only once the reader drains it. Every implementation writes
// the whole message (a short write goes on, a full pipe is waited for), then sleeps.
func TestShortWrite(t *testing.T) {
	const room = 10
	for _, im := range impls(t) {
		t.Run(im.name, func(t *testing.T) {
			t.Parallel()
			var p [2]int
			if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			r, w := p[0], p[1]
			defer syscall.Close(r)
			// One page of pipe, filled but for room bytes: a write of more is short.
			if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(w), syscall.F_SETPIPE_SZ, 4096); e != 0 {
				t.Fatal(e)
			}
			fill := strings.Repeat("f", 4096-room)
			if n, err := syscall.Write(w, []byte(fill)); err != nil || n != len(fill) {
				t.Fatalf("filling the pipe: %d, %v", n, err)
			}
			if err := syscall.SetNonblock(w, true); err != nil {
				t.Fatal(err)
			}
			cmd := im.command("x")
			// Raw descriptors: os/exec would make the pipe blocking again (File.Fd).
			pid, err := syscall.ForkExec(cmd.Path, cmd.Args, &syscall.ProcAttr{Env: []string{}, Files: []uintptr{0, 1, uintptr(w)}})
			syscall.Close(w)
			if err != nil {
				t.Fatal(err)
			}
			defer syscall.Kill(pid, syscall.SIGKILL)
			time.Sleep(500 * time.Millisecond) // the first write is short, the next waits
			got, err := readUntil(r, fill+invalidMsg("x"), 5*time.Second)
			if err != nil {
				t.Fatalf("stderr: %v (%q so far, after the fill)", err, strings.TrimPrefix(got, fill))
			}
			// Still sleeping the default: the message did not end the delay.
			var ws syscall.WaitStatus
			if wpid, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); wpid == pid {
				t.Fatalf("ended after writing: %v", ws)
			}
			syscall.Kill(pid, syscall.SIGTERM)
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 143 {
				t.Errorf("after SIGTERM: %v, %v; want exit status 143", ws, err)
			}
		})
	}
}

// readUntil reads r until it has read want, or until timeout.
func readUntil(r int, want string, timeout time.Duration) (string, error) {
	var got []byte
	buf := make([]byte, 8192)
	deadline := time.Now().Add(timeout)
	for len(got) < len(want) && time.Now().Before(deadline) {
		n, err := syscall.Read(r, buf)
		if err != nil && err != syscall.EINTR {
			return string(got), err
		}
		if n == 0 {
			break
		}
		got = append(got, buf[:n]...)
	}
	if string(got) != want {
		return string(got), errors.New("not the whole message")
	}
	return string(got), nil
}
