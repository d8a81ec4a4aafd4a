package sleeper

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// The implementations under test, built once by TestMain into binDir.
var binDir string

// impl is one implementation of the contract: the reference or a tiny binary.
type impl struct {
	name  string
	arch  string // "" for the reference
	path  string
	qemu  string        // qemu-user, when the binary is for another architecture
	slack time.Duration // how much later than requested it may end (start-up, load)
}

func TestMain(m *testing.M) {
	if os.Getenv(denyEnv) != "" {
		launchDenied() // the seccomp launcher of TestExitDenied
	}
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "nap-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binDir = dir
		build := exec.Command("go", "build", "-o", filepath.Join(dir, "nap-ref"), "github.com/nap-k8s/nap/cmd/nap")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the reference nap:", err)
			return 1
		}
		for _, arch := range nap.Arches {
			b, err := Binary(arch)
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, "nap-"+arch), b, 0o755)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return m.Run()
	}())
}

// impls returns every implementation, ready to run: a missing qemu-user fails t.
func impls(t testing.TB) []impl {
	t.Helper()
	// The slack absorbs start-up under load: ~120 processes start at once here while
	// `go test ./...` runs other packages (an API server among them) on 2 cores; 300ms
	// was measured too little then. It still tells 0.25s from 2.5s or from the default
	// 10s; precision is measured by `make bench`, not asserted here.
	const native = 1500 * time.Millisecond
	out := []impl{{name: "reference", path: filepath.Join(binDir, "nap-ref"), slack: native}}
	for _, arch := range nap.Arches {
		slack := native
		if arch != runtime.GOARCH {
			slack = 2 * time.Second // qemu-user start-up under a parallel load
		}
		im := impl{name: arch, arch: arch, path: filepath.Join(binDir, "nap-"+arch), slack: slack}
		if arch != runtime.GOARCH {
			im.qemu = testenv.LookPath(t, qemuName[arch], "prereqs")
		}
		out = append(out, im)
	}
	return out
}

var qemuName = map[string]string{"amd64": "qemu-x86_64-static", "arm64": "qemu-aarch64-static"}

// command returns the command that runs im with args: natively, or under qemu-user
// when im is for another architecture than the test's.
func (im impl) command(args ...string) *exec.Cmd {
	if im.qemu == "" {
		return exec.Command(im.path, args...)
	}
	return exec.Command(im.qemu, append([]string{im.path}, args...)...)
}

func itoa(i int) string { return fmt.Sprint(i) }

func fmtSscanf(s, format string, args ...any) (int, error) { return fmt.Sscanf(s, format, args...) }
