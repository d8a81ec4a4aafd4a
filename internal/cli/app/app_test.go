package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/sleeper"
)

func runNapctl(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Run(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

func TestBinaryCommand(t *testing.T) {
	for _, arch := range sleeper.Arches {
		want, err := sleeper.Binary(arch)
		if err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runNapctl("binary", "--arch", arch)
		if code != 0 || stdout != string(want) || stderr != "" {
			t.Errorf("binary --arch %s: exit %d, %d bytes, stderr %q", arch, code, len(stdout), stderr)
		}
		path := filepath.Join(t.TempDir(), "nap")
		if code, _, stderr := runNapctl("binary", "--arch", arch, "-o", path); code != 0 {
			t.Fatalf("-o: exit %d: %s", code, stderr)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("-o wrote %d bytes (%v), want %d", len(got), err, len(want))
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o755 {
			t.Errorf("-o mode %v, want 0755", fi.Mode().Perm())
		}
	}
}

func TestBinaryCommandErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"binary", "--arch", "x86"}, `--arch: no nap binary for architecture "x86"`},
		{[]string{"binary", "-o", filepath.Join(dir, "missing", "nap")}, "-o " + filepath.Join(dir, "missing", "nap")},
		{[]string{"binary", "extra"}, "unknown command"},
		{[]string{"binary", "--bogus"}, "unknown flag: --bogus"},
	} {
		code, stdout, stderr := runNapctl(tc.args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("napctl %v: exit %d, stdout %d bytes, stderr %q; want exit 1 and %q", tc.args, code, len(stdout), stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a failed -o left %v behind", entries)
	}
}
