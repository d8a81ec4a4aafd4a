package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nap-k8s/nap/internal/cli"
	nlint "github.com/nap-k8s/nap/lint"
)

func runNapctlIn(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Run(cli.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut}, args)
	return code, out.String(), errOut.String()
}

const lintClean = "../../../lint/testdata/clean.yaml"
const lintNoReady = "../../../lint/testdata/checks/no-readiness-probe.yaml"

// lintNoPreStop has Deployments behind Services without a preStop delay: what inject
// delays (under the default policy, only what a Service selects).
const lintNoPreStop = "../../../lint/testdata/checks/no-prestop-delay.yaml"

// warnOnly is a Deployment with one replica behind its Service and no PDB: warnings only.
const warnOnly = `apiVersion: apps/v1
kind: Deployment
metadata: {name: w}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: w}}
    spec:
      containers:
      - name: app
        image: x
        readinessProbe: {httpGet: {path: /readyz, port: 8080}}
        lifecycle: {preStop: {sleep: {seconds: 10}}}
---
apiVersion: v1
kind: Service
metadata: {name: w}
spec: {selector: {app: w}, ports: [{port: 80}]}
`

func TestLintExitCodes(t *testing.T) {
	clean, err := os.ReadFile(lintClean)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := os.ReadFile(lintNoReady)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		out   string // in stdout
		err   string // in stderr
	}{
		{"clean file", "", []string{"lint", "-f", lintClean}, 0, "0 error(s), 0 warning(s)", ""},
		{"clean stdin", string(clean), []string{"lint"}, 0, "0 error(s)", ""},
		{"clean stdin dash", string(clean), []string{"lint", "-f", "-"}, 0, "0 error(s)", ""},
		{"error finding", "", []string{"lint", "-f", lintNoReady}, 1, "no-readiness-probe.yaml:15: error:", ""},
		{"error finding stdin names -", string(bad), []string{"lint"}, 1, "-:15: error:", ""},
		{"warnings pass by default", warnOnly, []string{"lint"}, 0, "warning", ""},
		{"warnings fail with --fail-on warning", warnOnly, []string{"lint", "--fail-on", "warning"}, 1, "warning", ""},
		{"bad yaml names file:line", "apiVersion: v1\nkind: Pod\nmetadata: {name: [\n", []string{"lint"}, 2, "", "napctl: -:"},
		{"not an object", "- a\n- b\n", []string{"lint"}, 2, "", "-:1: a document is not an object"},
		{"missing file", "", []string{"lint", "-f", "does-not-exist.yaml"}, 2, "", "does-not-exist.yaml"},
		{"bad output", "", []string{"lint", "-o", "xml"}, 2, "", `-o "xml"`},
		{"bad fail-on", "", []string{"lint", "--fail-on", "info"}, 2, "", "--fail-on"},
		{"bad kube-version", "", []string{"lint", "--kube-version", "1"}, 2, "", "--kube-version"},
		{"args are paths", "", []string{"lint", "x.yaml"}, 2, "", "x.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runNapctlIn(tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.out) || !strings.Contains(stderr, tc.err) {
				t.Errorf("napctl %v: exit %d (want %d)\nstdout: %s\nstderr: %s", tc.args, code, tc.code, stdout, stderr)
			}
			if code == 2 && stdout != "" {
				t.Errorf("unreadable input wrote to stdout: %q", stdout)
			}
		})
	}
}

// A workload with a value of the wrong type is not dropped without a word: lint names
// it at the value's line, checks the others, and exits 2 (invalid input) at the end.
func TestLintUncheckedWorkload(t *testing.T) {
	const in = `apiVersion: apps/v1
kind: Deployment
metadata: {name: quoted}
spec:
  replicas: "2"
  template:
    metadata: {labels: {app: quoted}}
    spec:
      containers: [{name: app, image: x}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: fine}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: fine}}
    spec:
      containers: [{name: app, image: x}]
---
apiVersion: v1
kind: Service
metadata: {name: fine}
spec: {selector: {app: fine}, ports: [{port: 80}]}
`
	for _, format := range []string{"text", "json", "sarif"} {
		code, stdout, stderr := runNapctlIn(in, "lint", "-o", format)
		if code != 2 {
			t.Errorf("-o %s: exit %d, want 2\n%s", format, code, stderr)
		}
		if want := "-:5: Deployment/quoted: not checked: spec.replicas is a string, where Kubernetes takes an integer"; !strings.Contains(stderr, want) {
			t.Errorf("-o %s: stderr %q, want %q", format, stderr, want)
		}
		if !strings.Contains(stdout, nlint.NoReadinessProbe) || !strings.Contains(stdout, "fine") || strings.Contains(stdout, "quoted") {
			t.Errorf("-o %s: the other workload's findings alone, want them written:\n%s", format, stdout)
		}
	}
}

