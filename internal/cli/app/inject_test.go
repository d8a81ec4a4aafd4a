package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/nap-k8s/nap/configmap"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/sleeper"
	"github.com/nap-k8s/nap/sleeper/nap"
)

const deployment = `# keep me
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      containers:
      - name: app   # main
        image: "x:1"
`

func TestConfigMapCommand(t *testing.T) {
	code, stdout, stderr := runNapctl("configmap", "--namespace", "shop")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cm corev1.ConfigMap
	if err := sigsyaml.UnmarshalStrict([]byte(stdout), &cm); err != nil {
		t.Fatalf("not a ConfigMap: %v\n%s", err, stdout)
	}
	if cm.Kind != "ConfigMap" || cm.Name != "nap" || cm.Namespace != "shop" || cm.Labels["app.kubernetes.io/name"] != "nap" || cm.Labels["app.kubernetes.io/version"] == "" {
		t.Errorf("metadata %+v", cm.ObjectMeta)
	}
	if strings.Contains(stdout, "creationTimestamp") {
		t.Errorf("empty fields printed:\n%s", stdout)
	}
	for _, arch := range nap.Arches {
		want, _ := sleeper.Binary(arch)
		key := kube.KeyForArch(arch)
		sum := sha256.Sum256(want)
		if !bytes.Equal(cm.BinaryData[key], want) || cm.Annotations[configmap.SHA256AnnotationPrefix+key] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: %d bytes, sha256 annotation %q", key, len(cm.BinaryData[key]), cm.Annotations[configmap.SHA256AnnotationPrefix+key])
		}
	}
	// Client-side `kubectl apply` stores the object as JSON in the last-applied
	// annotation, which is capped at 256 KiB with all the other annotations.
	last, _ := json.Marshal(cm)
	if len(last) >= 256*1024 {
		t.Errorf("the ConfigMap is %d bytes as JSON: too big for kubectl apply's annotation", len(last))
	}
	t.Logf("ConfigMap: %d bytes of YAML, %d of JSON", len(stdout), len(last))

	cm = corev1.ConfigMap{}
	code, stdout, _ = runNapctl("configmap", "--arch", "arm64", "-o", "json", "--name", "sleeper")
	if err := json.Unmarshal([]byte(stdout), &cm); code != 0 || err != nil || cm.Name != "sleeper" || len(cm.BinaryData) != 1 || cm.BinaryData["nap-arm64"] == nil {
		t.Errorf("--arch arm64 -o json: exit %d, %v, %d keys", code, err, len(cm.BinaryData))
	}
	for _, args := range [][]string{{"configmap", "--arch", "mips"}, {"configmap", "--arch", "amd64,amd64"}} {
		if code, stdout, stderr := runNapctl(args...); code != 2 || stdout != "" || stderr == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}

