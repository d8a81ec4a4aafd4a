package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
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

// Tool returns the path of a tool the tests run as users run it (hack/tool-versions:
// helm, promtool), built into the cache by `make tool-bins`.
func Tool(t testing.TB, name string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	versions := filepath.Join(filepath.Dir(file), "..", "..", "hack", "tool-versions")
	b, err := os.ReadFile(versions)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != name {
			continue
		}
		p := filepath.Join(Cache(), "tools", name+"-"+f[2], name)
		if _, err := os.Stat(p); err != nil {
			Missing(t, p, "tool-bins")
		}
		return p
	}
	t.Fatalf("%s names no tool %q", versions, name)
	return ""
}

// Nginx returns the path of Debian's nginx binary that `make server-bins` fetched into
// the cache (the newest there).
func Nginx(t testing.TB) string {
	t.Helper()
	found, _ := filepath.Glob(filepath.Join(Cache(), "servers", "nginx-*", "nginx"))
	if len(found) == 0 {
		Missing(t, filepath.Join(Cache(), "servers", "nginx-VERSION", "nginx"), "server-bins")
	}
	return found[len(found)-1]
}

// Cache is the folder the hack/*-bins.sh scripts build into: $NAP_CACHE, else
// $XDG_CACHE_HOME/nap or ~/.cache/nap.
func Cache() string {
	if base := os.Getenv("NAP_CACHE"); base != "" {
		return base
	}
	c := os.Getenv("XDG_CACHE_HOME")
	if c == "" {
		home, _ := os.UserHomeDir()
		c = filepath.Join(home, ".cache")
	}
	return filepath.Join(c, "nap")
}