// An object that two inputs hold is one object: the same file given twice, or a copy of
// it, leaves one backend behind the Service (the single-replica warning stays), and lint
// says which copy it checked.
func TestLintDuplicateObjects(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, []byte(warnOnly), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		args  []string
		where string // the file of the finding
		says  string // on stderr
	}{
		{name: "one file given twice", args: []string{"-f", a, "-f", a}, where: a + ":1:",
			says: a + ":1: Deployment/w: read twice (the same input given twice): counted once"},
		{name: "a copy in another file", args: []string{"-f", a, "-f", b}, where: b + ":1:",
			says: a + ":1: Deployment/w: also in " + b + ":1, which is checked in its place"},
		{name: "a folder and a file in it", args: []string{"-f", dir, "-f", a}, where: a + ":1:",
			says: b + ":1: Deployment/w: also in " + a + ":1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runNapctlIn("", append([]string{"lint"}, c.args...)...)
			if code != 0 || strings.Count(stdout, "["+nlint.SingleReplica+"]") != 1 || !strings.Contains(stdout, c.where) {
				t.Errorf("exit %d: want one %s warning at %s\n%s", code, nlint.SingleReplica, c.where, stdout)
			}
			if !strings.Contains(stderr, c.says) {
				t.Errorf("stderr %q, want %q", stderr, c.says)
			}
		})
	}
}

// A finding about another object of the workload's (a PodDisruptionBudget in a file of
// its own) points at that object's file and line, in every format.
func TestLintFindingInAnotherFile(t *testing.T) {
	dir := t.TempDir()
	deploy, pdb := filepath.Join(dir, "deploy.yaml"), filepath.Join(dir, "pdb.yaml")
	files := map[string]string{
		deploy: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: x
        readinessProbe: {httpGet: {path: /readyz, port: 8080}}
        lifecycle: {preStop: {sleep: {seconds: 10}}}
`,
		pdb: `# the budget
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 100%
  selector: {matchLabels: {app: web}}
`,
	}
	for f, src := range files {
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, stdout, _ := runNapctlIn("", "lint", "-f", deploy, "-f", pdb)
	if want := pdb + ":3: warning: Deployment/web: PodDisruptionBudget web allows no disruption"; !strings.Contains(stdout, want) {
		t.Errorf("text: want %q in\n%s", want, stdout)
	}
	_, stdout, _ = runNapctlIn("", "lint", "-f", deploy, "-f", pdb, "-o", "json")
	var rep struct{ Findings []nlint.Finding }
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings {
		if f.ID == nlint.PDBBlocksDrain {
			found = true
			if f.File != pdb || f.Line != 3 || f.Object != "Deployment//web" {
				t.Errorf("json: %s at %s:%d about %s, want %s:3 about Deployment//web", f.ID, f.File, f.Line, f.Object, pdb)
			}
		}
	}
	if !found {
		t.Errorf("json: no %s finding\n%s", nlint.PDBBlocksDrain, stdout)
	}
	_, stdout, _ = runNapctlIn("", "lint", "-f", deploy, "-f", pdb, "-o", "sarif")
	var log sarifLog
	if err := json.Unmarshal([]byte(stdout), &log); err != nil || len(log.Runs) != 1 {
		t.Fatalf("sarif: %v\n%s", err, stdout)
	}
	found = false
	for _, r := range log.Runs[0].Results {
		if r.RuleID == nlint.PDBBlocksDrain {
			found = true
			if loc := r.Locations[0].Physical; !strings.HasSuffix(loc.Artifact.URI, "pdb.yaml") || loc.Region.StartLine != 3 {
				t.Errorf("sarif: %s at %s:%d, want pdb.yaml:3", r.RuleID, loc.Artifact.URI, loc.Region.StartLine)
			}
		}
	}
	if !found {
		t.Errorf("sarif: no %s result\n%s", nlint.PDBBlocksDrain, stdout)
	}
}

func TestLintListAndJSONInput(t *testing.T) {
	list := `{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "j"},
   "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "j"}},
     "spec": {"containers": [{"name": "app", "image": "x"}]}}}},
  {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "j"},
   "spec": {"selector": {"app": "j"}, "ports": [{"port": 80}]}}
]}`
	code, stdout, stderr := runNapctlIn(list, "lint", "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (no readiness probe)\n%s%s", code, stdout, stderr)
	}
	var rep struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Findings   []map[string]any `json:"findings"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.APIVersion != "lint.nap.dev/v1" || rep.Kind != "LintReport" {
		t.Fatalf("-o json is not a lint.nap.dev/v1 LintReport: %v\n%s", err, stdout)
	}
	findings := rep.Findings
	for _, f := range findings {
		// The object by its parts, besides the packed Kind/namespace/name: always three.
		if f["kind"] == nil || f["name"] == nil || f["namespace"] == nil || f["object"] != fmt.Sprintf("%s/%s/%s", f["kind"], f["namespace"], f["name"]) {
			t.Errorf("finding %v: kind, namespace and name do not make its object", f)
		}
	}
	ids := map[any]bool{}
	for _, f := range findings {
		ids[f["id"]] = true
		if f["object"] != "Deployment//j" && f["object"] != "Service//j" {
			t.Errorf("finding on %v", f["object"])
		}
	}
	if !ids["no-readiness-probe"] {
		t.Errorf("List items were not linted: %v", findings)
	}
}