func TestInjectCommand(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	b := filepath.Join(dir, "b.json")
	os.WriteFile(a, []byte(deployment), 0o644)
	os.WriteFile(b, []byte(`{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}`), 0o644)

	code, stdout, stderr := runNapctlIn(deployment, "inject", "--kube-version", "1.33")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, deployment[:strings.Index(deployment, "      - name")]) || !strings.Contains(stdout, "sleep:\n              seconds: 10") || !strings.Contains(stdout, "- name: app   # main\n") {
		t.Errorf("native inject from stdin:\n%s", stdout)
	}
	code, stdout, stderr = runNapctlIn("", "inject", "-f", a, "-f", b, "--delay", "2.5")
	if code != 0 || !strings.Contains(stdout, "command: [/nap/nap, \"2.5\"]") || !strings.Contains(stdout, "\n---\n{\"apiVersion\": \"batch/v1\"") {
		t.Errorf("two files: exit %d\n%s", code, stdout)
	}
	if !strings.Contains(stderr, b+":1: Job/j: skipped") {
		t.Errorf("no note for the Job: %q", stderr)
	}
	// Idempotent through the CLI as well.
	code, again, _ := runNapctlIn(stdout, "inject", "--delay", "2.5")
	if code != 0 || again != stdout {
		t.Errorf("second inject changed the output:\n%s", again)
	}

	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"kind: Pod\nspec: [\n", []string{"inject"}, "napctl: -:2: invalid YAML"},
		{"", []string{"inject", "-f", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{deployment, []string{"inject", "--mode", "sidecar"}, `--mode "sidecar"`},
		{deployment, []string{"inject", "--delay", "soon"}, `--delay "soon"`},
		{deployment, []string{"inject", "--mode", "native", "--delay", "1.5"}, "whole seconds"},
		{deployment, []string{"inject", "--mode", "native", "--kube-version", "1.29"}, "needs Kubernetes 1.30"},
		{deployment, []string{"inject", "--arch", "s390x"}, `--arch "s390x"`},
		{deployment, []string{"inject", "--kube-version", "1.31", "--live"}, "--kube-version and --live: give one"},
		{deployment, []string{"inject", "--kube-version", "one"}, "--kube-version"},
		{deployment, []string{"inject", "--kubeconfig", filepath.Join(dir, "missing-kubeconfig")}, "--kubeconfig: "},
	} {
		code, stdout, stderr := runNapctlIn(tc.stdin, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	// A bad document after a good file: nothing at all on stdout.
	bad := filepath.Join(dir, "c.yaml")
	os.WriteFile(bad, []byte("kind: Pod\n---\n- list\n"), 0o644)
	if code, stdout, stderr := runNapctlIn("", "inject", "-f", a, "-f", bad); code != 2 || stdout != "" || !strings.Contains(stderr, bad+":3:") {
		t.Errorf("bad second file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// --kubeconfig asks a real API server for its version and its nodes' kubelets: 1.34 or newer
// with no node allows the native sleep (kubelets 1.31+); a 1.29 kubelet among the nodes does
// not, unless the template's nodeSelector keeps the pod off it.
func TestInjectCluster(t *testing.T) {
	cfg := kubeenv.APIServer(t)
	kubeconfig := kubeenv.Kubeconfig(t, cfg)
	code, stdout, stderr := runNapctlIn(deployment, "inject", "--kubeconfig", kubeconfig)
	if code != 0 || !strings.Contains(stdout, "sleep:") || strings.Contains(stdout, "/nap/nap") {
		t.Errorf("exit %d (%s): want the native sleep\n%s", code, stderr, stdout)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct{ name, pool, kubelet string }{{"n1", "new", "v1.34.4"}, {"n2", "old", "v1.29.15"}} {
		node, err := cs.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"pool": n.pool}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.NodeInfo.KubeletVersion = n.kubelet
		if _, err := cs.CoreV1().Nodes().UpdateStatus(context.Background(), node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr = runNapctlIn(deployment, "inject", "--kubeconfig", kubeconfig)
	if code != 0 || strings.Contains(stdout, "sleep:") || !strings.Contains(stdout, "/nap/nap") {
		t.Errorf("a 1.29 kubelet: exit %d (%s): want the nap binary\n%s", code, stderr, stdout)
	}
	onNew := strings.Replace(deployment, "    spec:\n", "    spec:\n      nodeSelector: {pool: new}\n", 1)
	code, stdout, stderr = runNapctlIn(onNew, "inject", "--kubeconfig", kubeconfig)
	if code != 0 || !strings.Contains(stdout, "sleep:") || !strings.Contains(onNew, "nodeSelector") {
		t.Errorf("nodeSelector pool=new: exit %d (%s): want the native sleep\n%s", code, stderr, stdout)
	}
	code, _, stderr = runNapctlIn(deployment, "inject", "--kubeconfig", kubeconfig, "--mode", "native")
	if code != 2 || !strings.Contains(stderr, "node n2 runs kubelet 1.29") {
		t.Errorf("--mode native with a 1.29 kubelet: exit %d, %s", code, stderr)
	}
}

// kubectl finds kubectl-nap on PATH: `kubectl nap inject` is napctl inject.
func TestKubectlPlugin(t *testing.T) {
	kubectl := kubeenv.Kubectl(t)
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-nap"), "github.com/nap-k8s/nap/cmd/kubectl-nap")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cmd := exec.Command(kubectl, "nap", "inject", "--kube-version", "1.33")
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	cmd.Stdin = strings.NewReader(deployment)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl nap inject: %v\n%s", err, errOut.String())
	}
	_, want, _ := runNapctlIn(deployment, "inject", "--kube-version", "1.33")
	if out.String() != want {
		t.Errorf("kubectl nap inject differs from napctl inject:\n%s", out.String())
	}
	cmd = exec.Command(kubectl, "nap", "inject", "--mode", "bogus")
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	cmd.Stdin = strings.NewReader(deployment)
	errOut.Reset()
	cmd.Stderr = &errOut
	if err := cmd.Run(); err == nil || !strings.HasPrefix(errOut.String(), "kubectl nap: --mode") {
		t.Errorf("kubectl nap with a bad flag: %v, stderr %q", err, errOut.String())
	}
}

// What inject writes, lint accepts: no missing delay, no short grace period, no nap
// volume that is not executable or mounts the wrong architecture.
func TestInjectThenLint(t *testing.T) {
	for _, in := range []string{"arch.yaml", "helm.yaml", "deployment.yaml", "flow.yaml", "list.yaml"} {
		for _, mode := range []string{"binary", "native"} {
			src, err := os.ReadFile(filepath.Join("..", "..", "..", "inject", "testdata", "inject", in))
			if err != nil {
				t.Fatal(err)
			}
			code, injected, stderr := runNapctlIn(string(src), "inject", "--mode", mode)
			if code != 0 {
				t.Fatalf("%s: inject: %s", in, stderr)
			}
			_, out, stderr := runNapctlIn(injected, "lint", "-o", "json", "--kube-version", "1.34")
			var rep struct {
				Findings []struct{ ID, Object string }
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%s: %v: %s", in, err, stderr)
			}
			for _, f := range rep.Findings {
				switch f.ID {
				case "no-prestop-delay", "grace-period-too-short", "native-sleep-exceeds-grace", "nap-volume-not-executable", "nap-arch-mismatch":
					if !(f.Object == "Job/migrate" || f.Object == "CronJob/nightly") {
						t.Errorf("%s --mode %s: lint finds %s on %s", in, mode, f.ID, f.Object)
					}
				}
			}
		}
	}
}

// What a delay or a container name given by mistake gets: an error naming it, nothing
// written; a delay of hours a warning; what auto chose, said.
func TestInjectMistakes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"inject", "-f", lintNoReady, "--delay", ""}, 2, `--delay "": want a duration`},
		{[]string{"inject", "-f", lintNoReady, "--delay", "0"}, 2, `--delay "0": a preStop delay of 0 holds nothing`},
		{[]string{"inject", "-f", lintNoReady, "--delay", "0s"}, 2, "holds nothing"},
		{[]string{"inject", "-f", lintNoReady, "--delay", "inf"}, 2, `--delay "inf": nap reads it as forever`},
		{[]string{"inject", "-f", lintNoReady, "--delay", "999999h"}, 2, `--delay "999999h": longer than a preStop wait may be (24h0m0s)`},
		{[]string{"inject", "-f", lintNoReady, "--container", "ap"}, 2, `--container ap: no pod template has a container of that name`},
	} {
		code, stdout, stderr := runNapctl(tc.args...)
		if code != tc.code || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("napctl %q: exit %d, stdout %d bytes, stderr %q; want exit %d and %q", tc.args, code, len(stdout), stderr, tc.code, tc.want)
		}
	}
	code, stdout, stderr := runNapctl("inject", "-f", lintNoPreStop, "--delay", "12h")
	if code != 0 || !strings.Contains(stdout, "/nap/nap") || !strings.Contains(stderr, "warning: --delay 12h: every pod of a rollout, scale-down or drain may take 12h0m0s to go") {
		t.Errorf("--delay 12h: exit %d, stderr %q; want a warning", code, stderr)
	}
	// The container named in one template of several: no error.
	if code, _, stderr := runNapctl("inject", "-f", "../../../inject/testdata/inject/sidecar.yaml", "--container", "proxy"); code != 0 {
		t.Errorf("--container proxy: exit %d: %s", code, stderr)
	}
	// auto without the cluster's version: the binary from the ConfigMap, and where it must be.
	_, _, stderr = runNapctlIn(deployment, "inject")
	if !strings.Contains(stderr, `--mode auto: nap's binary from the ConfigMap "nap" (the cluster's version is unknown`) || !strings.Contains(stderr, "it must be in the namespace you apply to") {
		t.Errorf("inject in auto mode: stderr %q; want what it chose and where the ConfigMap must be", stderr)
	}
	// A version alone allows kubelets older than the native sleep: the assumption is said.
	_, _, stderr = runNapctlIn(deployment, "inject", "--kube-version", "1.31")
	if !strings.Contains(stderr, "with the API server at 1.31 and the nodes unread, a kubelet may be as old as 1.28, 3 minors of skew, older than the native sleep's 1.30: --kubelet-version says how old yours are, --live reads them") {
		t.Errorf("inject --kube-version 1.31: stderr %q; want the skew assumption named", stderr)
	}
	if _, _, stderr = runNapctlIn(deployment, "inject", "--kube-version", "1.34"); strings.Contains(stderr, "ConfigMap") {
		t.Errorf("inject with the native sleep: stderr %q; no ConfigMap is needed", stderr)
	}
}

// Files joined into one stream keep every value: a file that ends in a block scalar
// without a final line break (its value has none) is not given one by the join.
func TestInjectJoinKeepsValues(t *testing.T) {
	dir := t.TempDir()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: run\ndata:\n  run.sh: |\n    exec /app/server"
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	os.WriteFile(a, []byte(cm), 0o644)
	os.WriteFile(b, []byte(deployment), 0o644)
	for _, args := range [][]string{{"inject", "-f", a, "-f", b}, {"inject", "-f", dir}} {
		code, stdout, stderr := runNapctl(args...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		objs, err := manifest.Read("out", []byte(stdout))
		if err != nil || len(objs) != 2 {
			t.Fatalf("%q: %d objects, %v:\n%s", args, len(objs), err, stdout)
		}
		if v, _ := objs[0].Node.Pipe(yaml.Lookup("data", "run.sh")); v == nil || v.YNode().Value != "exec /app/server" {
			t.Errorf("%q: run.sh became %v, want %q:\n%s", args, v, "exec /app/server", stdout)
		}
		if !strings.HasPrefix(stdout, strings.Replace(cm, "|", "|-", 1)+"\n---\n") {
			t.Errorf("%q: the ConfigMap's text:\n%s", args, stdout)
		}
	}
}

// The ConfigMap's hint names the namespaces the input names, one command each, and the
// placeholder only for templates that name none.
func TestInjectConfigMapHintNamespaces(t *testing.T) {
	tmpl := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %[1]s%[2]s}\nspec:\n  template:\n    metadata: {labels: {app: %[1]s}}\n    spec:\n      containers: [{name: a, image: a}]\n"
	for _, c := range []struct {
		name, in, want string
	}{
		{name: "one namespace", in: fmt.Sprintf(tmpl, "w", ", namespace: shop"),
			want: "it must be in shop: napctl configmap -n shop | kubectl apply -f -\n"},
		{name: "two, and none", in: fmt.Sprintf(tmpl, "w", ", namespace: shop") + "---\n" + fmt.Sprintf(tmpl, "v", ", namespace: cart") + "---\n" + fmt.Sprintf(tmpl, "u", ""),
			want: "it must be in the namespace you apply to, cart, shop: napctl configmap -n NAMESPACE | kubectl apply -f -; napctl configmap -n cart | kubectl apply -f -; napctl configmap -n shop | kubectl apply -f -\n"},
	} {
		code, _, stderr := runNapctlIn(c.in, "inject")
		if code != 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", c.name, code, stderr, c.want)
		}
	}
}

