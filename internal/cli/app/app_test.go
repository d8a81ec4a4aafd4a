package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nap-k8s/nap/controller/install"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/sleeper"
	"github.com/nap-k8s/nap/sleeper/nap"
)

func runNapctl(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Run(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

func TestBinaryCommand(t *testing.T) {
	for _, arch := range nap.Arches {
		want, err := sleeper.Binary(arch)
		if err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runNapctl("binary", "--arch", arch)
		if code != 0 || stdout != string(want) || stderr != "" {
			t.Errorf("binary --arch %s: exit %d, %d bytes, stderr %q", arch, code, len(stdout), stderr)
		}
		path := filepath.Join(t.TempDir(), "nap")
		if code, _, stderr := runNapctl("binary", "--arch", arch, "--file", path); code != 0 {
			t.Fatalf("--file: exit %d: %s", code, stderr)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("--file wrote %d bytes (%v), want %d", len(got), err, len(want))
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o755 {
			t.Errorf("--file mode %v, want 0755", fi.Mode().Perm())
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
		{[]string{"binary", "--file", filepath.Join(dir, "missing", "nap")}, "--file " + filepath.Join(dir, "missing", "nap")},
	} {
		code, stdout, stderr := runNapctl(tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("napctl %v: exit %d, stdout %d bytes, stderr %q; want exit 2 and %q", tc.args, code, len(stdout), stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a failed --file left %v behind", entries)
	}
}

// napctl install prints deploy/nap.yaml (the default), takes its options, and refuses a
// bad namespace before printing anything.
func TestInstallCommand(t *testing.T) {
	want, err := os.ReadFile("../../../deploy/nap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runNapctl("install")
	if code != 0 || out != string(want) {
		t.Errorf("napctl install: exit %d, stderr %q, output differs from deploy/nap.yaml: %v", code, errOut, out != string(want))
	}
	// The default image is not published: the command says how to make one.
	if !strings.Contains(errOut, "is not published yet") || !strings.Contains(errOut, "go run ./hack/images") || !strings.Contains(errOut, "--image") {
		t.Errorf("napctl install without --image: stderr %q, want how to build and push the image", errOut)
	}
	code, out, errOut = runNapctl("install", "-n", "platform", "--image", "registry.example/napctl:1", "--cert-manager")
	if errOut != "" {
		t.Errorf("napctl install --image: stderr %q, want nothing", errOut)
	}
	for _, s := range []string{"namespace: platform\n", "image: registry.example/napctl:1\n", "cert-manager.io/inject-ca-from: platform/nap\n", "kind: Certificate\n"} {
		if code != 0 || !strings.Contains(out, s) {
			t.Errorf("napctl install -n platform --cert-manager: exit %d, no %q", code, s)
		}
	}
	code, out, errOut = runNapctl("install", "-n", "Platform")
	if code != 2 || out != "" || !strings.Contains(errOut, `namespace "Platform"`) {
		t.Errorf("bad namespace: exit %d, stdout %d bytes, stderr %q", code, len(out), errOut)
	}
	// Where the controller runs.
	code, out, errOut = runNapctl("install", "--image", "r/napctl:1", "--node-selector", "pool=infra", "--priority-class-name", "high",
		"--tolerations", `[{"key":"dedicated","operator":"Exists","effect":"NoSchedule"}]`,
		"--topology-spread-constraints", `[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"}]`)
	for _, s := range []string{"nodeSelector:\n        kubernetes.io/os: linux\n        pool: infra\n", "priorityClassName: high\n", "tolerations:\n      - effect: NoSchedule\n        key: dedicated\n        operator: Exists\n",
		"topologySpreadConstraints:\n      - maxSkew: 1\n        topologyKey: topology.kubernetes.io/zone\n"} {
		if code != 0 || !strings.Contains(out, s) {
			t.Errorf("napctl install with scheduling: exit %d (%s), no %q", code, errOut, s)
		}
	}
	// Critical by default, with the quota that admits it; "" for none, and no quota.
	for _, tc := range []struct {
		args  []string
		class bool
	}{{nil, true}, {[]string{"--priority-class-name", ""}, false}} {
		_, out, _ := runNapctl(append([]string{"install", "--image", "r/napctl:1"}, tc.args...)...)
		if got := strings.Contains(out, "priorityClassName: "+install.DefaultPriorityClassName+"\n") && strings.Contains(out, "name: "+install.CriticalPodsQuota+"\n"); got != tc.class ||
			!tc.class && strings.Contains(out, "priorityClassName") {
			t.Errorf("napctl install %q: priority class and ResourceQuota %v, want %v", tc.args, got, tc.class)
		}
	}
	// 0 replicas, typed, is refused as the chart refuses it (not read as the default 2).
	for _, n := range []string{"0", "-1"} {
		if code, out, errOut := runNapctl("install", "--replicas", n); code != 2 || out != "" || !strings.Contains(errOut, "--replicas "+n+": want at least 1") {
			t.Errorf("napctl install --replicas %s: exit %d, stdout %d bytes, stderr %q", n, code, len(out), errOut)
		}
	}
	code, out, errOut = runNapctl("install", "--tolerations", `{"key":"x"}`)
	if code != 2 || out != "" || !strings.Contains(errOut, "--tolerations") || !strings.Contains(errOut, "want a JSON list") {
		t.Errorf("bad tolerations: exit %d, stdout %d bytes, stderr %q", code, len(out), errOut)
	}
	// A private registry, and the pods' annotations.
	code, out, errOut = runNapctl("install", "--image", "registry.example/napctl:1", "--image-pull-policy", "Always",
		"--image-pull-secrets", "regcred,mirror", "--pod-annotations", "sidecar.istio.io/inject=false")
	for _, s := range []string{"imagePullPolicy: Always\n", "imagePullSecrets:\n      - name: regcred\n      - name: mirror\n",
		"template:\n    metadata:\n      annotations:\n        sidecar.istio.io/inject: \"false\"\n"} {
		if code != 0 || !strings.Contains(out, s) {
			t.Errorf("napctl install for a private registry: exit %d (%s), no %q", code, errOut, s)
		}
	}
	for _, bad := range [][]string{{"--image-pull-policy", "Sometimes"}, {"--image-pull-secrets", "Reg_Cred"}, {"--pod-annotations", "bad key=x"}} {
		if code, out, errOut := runNapctl(append([]string{"install"}, bad...)...); code != 2 || out != "" || !strings.Contains(errOut, strings.Trim(bad[1], "=x")) {
			t.Errorf("napctl install %q: exit %d, stdout %d bytes, stderr %q", bad, code, len(out), errOut)
		}
	}
	// A fleet's install: labels, its own affinity, the node's network, a cluster issuer.
	code, out, errOut = runNapctl("install", "--image", "registry.example/napctl:1", "--pod-labels", "team=platform",
		"--affinity", `{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["infra"]}]}]}}}`,
		"--host-network", "--webhook-port", "10250", "--metrics-port", "10251", "--health-port", "10252", "--webhook-timeout-seconds", "10",
		"--cert-manager", "--cert-manager-issuer", "corp-ca", "--cert-manager-issuer-kind", "ClusterIssuer")
	for _, s := range []string{"        app.kubernetes.io/name: nap\n        team: platform\n", "affinity:\n        nodeAffinity:\n", "hostNetwork: true\n",
		"- --webhook-port=10250\n", "- --metrics-bind-address=:10251\n", "- --health-probe-bind-address=:10252\n", "- containerPort: 10250\n", "timeoutSeconds: 10\n",
		"issuerRef:\n    kind: ClusterIssuer\n    name: corp-ca\n"} {
		if code != 0 || !strings.Contains(out, s) {
			t.Errorf("napctl install for a fleet: exit %d (%s), no %q", code, errOut, s)
		}
	}
	if code != 0 || strings.Contains(out, "podAntiAffinity") || strings.Contains(out, "kind: Issuer\n") {
		t.Errorf("napctl install --affinity --cert-manager-issuer: exit %d, still the default anti-affinity or nap's own Issuer:\n%s", code, out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--affinity", `[{"nodeAffinity":{}}]`}, "--affinity"},
		{[]string{"--pod-labels", "app.kubernetes.io/name=mine"}, "pod label app.kubernetes.io/name: the controller's own"},
		{[]string{"--webhook-timeout-seconds", "60"}, "webhook timeout 60s: want 1 to 30"},
		{[]string{"--metrics-port", "9443"}, "want three different ones"},
		{[]string{"--cert-manager-issuer", "corp-ca"}, "needs --cert-manager"},
		{[]string{"--cert-manager", "--cert-manager-issuer-kind", "ClusterIssuer"}, "--cert-manager-issuer, which is missing"},
	} {
		if code, out, errOut := runNapctl(append([]string{"install"}, bad.args...)...); code != 2 || out != "" || !strings.Contains(errOut, bad.want) {
			t.Errorf("napctl install %q: exit %d, stdout %d bytes, stderr %q; want 2 and %q", bad.args, code, len(out), errOut, bad.want)
		}
	}
}

// napctl install --admission policy prints the policy instead of the webhook's
// configuration, and says on stderr what the policy cannot do; auto needs a cluster.
func TestInstallAdmissionCommand(t *testing.T) {
	code, out, errOut := runNapctl("install", "--image", "registry.example/napctl:1", "--admission", "policy")
	if code != 0 || !strings.Contains(out, "kind: MutatingAdmissionPolicy\n") || !strings.Contains(out, "kind: MutatingAdmissionPolicyBinding\n") ||
		strings.Contains(out, "MutatingWebhookConfiguration") || !strings.Contains(out, "--webhook=false") {
		t.Errorf("--admission policy: exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(errOut, "does what the webhook does, except") || !strings.Contains(errOut, "default and audit policies") {
		t.Errorf("--admission policy: stderr %q, want what the policy cannot do", errOut)
	}
	code, out, errOut = runNapctl("install", "--admission", "policy", "--policy", "default")
	if code != 2 || out != "" || !strings.Contains(errOut, "--policy default needs the webhook") {
		t.Errorf("--admission policy --policy default: exit %d, stdout %d bytes, stderr %q", code, len(out), errOut)
	}
	code, out, errOut = runNapctl("install", "--admission", "auto", "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	if code != 2 || out != "" || !strings.Contains(errOut, "--admission auto asks the cluster") {
		t.Errorf("--admission auto without a cluster: exit %d, stdout %d bytes, stderr %q", code, len(out), errOut)
	}
}

// napctl image writes the layout as a tarball or a directory, one of them.
func TestImageCommand(t *testing.T) {
	dir := t.TempDir()
	tarball := filepath.Join(dir, "nap.tar")
	if code, _, errOut := runNapctl("image", "--file", tarball); code != 0 {
		t.Fatalf("napctl image --file: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(tarball); err != nil || !bytes.Contains(b, []byte("index.json")) {
		t.Errorf("napctl image --file: %v", err)
	}
	if code, _, errOut := runNapctl("image", "--layout", filepath.Join(dir, "layout")); code != 0 {
		t.Errorf("napctl image --layout: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "layout", "index.json")); err != nil {
		t.Error(err)
	}
	for _, args := range [][]string{{"image"}, {"image", "--file", tarball, "--layout", dir}, {"image", "--layout", filepath.Join(dir, "layout")}} {
		if code, _, errOut := runNapctl(args...); code == 0 || errOut == "" {
			t.Errorf("napctl %v: exit %d, stderr %q", args, code, errOut)
		}
	}
	// --file naming a directory points to --layout, not a rename's error.
	if code, _, errOut := runNapctl("image", "--file", dir); code == 0 || !strings.Contains(errOut, "--layout") {
		t.Errorf("napctl image --file DIR: exit %d, stderr %q, want a pointer to --layout", code, errOut)
	}
}