func TestLintDirectoryAndSARIF(t *testing.T) {
	dir := t.TempDir()
	bad, _ := os.ReadFile(lintNoReady)
	clean, _ := os.ReadFile(lintClean)
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "b.yml"), bad, 0o644)
	os.WriteFile(filepath.Join(dir, "a.yaml"), clean, 0o644)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("not yaml: ["), 0o644)
	code, stdout, stderr := runNapctlIn("", "lint", "-f", dir, "-o", "sarif")
	if code != 1 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var log sarifLog
	if err := json.Unmarshal([]byte(stdout), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != 1 {
		t.Fatalf("SARIF: %s", stdout)
	}
	r := log.Runs[0].Results[0]
	loc := r.Locations[0].Physical
	if r.RuleID != "no-readiness-probe" || !strings.HasSuffix(loc.Artifact.URI, "sub/b.yml") || loc.Region.StartLine != 15 {
		t.Errorf("SARIF result %+v", r)
	}
}

// sarifLog is what the tests read of lint's SARIF.
type sarifLog struct {
	Version string `json:"version"`
	Runs    []struct {
		Results []struct {
			RuleID    string `json:"ruleId"`
			Locations []struct {
				Physical struct {
					Artifact struct {
						URI string `json:"uri"`
					} `json:"artifactLocation"`
					Region struct {
						StartLine int `json:"startLine"`
					} `json:"region"`
				} `json:"physicalLocation"`
			} `json:"locations"`
		} `json:"results"`
	} `json:"runs"`
}

// A pipeline names what it pipes in: file:line and SARIF's uri say the chart's path.
func TestLintStdinFilename(t *testing.T) {
	bad, err := os.ReadFile(lintNoReady)
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runNapctlIn(string(bad), "lint", "--stdin-filename", "charts/shop/templates/api.yaml")
	if code != 1 || !strings.Contains(out, "charts/shop/templates/api.yaml:15: error:") {
		t.Errorf("exit %d, want file:line under the given name:\n%s", code, out)
	}
	_, out, _ = runNapctlIn(string(bad), "lint", "--stdin-filename", "charts/shop/templates/api.yaml", "-o", "sarif")
	if !strings.Contains(out, `"uri": "charts/shop/templates/api.yaml"`) || strings.Contains(out, `"uri": "-"`) {
		t.Errorf("SARIF uri not the given name:\n%s", out)
	}
}