// A template that selects no architecture gets nap for amd64 unless told: inject says so
// where it assumed it (its hook cannot run on an arm64 node), and not where --arch named
// the nodes', the template names its own, or no binary is mounted.
func TestInjectAssumedArch(t *testing.T) {
	arm := strings.Replace(deployment, "    spec:\n", "    spec:\n      nodeSelector: {kubernetes.io/arch: arm64}\n", 1)
	const warning = "1 pod templates select no architecture (a kubernetes.io/arch nodeSelector or required node affinity): nap is mounted for amd64"
	for _, c := range []struct {
		name, in string
		args     []string
		warned   bool
		key      string
	}{
		{"adaptive, no selector", deployment, []string{"inject", "--wait", "adaptive"}, true, "key: nap-amd64"},
		{"--arch named", deployment, []string{"inject", "--wait", "adaptive", "--arch", "arm64"}, false, "key: nap-arm64"},
		// --kubelet-version says the kubelets' age, not the nodes' architecture.
		{"kubelets stated, not read", deployment, []string{"inject", "--kube-version", "1.31", "--kubelet-version", "1.29"}, true, "key: nap-amd64"},
		{"its own selector", arm, []string{"inject", "--wait", "adaptive"}, false, "key: nap-arm64"},
		{"the native sleep", deployment, []string{"inject", "--kube-version", "1.37", "--live=false"}, false, "sleep:"},
	} {
		code, stdout, stderr := runNapctlIn(c.in, c.args...)
		if code != 0 || strings.Contains(stderr, warning) != c.warned || !strings.Contains(stdout, c.key) {
			t.Errorf("%s: exit %d, stderr %q (want the warning: %v), %q in stdout: %v", c.name, code, stderr, c.warned, c.key, strings.Contains(stdout, c.key))
		}
	}
}

