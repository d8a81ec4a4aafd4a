package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// InCI tells whether the tests run in CI.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing reports a missing prerequisite: a failure, or a skip where allowed.
func Missing(t testing.TB, what, target string) {
	t.Helper()
	msg := what + " is missing: run `make " + target + "`"
	if !InCI() && os.Getenv("NAP_ALLOW_SKIP") == "1" {
		t.Skip(msg + " (skipped: NAP_ALLOW_SKIP=1)")
	}
	t.Fatal(msg + " (or set NAP_ALLOW_SKIP=1 to skip locally)")
}

// LookPath returns the path of a required command.
func LookPath(t testing.TB, name, target string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name, target)
	}
	return p
}

// RequireRoot requires the tests to run as root (chroot, namespaces).
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		msg := "these tests need root (chroot, PID namespaces, the cluster): run them as root, e.g. sudo make test"
		if !InCI() && os.Getenv("NAP_ALLOW_SKIP") == "1" {
			t.Skip(msg + " (skipped: NAP_ALLOW_SKIP=1)")
		}
		t.Fatal(msg)
	}
}