// What lint does not check, it says; an OpenShift DeploymentConfig it checks as a
// Deployment.
func TestLintSaysWhatItDoesNotCheck(t *testing.T) {
	in := `apiVersion: apps.openshift.io/v1
kind: DeploymentConfig
metadata: {name: web}
spec:
  replicas: 2
  selector: {app: web}
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: registry.example/web:1
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: template.openshift.io/v1
kind: Template
metadata: {name: shop}
objects:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: "${NAME}"}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec:
  template:
    spec:
      containers: [{name: a, image: a}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  template:
    spec:
      containers: [{name: a, image: a}]
---
apiVersion: apps.kruise.io/v1alpha1
kind: UnitedDeployment
metadata: {name: ud}
spec:
  replicas: 4
  template:
    deploymentTemplate:
      metadata: {labels: {app: ud}}
      spec:
        template:
          metadata: {labels: {app: ud}}
          spec:
            containers: [{name: a, image: a}]
`
	code, stdout, stderr := runNapctlIn(in, "lint")
	if code != 1 {
		t.Errorf("exit %d", code)
	}
	for _, want := range []string{"DeploymentConfig/web container web: container \"web\" serves behind Service web but has no readinessProbe",
		"DeploymentConfig/web container web: container \"web\" gets SIGTERM while Service web may still route to it: no preStop delay",
		"DeploymentConfig/web: strategy Recreate"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in:\n%s", want, stdout)
		}
	}
	for _, want := range []string{"napctl lint: -:22: Template/shop: not checked: an OpenShift Template: its objects take parameters; render it first (oc process -f -)",
		"napctl lint: -:30: Widget/w: not checked: example.com/v1 Widget is not a kind nap knows",
		"napctl lint: -:46: UnitedDeployment/ud: not checked: apps.kruise.io/v1alpha1 UnitedDeployment is not a kind nap knows; its pods (spec.template.deploymentTemplate.spec.template.spec) are for its controller to shape"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("no %q in:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "Job/j") {
		t.Errorf("a Job was said to be unchecked:\n%s", stderr)
	}
}

// --kubelet-version says how old the nodes' kubelets are where no cluster is read:
// beside --kube-version 1.31, kubelets are assumed as old as 1.28 (the skew policy), which
// have no native sleep; with --kubelet-version 1.31 inject writes the native sleep and
// lint passes it. A kubelet newer than its API server, or one without --kube-version, is
// refused.
func TestKubeletVersion(t *testing.T) {
	const native = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: registry.example/app:1
        readinessProbe: {httpGet: {path: /readyz, port: 8080}}
        lifecycle: {preStop: {sleep: {seconds: 5}}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
`
	for _, tc := range []struct {
		name, stdin string
		args        []string
		code        int
		out, err    string
	}{
		{"lint: kubelets assumed as old as the skew allows", native, []string{"lint", "--kube-version", "1.31"}, 1,
			"kubelets may be as old as 1.28 (the version skew policy), which do not have it (1.30+)", ""},
		{"lint: the kubelets said", native, []string{"lint", "--kube-version", "1.31", "--kubelet-version", "1.31"}, 0, "0 error(s)", ""},
		{"lint: kubelets said too old", native, []string{"lint", "--kube-version", "1.31", "--kubelet-version", "1.29"}, 1,
			"which kubelets 1.29 (--kubelet-version) do not have (1.30+)", ""},
		{"lint: newer than the API server", native, []string{"lint", "--kube-version", "1.31", "--kubelet-version", "1.32"}, 2, "",
			"--kubelet-version 1.32 is newer than --kube-version 1.31"},
		{"lint: without --kube-version", native, []string{"lint", "--kubelet-version", "1.31"}, 2, "", "--kubelet-version 1.31 goes with --kube-version"},
		{"inject: the skew's kubelets get the binary", deployment, []string{"inject", "--kube-version", "1.31"}, 0, "/nap/nap", "--kubelet-version says how old yours are"},
		{"inject: the kubelets said get the native sleep", deployment, []string{"inject", "--kube-version", "1.31", "--kubelet-version", "1.31"}, 0, "sleep:", ""},
		{"inject: without --kube-version", deployment, []string{"inject", "--kubelet-version", "1.31"}, 2, "", "--kubelet-version 1.31 goes with --kube-version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runNapctlIn(tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.out) || !strings.Contains(stderr, tc.err) {
				t.Errorf("napctl %v: exit %d (want %d)\nstdout: %s\nstderr: %s", tc.args, code, tc.code, stdout, stderr)
			}
		})
	}
}