// As kubectl nap, inject's notes name the command the user typed, and the command that
// makes the ConfigMap is one the plugin has.
func TestInjectNotesAsPlugin(t *testing.T) {
	job := `{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}` + "\n---\n" + deployment
	var out, errOut bytes.Buffer
	code := RunAs("kubectl nap", cli.IOStreams{In: strings.NewReader(job), Out: &out, ErrOut: &errOut}, []string{"inject"})
	stderr := errOut.String()
	if code != 0 || !strings.Contains(stderr, "kubectl nap inject: -:1: Job/j: skipped") ||
		!strings.Contains(stderr, "kubectl nap configmap -n NAMESPACE") || strings.Contains(stderr, "napctl") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	code = RunAs("kubectl nap", cli.IOStreams{In: strings.NewReader(deployment), Out: &out, ErrOut: &errOut}, []string{"inject", "--delay", "0"})
	if code != 2 || !strings.Contains(errOut.String(), "(kubectl nap calibrate measures it)") {
		t.Errorf("--delay 0: exit %d, stderr:\n%s", code, errOut.String())
	}
}

// A folder as kustomize, helm and dashboards leave it: lint and inject skip what is not
// manifests, each with a note naming the file (a Helm chart: its folder, once), why, and
// how to render it, and check the rest; named itself, such a file is still an error.
func TestFolderSkipsWhatIsNotManifests(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kust := write("kustomization.yaml", "resources:\n- deploy.yaml\n")
	write("chart/Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n")
	write("chart/values.yaml", "replicas: 2\n")
	write("chart/templates/deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n")
	write("dashboards/web.json", `{"title": "web", "panels": []}`)
	served, err := os.ReadFile(lintNoPreStop) // Deployments behind Services, no preStop delay
	if err != nil {
		t.Fatal(err)
	}
	write("deploy.yaml", string(served))
	for _, cmd := range []string{"lint", "inject"} {
		code, stdout, stderr := runNapctl(cmd, "-f", dir)
		if want := map[string]int{"lint": 1, "inject": 0}[cmd]; code != want { // lint: no-prestop-delay, an error
			t.Errorf("%s %s: exit %d, want %d\n%s", cmd, dir, code, want, stderr)
		}
		for _, want := range []string{
			kust + ": skipped: a kustomization, not manifests; render it first: kustomize build " + dir + " | napctl " + cmd + " -f -",
			filepath.Join(dir, "chart") + ": skipped: a Helm chart, not manifests; render it first: helm template " + filepath.Join(dir, "chart") + " | napctl " + cmd + " -f -",
			filepath.Join(dir, "dashboards/web.json") + ": skipped: not Kubernetes objects (object without kind)",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: no note %q in:\n%s", cmd, want, stderr)
			}
		}
		if n := strings.Count(stderr, filepath.Join(dir, "chart")+"/"); n != 0 { // one note a chart, not one a file
			t.Errorf("%s: %d notes of the chart's files, want the chart's one:\n%s", cmd, n, stderr)
		}
		checked := "no-prestop-delay"
		if cmd == "inject" {
			checked = "/nap/nap"
		}
		if !strings.Contains(stdout+stderr, checked) {
			t.Errorf("%s: deploy.yaml was not checked:\n%s\n%s", cmd, stdout, stderr)
		}
		if code, _, stderr := runNapctl(cmd, "-f", kust); code != 2 && code != 1 || !strings.Contains(stderr, kust+":1: object without kind") {
			t.Errorf("%s -f %s: exit %d, %s; want the error", cmd, kust, code, stderr)
		}
	}
}

