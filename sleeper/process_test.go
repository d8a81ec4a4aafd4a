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
)

// waitHandler waits until pid has a handler for SIGTERM (SigCgt in /proc), or for a
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
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		status, err := os.ReadFile("/proc/" + itoa(pid) + "/status")
		if err == nil {
			for _, line := range strings.Split(string(status), "\n") {
				var mask uint64
				if n, _ := fmtSscanf(line, "SigCgt:\t%x", &mask); n == 1 && mask&(1<<(syscall.SIGTERM-1)) != 0 {
					return
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatal("no SIGTERM handler after 5s")
}

// TestPID1: nap infinity as PID 1 of a new PID namespace, where a signal with the
// default action is dropped, still ends at once on SIGTERM with 143.
func TestPID1(t *testing.T) {
	testenv.RequireRoot(t)
	for _, im := range impls(t) {
		t.Run(im.name, func(t *testing.T) {
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
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				took := time.Since(sent)
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != 143 {
					t.Fatalf("PID 1 ended with %v, want exit status 143", err)
				}
				if took > 100*time.Millisecond {
					t.Errorf("PID 1 took %v to end after SIGTERM, want under 100ms", took)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("PID 1 ignored SIGTERM for 3s")
			}
		})
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
				root := t.TempDir()
				copyFile(t, im.path, filepath.Join(root, "nap"), 0o555)
				inside := []string{"/nap"}
				if im.qemu != "" {
					copyFile(t, im.qemu, filepath.Join(root, "qemu"), 0o555)
					inside = []string{"/qemu", "/nap"}
				}
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

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
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
