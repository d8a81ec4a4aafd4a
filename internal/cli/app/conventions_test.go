package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/version"
)

// run runs the command tree as name with stdin in.
func runAs(name string, in *os.File, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	streams := cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	if in != nil {
		streams.In = in
	}
	code = RunAs(name, streams, args)
	return code, out.String(), errOut.String()
}

// A mistake in calling a command exits 2 and points to its help, whatever the command.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"binary", "--bogus"}, "unknown flag: --bogus\nSee 'napctl binary --help'."},
		{[]string{"binary", "extra"}, `unknown command "extra" for "napctl binary"` + "\nSee 'napctl binary --help'."},
		{[]string{"lint", "--bogus"}, "See 'napctl lint --help'."},
		{[]string{"inject", "--delay"}, "flag needs an argument: --delay\nSee 'napctl inject --help'."},
		{[]string{"nosuch"}, `unknown command "nosuch" for "napctl"` + "\nSee 'napctl --help'."},
		{[]string{"lint", "-o", "xml", lintClean}, `-o "xml": want text, json or sarif`},
		{[]string{"configmap", "-o", "toml"}, `-o "toml": want yaml or json`},
		{[]string{"status", "-o", "xml"}, `-o "xml": want text, json, yaml, openreports or policyreport`},
		{[]string{"probe", "-o", "csv", "http://127.0.0.1:1/"}, `-o "csv": want text or json`},
		{[]string{"probe"}, "accepts 1 arg(s), received 0\nSee 'napctl probe --help'."},
		{[]string{"lint", "--live", "a.yaml"}, "--live lints the cluster's objects: no paths with it"},
		{[]string{"lint", "--context", "k", "a.yaml"}, "--context lints the cluster's objects: no paths with it"},
		{[]string{"calibrate", "--save", "/nonexistent-nap/c.json"}, "--save /nonexistent-nap/c.json: no directory /nonexistent-nap"},
		{[]string{"lint", "--calibration", "/nonexistent-nap/c.json", lintClean}, "--calibration: open /nonexistent-nap/c.json"},
		{[]string{"lint", "--calibration", lintClean, lintClean}, "--calibration: " + lintClean + ": not a calibration (napctl calibrate --save)"},
		{[]string{"status", "--calibration", "/nonexistent-nap/c.json"}, "--calibration: open /nonexistent-nap/c.json"},
	} {
		code, stdout, stderr := runAs("napctl", nil, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("napctl %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

// Names are checked before anything is printed.
func TestConfigMapNames(t *testing.T) {
	for _, tc := range []struct{ args []string }{
		{[]string{"configmap", "-n", "Bad_NS"}},
		{[]string{"configmap", "--name", "Bad Name"}},
	} {
		code, stdout, stderr := runAs("napctl", nil, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, `"Bad`) {
			t.Errorf("napctl %q: exit %d, stdout %d bytes, stderr %q; want exit 2 naming the bad name", tc.args, code, len(stdout), stderr)
		}
	}
}

// lint and inject with nothing to read fail alike: an empty file, comments alone (helm
// template with every template off), /dev/null, a closed stdin (a helm template that
// failed upstream of the pipe), so that `helm template | napctl inject | kubectl apply`
// stops at nap.
func TestNoObjects(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(empty, []byte("# nothing\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	for _, tc := range []struct {
		in   *os.File
		args []string
	}{
		{nil, []string{"lint"}},
		{nil, []string{"lint", "-f", "-"}},
		{nil, []string{"lint", "-f", empty}},
		{nil, []string{"lint", os.DevNull}},
		{devnull, []string{"lint"}},
		{nil, []string{"inject"}},
		{nil, []string{"inject", "-f", "-"}},
		{nil, []string{"inject", "-f", empty}},
		{nil, []string{"inject", os.DevNull}},
		{devnull, []string{"inject"}},
	} {
		if tc.in != nil {
			tc.in.Seek(0, 0)
		}
		code, stdout, stderr := runAs("napctl", tc.in, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "no objects in ") {
			t.Errorf("napctl %q: exit %d, stdout %q, stderr %q; want exit 2 and no objects", tc.args, code, stdout, stderr)
		}
	}
}

// Paths as arguments are read as -f's are (kube-score's and kube-linter's way).
func TestPositionalPaths(t *testing.T) {
	_, want, _ := runAs("napctl", nil, "lint", "-f", lintNoReady)
	code, got, stderr := runAs("napctl", nil, "lint", lintNoReady)
	if code != 1 || got != want || want == "" {
		t.Errorf("napctl lint PATH: exit %d, stderr %q, output\n%s\nwant lint -f's\n%s", code, stderr, got, want)
	}
	_, want, _ = runAs("napctl", nil, "inject", "-f", lintNoPreStop)
	code, got, stderr = runAs("napctl", nil, "inject", lintNoPreStop)
	if code != 0 || got != want || !strings.Contains(got, "/nap/nap") {
		t.Errorf("napctl inject PATH: exit %d, stderr %q, output\n%s", code, stderr, got)
	}
}

// At a terminal with no -f, lint and inject say what they need instead of waiting for
// stdin.
func TestTerminalStdin(t *testing.T) {
	tty := pty(t)
	for _, args := range [][]string{{"lint"}, {"inject"}} {
		code, stdout, stderr := runAs("napctl", tty, args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "must specify -f") {
			t.Errorf("napctl %s at a terminal: exit %d, stdout %q, stderr %q; want exit 2, must specify -f", args[0], code, stdout, stderr)
		}
	}
}

// pty opens a pseudo-terminal and returns its terminal end.
func pty(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

// failingWriter fails every write, as a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("write |1: broken pipe") }

// A judging command that cannot write its report exits 2, not its verdict's 1.
func TestVerdictCommandsErrors(t *testing.T) {
	var errOut bytes.Buffer
	code := Run(cli.IOStreams{In: strings.NewReader(""), Out: failingWriter{}, ErrOut: &errOut}, []string{"lint", lintNoReady})
	if code != 2 || !strings.Contains(errOut.String(), "broken pipe") {
		t.Errorf("lint into a broken pipe: exit %d, stderr %q; want 2", code, errOut.String())
	}
	// A command that makes things exits 2 on the same failure too: 1 is a verdict's alone.
	errOut.Reset()
	code = Run(cli.IOStreams{In: strings.NewReader(""), Out: failingWriter{}, ErrOut: &errOut}, []string{"configmap"})
	if code != 2 || !strings.Contains(errOut.String(), "broken pipe") {
		t.Errorf("configmap into a broken pipe: exit %d, stderr %q; want 2", code, errOut.String())
	}
}

// -o is the output format in every command, as in kubectl, and the shell completes
// its values and every enumerated flag's.
func TestOutputFlagAndCompletion(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if (f.Shorthand == "o") != (f.Name == "output") || f.Name == "output" && !strings.HasPrefix(f.Usage, "output format: ") {
				t.Errorf("%s: flag --%s -%s %q: -o must be --output, the output format", c.CommandPath(), f.Name, f.Shorthand, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(cli.IOStreams{}))

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"lint", "-o", ""}, []string{"text", "json", "sarif"}},
		{[]string{"lint", "--fail-on", ""}, []string{"warning", "error"}},
		{[]string{"configmap", "-o", ""}, []string{"yaml", "json"}},
		{[]string{"configmap", "--arch", ""}, []string{"amd64", "arm64"}},
		{[]string{"inject", "--mode", ""}, []string{"auto", "native", "binary"}},
		{[]string{"inject", "--wait", ""}, []string{"fixed", "adaptive"}},
		{[]string{"inject", "--delivery", ""}, []string{"configmap", "image", "auto"}},
		{[]string{"install", "--policy", ""}, []string{"opt-in", "default", "audit"}},
		{[]string{"install", "--admission", ""}, []string{"webhook", "policy", "auto"}},
		{[]string{"controller", "--wait", ""}, []string{"fixed", "adaptive"}},
		{[]string{"status", "--fail-on", ""}, []string{"unprotected"}},
	} {
		code, stdout, stderr := runAs("kubectl nap", nil, append([]string{cobra.ShellCompRequestCmd}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if code != 0 || len(lines) != len(tc.want)+1 || lines[len(lines)-1] != fmt.Sprintf(":%d", cobra.ShellCompDirectiveNoFileComp) {
			t.Errorf("completing %q: exit %d, %q (stderr %q); want %q and no files", tc.args, code, lines, stderr, tc.want)
			continue
		}
		for i, w := range tc.want {
			if lines[i] != w {
				t.Errorf("completing %q: %q, want %q", tc.args, lines, tc.want)
				break
			}
		}
	}
	// The plugin's completion is kubectl's: no script that would register "nap" (the
	// sleeper beside it); napctl's own is cobra's.
	if code, out, errOut := runAs("kubectl nap", nil, "completion", "bash"); code != 2 || out != "" || !strings.Contains(errOut, "kubectl_complete-nap") {
		t.Errorf("kubectl nap completion bash: exit %d, %q, %q", code, out, errOut)
	}
	if code, out, _ := runAs("napctl", nil, "completion", "bash"); code != 0 || !strings.Contains(out, "__start_napctl napctl") {
		t.Errorf("napctl completion bash: exit %d, %.200q", code, out)
	}
	script, err := os.ReadFile("../../../cmd/kubectl-nap/kubectl_complete-nap")
	if fi, _ := os.Stat("../../../cmd/kubectl-nap/kubectl_complete-nap"); err != nil || fi.Mode()&0o111 == 0 ||
		!strings.Contains(string(script), `exec kubectl-nap __complete "$@"`) {
		t.Errorf("kubectl_complete-nap: %v, not an executable that runs kubectl-nap __complete:\n%s", err, script)
	}
}

// As a kubectl plugin, help, the version and lint's hints name "kubectl nap".
func TestPluginName(t *testing.T) {
	_, help, _ := runAs("kubectl nap", nil, "--help")
	if !strings.Contains(help, "kubectl nap [command]") || !strings.Contains(help, "kubectl nap [command] --help") || strings.Contains(help, "kubectl [command]") {
		t.Errorf("kubectl nap --help:\n%s", help)
	}
	_, help, _ = runAs("kubectl nap", nil, "inject", "--help")
	if !strings.Contains(help, "kubectl nap inject [-f") {
		t.Errorf("kubectl nap inject --help:\n%s", help)
	}
	if _, v, _ := runAs("kubectl nap", nil, "--version"); !strings.HasPrefix(v, "kubectl nap version ") {
		t.Errorf("kubectl nap --version: %q", v)
	}
	if _, v, _ := runAs("napctl", nil, "--version"); !strings.HasPrefix(v, "napctl version ") {
		t.Errorf("napctl --version: %q", v)
	}
	for _, name := range []string{"kubectl nap", "napctl"} {
		if code, v, _ := runAs(name, nil, "version"); code != 0 || v != name+" version "+version.Version+"\n" {
			t.Errorf("%s version: exit %d, %q", name, code, v)
		}
	}
	code, out, _ := runAs("kubectl nap", nil, "lint", "../../../lint/testdata/checks/no-prestop-delay.yaml", "--fail-on", "warning")
	if code != 1 || !strings.Contains(out, "kubectl nap inject -f") || strings.Contains(out, "napctl") {
		t.Errorf("kubectl nap lint: exit %d, hints should name kubectl nap:\n%s", code, out)
	}
}

// kubectl's flags mean one thing everywhere: --namespace is -n, and a command that reads
// a cluster has kubectl's connection flags (--kubeconfig, --context, --cluster as a
// kubeconfig's cluster, --server, ...), not a flag of its own under their names.
func TestKubectlFlags(t *testing.T) {
	root := NewRootCommand(cli.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	connection := []string{"kubeconfig", "context", "cluster", "user", "server", "token", "as", "request-timeout", "insecure-skip-tls-verify"}
	for _, c := range root.Commands() {
		fl := c.Flags()
		if f := fl.Lookup("namespace"); f != nil && f.Shorthand != "n" {
			t.Errorf("napctl %s --namespace: shorthand %q, want -n", c.Name(), f.Shorthand)
		}
		if fl.Lookup("kubeconfig") == nil || c.Name() == "controller" {
			continue // the controller's --kubeconfig defaults to in-cluster, as controller-runtime's
		}
		for _, name := range connection {
			f := fl.Lookup(name)
			if f == nil {
				t.Errorf("napctl %s reads a cluster but has no --%s", c.Name(), name)
				continue
			}
			if name == "cluster" && !strings.Contains(f.Usage, "kubeconfig cluster") {
				t.Errorf("napctl %s --cluster: %q, want kubectl's (a kubeconfig cluster's name)", c.Name(), f.Usage)
			}
		}
	}
	for _, name := range []string{"inject", "lint", "status", "calibrate", "install", "probe"} {
		if c, _, err := root.Find([]string{name}); err != nil || c.Flags().Lookup("kubeconfig") == nil {
			t.Errorf("napctl %s: no --kubeconfig (%v)", name, err)
		}
	}
}

// A cluster that does not answer is said once, under the command the user typed, not
// once for each of the reads status makes at once; kubectl's -v is the client's log
// level, not --version.
func TestUnreachableCluster(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	config := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:9\"}}]\n" +
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n"
	if err := os.WriteFile(kc, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runAs("kubectl nap", nil, "status", "--kubeconfig", kc)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != 2 || out != "" || len(lines) != 1 || !strings.HasPrefix(lines[0], "kubectl nap: cannot reach the cluster at https://127.0.0.1:9: ") {
		t.Errorf("kubectl nap status, no cluster: exit %d, stdout %q, stderr (want one line):\n%s", code, out, errOut)
	}
	code, _, errOut = runAs("kubectl nap", nil, "status", "--kubeconfig", kc, "-v=1")
	if code != 2 || strings.Contains(errOut, "ParseBool") || strings.Contains(errOut, "invalid argument") || !strings.Contains(errOut, "cannot reach the cluster") {
		t.Errorf("kubectl nap status -v=1: exit %d:\n%s", code, errOut)
	}
}

// TestClusterCompletion: -n completes the cluster's namespaces and --context the
// kubeconfig's contexts, through the command's own --kubeconfig, as kubectl's do; a
// cluster that cannot be read completes nothing, and never file names.
func TestClusterCompletion(t *testing.T) {
	cs, kubeconfig, _ := envtestCluster(t)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "comp-shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	unreachable := writeTemp(t, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: https://127.0.0.1:9}}]\n"+
		"users: [{name: u, user: {}}]\ncontexts: [{name: nowhere, context: {cluster: c, user: u}}]\ncurrent-context: nowhere\n")
	for _, tc := range []struct {
		args     []string
		has, not string
	}{
		{[]string{"status", "--kubeconfig", kubeconfig, "-n", ""}, "comp-shop", ""},
		{[]string{"lint", "--kubeconfig", kubeconfig, "--namespace", ""}, "kube-system", ""},
		{[]string{"status", "--kubeconfig", kubeconfig, "--context", ""}, "envtest", "comp-shop"},
		{[]string{"calibrate", "--kubeconfig", unreachable, "--context", ""}, "nowhere", ""},
		{[]string{"status", "--kubeconfig", unreachable, "-n", ""}, "", "comp-shop"},
	} {
		code, stdout, stderr := runAs("kubectl nap", nil, append([]string{cobra.ShellCompRequestCmd}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if code != 0 || lines[len(lines)-1] != fmt.Sprintf(":%d", cobra.ShellCompDirectiveNoFileComp) ||
			tc.has != "" && !slices.Contains(lines, tc.has) || tc.not != "" && slices.Contains(lines, tc.not) || tc.has == "" && len(lines) != 1 {
			t.Errorf("completing %q: exit %d, %q (stderr %q); want %q among them and no files", tc.args, code, lines, stderr, tc.has)
		}
	}
}

// TestFlagSuggestions: a mistyped flag is a usage error that names the flags it may
// have meant, as cobra does for commands; one far from every flag names none.
func TestFlagSuggestions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inject", "--delya", "5s"}, "unknown flag: --delya (did you mean --delay?)"},
		{[]string{"status", "--namepsace", "x"}, "unknown flag: --namepsace (did you mean --namespace?)"},
		{[]string{"lint", "--fail"}, "(did you mean --fail-on?)"},
		{[]string{"install", "--replica", "3"}, "(did you mean --replicas?)"},
		{[]string{"inject", "--frobnicate"}, "unknown flag: --frobnicate\n"},
	} {
		code, stdout, stderr := runAs("kubectl nap", nil, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "See 'kubectl nap "+tc.args[0]+" --help'") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"delya", "delay", 2}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"same", "same", 0}} {
		if got := editDistance(tc.a, tc.b); got != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

// TestDurationSyntax: every duration flag of a command reads what --delay reads, a bare
// number as seconds: inject --delay 25 --grace-extra 10 gives a grace period of 35 s;
// a duration nap cannot read is a usage error naming the flag and the value.
func TestDurationSyntax(t *testing.T) {
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: app:1\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inject", "--delay", "25", "--grace-extra", "10", "-f", "-"}, "terminationGracePeriodSeconds: 35"},
		{[]string{"inject", "--delay", "25s", "--grace-extra", "10s", "-f", "-"}, "terminationGracePeriodSeconds: 35"},
		{[]string{"inject", "--delay", "25", "--grace-extra", "7.5", "-f", "-"}, "terminationGracePeriodSeconds: 33"},
	} {
		code, stdout, stderr := runNapctlIn(deploy, tc.args...)
		if code != 0 || !strings.Contains(stdout, tc.want) {
			t.Errorf("%q: exit %d, %q (stderr %q); want %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	for _, args := range [][]string{{"inject", "--grace-extra", "ten", "-f", "-"}, {"calibrate", "--margin", "-1"}} {
		code, _, stderr := runNapctlIn(deploy, args...)
		if code != 2 || !strings.Contains(stderr, `invalid argument "`+args[2]+`" for "--`+strings.TrimPrefix(args[1], "--")+`" flag: want a duration nap reads`) {
			t.Errorf("%q: exit %d, %q; want 2 naming the flag and the value", args, code, stderr)
		}
	}
}