// A folder as a checkout leaves it: an editor's folder, a broken file, a dangling link,
// a named pipe. lint and inject read only regular files (a pipe is never opened: it would
// wait for a writer), say each file they did not read, check the rest, and fail at the
// end as kubectl apply -f does with a folder: lint 2, inject 1, the others written.
func TestFolderGoesOnPastBrokenFiles(t *testing.T) {
	dir := t.TempDir()
	served, err := os.ReadFile(lintNoPreStop)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"app/deploy.yaml":     string(served),
		".vscode/launch.json": "{\n  // the debugger\n  \"version\": \"0.2.0\"\n}\n",
		"app/broken.yaml":     "apiVersion: v1\nkind: Service\nmetadata: {name: [\n",
		"app/settings.json":   "{\n  // a comment\n  \"a\": 1\n}\n",
		".git/config.yaml":    "not: read\n",
		"app/zz-last.yaml":    "apiVersion: v1\nkind: Service\nmetadata: {name: zz}\nspec: {selector: {app: zz}, ports: [{port: 80}]}\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "gone.yaml"), filepath.Join(dir, "app/link.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "app/pipe.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd     string
		code    int
		checked string // what shows the rest was read
	}{
		{cmd: "lint", code: 2, checked: "no-prestop-delay"},
		{cmd: "inject", code: 2, checked: "/nap/nap"},
	} {
		done := make(chan struct{})
		var code int
		var stdout, stderr string
		go func() {
			defer close(done)
			code, stdout, stderr = runNapctl(c.cmd, "-f", dir)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s -f %s: still running after 30 s (a named pipe opened?)", c.cmd, dir)
		}
		if code != c.code || !strings.Contains(stdout, c.checked) {
			t.Errorf("%s: exit %d (want %d), the rest checked: %v\n%s\n%s", c.cmd, code, c.code, strings.Contains(stdout, c.checked), stdout, stderr)
		}
		for _, want := range []string{
			filepath.Join(dir, ".vscode") + ": skipped: a hidden folder, not read",
			filepath.Join(dir, ".git") + ": skipped: a hidden folder, not read",
			filepath.Join(dir, "app/broken.yaml") + ":3: invalid YAML or JSON",
			filepath.Join(dir, "app/settings.json") + ":2: invalid YAML or JSON",
			filepath.Join(dir, "app/link.yaml") + ": stat " + filepath.Join(dir, "app/link.yaml") + ": no such file or directory (not read; the other files were)",
			filepath.Join(dir, "app/pipe.yaml") + ": skipped: not a regular file (a named pipe)",
			"3 file(s) not",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: no note %q in:\n%s", c.cmd, want, stderr)
			}
		}
		if c.cmd == "inject" && !strings.Contains(stdout, "name: zz") {
			t.Errorf("inject: the file after the broken ones was not written:\n%s", stdout)
		}
	}
	// Named itself, a broken file is still an error, and nothing is written.
	code, stdout, _ := runNapctl("inject", "-f", filepath.Join(dir, "app/deploy.yaml"), "-f", filepath.Join(dir, "app/broken.yaml"))
	if code != 2 || stdout != "" {
		t.Errorf("inject -f deploy.yaml -f broken.yaml: exit %d, %d bytes written; want 2 and nothing", code, len(stdout))
	}
}

// With Services in the input, inject delays the templates the webhook's default policy
// would: those a Service of their namespace selects, or whose labels opt them in; it
// names on stderr what it left alone and why. Naming containers is explicit.
func TestInjectDecidesByServices(t *testing.T) {
	tmpl := func(kind, name, ns, labels string) string {
		return fmt.Sprintf("apiVersion: apps/v1\nkind: %s\nmetadata: {name: %s, namespace: %s}\nspec:\n  template:\n    metadata: {labels: {%s}}\n    spec:\n      containers:\n      - name: app\n        image: app\n", kind, name, ns, labels)
	}
	in := strings.Join([]string{
		tmpl("Deployment", "web", "shop", "app: web"),
		"apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n",
		tmpl("Deployment", "worker", "shop", "app: worker"),
		tmpl("DaemonSet", "logs", "shop", "app: logs"),
		tmpl("Deployment", "web", "other", "app: web"), // the Service is in shop
		tmpl("Deployment", "opted", "shop", "app: opted, nap.dev/inject: enabled"),
	}, "---\n")
	code, stdout, stderr := runNapctlIn(in, "inject", "--kube-version", "1.34")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	objs, err := manifest.Read("out", []byte(stdout))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, o := range objs {
		if o.IsWorkload() {
			pre, _ := o.Node.Pipe(yaml.Lookup("spec", "template", "spec", "containers", "[name=app]", "lifecycle", "preStop"))
			got[o.Ref()] = pre != nil
		}
	}
	want := map[string]bool{"Deployment/shop/web": true, "Deployment/shop/worker": false, "DaemonSet/shop/logs": false,
		"Deployment/other/web": false, "Deployment/shop/opted": true}
	if !maps.Equal(got, want) {
		t.Errorf("delayed %v, want %v", got, want)
	}
	for _, note := range []string{"Deployment/shop/worker: left alone: policy default: no Service selects it",
		"DaemonSet/shop/logs: left alone: policy default: no Service selects it", "Deployment/other/web: left alone: policy default: no Service selects it"} {
		if !strings.Contains(stderr, note+" (the inputs hold Services, so only the pod templates a Service selects get the delay") {
			t.Errorf("no note %q, with why the other inputs matter, in:\n%s", note, stderr)
		}
	}
	// --container is explicit: every template with that container.
	_, stdout, _ = runNapctlIn(in, "inject", "--kube-version", "1.34", "--container", "app")
	if n := strings.Count(stdout, "preStop"); n != 5 {
		t.Errorf("--container app: %d hooks, want 5:\n%s", n, stdout)
	}
}

// UTF-16 input (what Windows PowerShell 5.1's `>` writes) is edited and written back in
// UTF-16, with its byte-order mark; lint reads it too.
func TestInjectUTF16(t *testing.T) {
	crlf := strings.ReplaceAll(deployment, "\n", "\r\n")
	for _, enc := range []manifest.Encoding{manifest.UTF16LE, manifest.UTF16BE} {
		in := manifest.FromUTF8([]byte(crlf), enc)
		code, stdout, stderr := runNapctlIn(string(in), "inject", "--kube-version", "1.34")
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", enc, code, stderr)
		}
		text, got, err := manifest.ToUTF8([]byte(stdout))
		if err != nil || got != enc {
			t.Fatalf("%v: output in %v, %v", enc, got, err)
		}
		_, want, _ := runNapctlIn(crlf, "inject", "--kube-version", "1.34")
		if string(text) != want {
			t.Errorf("%v: the edit differs from UTF-8's:\n%s", enc, text)
		}
		if code, _, stderr := runNapctlIn(string(in), "lint"); code == 2 {
			t.Errorf("%v: lint could not read it: %s", enc, stderr)
		}
	}
	// A file in UTF-16 beside one in UTF-8: one stream, in UTF-8, said so.
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	os.WriteFile(a, manifest.FromUTF8([]byte(deployment), manifest.UTF16LE), 0o644)
	os.WriteFile(b, []byte(deployment), 0o644)
	code, stdout, stderr := runNapctl("inject", "-f", a, "-f", b)
	if _, enc, _ := manifest.ToUTF8([]byte(stdout)); code != 0 || enc != manifest.UTF8 || !strings.Contains(stderr, a+" is UTF-16 (little-endian), the other inputs are not: all are written as UTF-8") {
		t.Errorf("mixed: exit %d, %v, stderr %s", code, enc, stderr)
	}
}
