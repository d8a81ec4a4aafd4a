package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kjson "k8s.io/apimachinery/pkg/util/json"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testutil/golden"
	"github.com/nap-k8s/nap/internal/testutil/rendered"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/traffic"
)

func read(t testing.TB, path string) []*manifest.Object {
	t.Helper()
	objs, _, err := manifest.ReadPaths([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

var v131 = Version{Major: 1, Minor: 31}

// fixtureNodes: the fixtures' cluster, 1.31 with 1.31 kubelets (TestKubeletSkew varies them).
var fixtureNodes = []kube.Node{{Name: "node-1", Kubelet: v131}}

// checkOptions are the options of check id's testdata: the fixtures' cluster, and for
// delay-below-path the calibration in testdata/calibration.json.
func checkOptions(t testing.TB, id string) Options {
	t.Helper()
	opts := Options{KubeVersion: &v131, Nodes: fixtureNodes}
	if id == DelayBelowPath {
		f, err := os.Open(filepath.Join("testdata", "calibration.json"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if opts.Calibration, err = traffic.ReadCalibration(f, f.Name()); err != nil {
			t.Fatal(err)
		}
	}
	return opts
}

// Objects read from a cluster (manifest.FromValue over what the API server returned)
// get the same findings as the same objects read from files: every check's testdata,
// each object decoded to plain values and built again.
func TestChecksFromValues(t *testing.T) {
	for _, c := range Checks() {
		path := filepath.Join("testdata", "checks", c.ID+".yaml")
		files := read(t, path)
		var values []*manifest.Object
		for _, o := range files {
			var tree any
			if err := o.Decode(&tree); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(tree)
			if err != nil {
				t.Fatal(err)
			}
			v := map[string]any{}
			if err := kjson.Unmarshal(b, &v); err != nil { // as an API client decodes
				t.Fatal(err)
			}
			lo, err := manifest.FromValue("live:"+o.Ref(), v)
			if err != nil {
				t.Fatalf("%s: %v", o.Ref(), err)
			}
			values = append(values, lo)
		}
		opts := checkOptions(t, c.ID)
		key := func(fs []Finding) []string {
			var out []string
			for _, f := range fs {
				out = append(out, f.Object+" "+f.ID+" "+f.Container+" "+f.Message)
			}
			slices.Sort(out)
			return out
		}
		got, want := key(Lint(values, opts)), key(Lint(files, opts))
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: from values\n%s\nfrom the file\n%s", c.ID, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestChecks: testdata/checks/<id>.yaml holds objects named bad-* that must get a
// finding of check <id> (and no other) and good-* objects that must get none; the text
// output is kept in <id>.golden.
func TestChecks(t *testing.T) {
	for _, c := range Checks() {
		t.Run(c.ID, func(t *testing.T) {
			path := filepath.Join("testdata", "checks", c.ID+".yaml")
			objs := read(t, path)
			fs := Lint(objs, checkOptions(t, c.ID))
			flagged := map[string]bool{}
			for _, f := range fs {
				name := f.Object[strings.LastIndex(f.Object, "/")+1:]
				flagged[name] = true
				if f.ID != c.ID {
					t.Errorf("%s: unexpected %s finding: %s", f.Object, f.ID, f.Message)
				}
				if !strings.HasPrefix(name, "bad-") {
					t.Errorf("%s flagged: %s", f.Object, f.Message)
				}
				if f.Line < 1 || f.File != path || f.Message == "" || f.Hint == "" || f.Severity == 0 {
					t.Errorf("incomplete finding %+v", f)
				}
			}
			bad := 0
			for _, o := range objs {
				if o.IsWorkload() && strings.HasPrefix(o.Name, "bad-") {
					bad++
					if !flagged[o.Name] {
						t.Errorf("%s: no %s finding", o.Ref(), c.ID)
					}
				}
			}
			if bad == 0 {
				t.Error("no bad-* case")
			}
			var out bytes.Buffer
			Text(&out, fs)
			golden.Check(t, filepath.Join("testdata", "checks", c.ID+".golden"), out.Bytes())
		})
	}
}

func TestClean(t *testing.T) {
	if fs := Lint(read(t, "testdata/clean.yaml"), Options{KubeVersion: &Version{Major: 1, Minor: 34}}); len(fs) != 0 {
		t.Errorf("the clean set has findings: %+v", fs)
	}
}

func TestNativeSleepBefore130(t *testing.T) {
	fs := Lint(read(t, "testdata/checks/native-sleep-exceeds-grace.yaml"), Options{KubeVersion: &Version{Major: 1, Minor: 29}})
	n := 0
	for _, f := range fs {
		if f.ID == NativeSleepUnsupported {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d %s findings on 1.29, want one per native sleep (2)", n, NativeSleepUnsupported)
	}
	if fs := Lint(read(t, "testdata/checks/native-sleep-unsupported.yaml"), Options{}); len(fs) != 0 {
		t.Errorf("findings without --kube-version: %+v", fs)
	}
}

func TestPreStopShellSeverity(t *testing.T) {
	sev := map[string]Severity{}
	for _, f := range Lint(read(t, "testdata/checks/prestop-needs-shell.yaml"), Options{}) {
		sev[f.Object] = f.Severity
	}
	if sev["Deployment/bad-shell"] != Warning || sev["Deployment/bad-shell-distroless"] != Error {
		t.Errorf("severities %v: want a warning for an image that may have a shell and an error for distroless", sev)
	}
}

func TestIgnoreAnnotation(t *testing.T) {
	data := []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: one
  annotations: {lint.nap.dev/ignore: "single-replica, no-readiness-probe"}
spec:
  template:
    metadata: {labels: {app: one}}
    spec:
      containers: [{name: app, image: x}]
---
apiVersion: v1
kind: Service
metadata: {name: one}
spec: {selector: {app: one}}
`)
	objs, err := manifest.Read("a.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, f := range Lint(objs, Options{}) {
		ids[f.ID] = true
	}
	if ids[SingleReplica] || ids[NoReadinessProbe] || !ids[NoPreStopDelay] {
		t.Errorf("findings %v: want the ignored checks gone and the others kept", ids)
	}
	// The same annotation on the pod template.
	onTemplate := strings.Replace(strings.Replace(string(data), "  annotations: {lint.nap.dev/ignore: \"single-replica, no-readiness-probe\"}\n", "", 1),
		"    metadata: {labels: {app: one}}", "    metadata: {labels: {app: one}, annotations: {lint.nap.dev/ignore: \"single-replica, no-readiness-probe\"}}", 1)
	if objs, err = manifest.Read("b.yaml", []byte(onTemplate)); err != nil {
		t.Fatal(err)
	}
	ids = map[string]bool{}
	for _, f := range Lint(objs, Options{}) {
		ids[f.ID] = true
	}
	if ids[SingleReplica] || ids[NoReadinessProbe] || !ids[NoPreStopDelay] {
		t.Errorf("annotation on the template: findings %v: want the ignored checks gone and the others kept", ids)
	}
}

// Configured severities win both ways, and a Config built in code is one loaded from a file.
func TestConfigSeverityBothWays(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte("severity: {single-replica: error, prestop-needs-shell: warning}\n"), 0o644)
	loaded, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	built := Config{Severity: map[string]Severity{SingleReplica: Error, PreStopNeedsShell: Warning}}
	if err := built.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  Config
	}{{name: "loaded", cfg: loaded}, {name: "built", cfg: built}} {
		sev := map[string]Severity{}
		for _, file := range []string{"testdata/checks/single-replica.yaml", "testdata/checks/prestop-needs-shell.yaml"} {
			for _, f := range Lint(read(t, file), Options{Config: c.cfg}) {
				sev[f.Object+" "+f.ID] = f.Severity
			}
		}
		// Raised: single-replica is a warning by default. Lowered: a distroless image's
		// shell preStop is an error by default.
		if got := sev["Deployment/bad-one "+SingleReplica]; got != Error {
			t.Errorf("%s: single-replica %v, want error", c.name, got)
		}
		if got := sev["Deployment/bad-shell-distroless "+PreStopNeedsShell]; got != Warning {
			t.Errorf("%s: prestop-needs-shell on distroless %v, want warning", c.name, got)
		}
	}
	if err := (Config{Severity: map[string]Severity{"nope": Error}}).Validate(); err == nil {
		t.Error("an unknown check in a built Config: no error")
	}
	if err := (Config{Severity: map[string]Severity{NoPDB: 7}}).Validate(); err == nil {
		t.Error("severity 7 in a built Config: no error")
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, fmt.Sprint(len(s))+".yaml")
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	cfg, err := LoadConfig(write("disable: [no-pdb]\nseverity: {single-replica: error}\ndrainMargin: 10s\nshellless: [registry.example/]\n"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]Severity{}
	for _, f := range Lint(read(t, "testdata/checks/single-replica.yaml"), Options{Config: cfg}) {
		ids[f.ID] = f.Severity
	}
	if ids[SingleReplica] != Error {
		t.Errorf("single-replica severity %v, want error from the configuration", ids[SingleReplica])
	}
	for _, f := range Lint(read(t, "testdata/checks/no-pdb.yaml"), Options{Config: cfg}) {
		if f.ID == NoPDB {
			t.Error("a disabled check ran")
		}
	}
	for _, f := range Lint(read(t, "testdata/checks/prestop-needs-shell.yaml"), Options{Config: cfg}) {
		if f.Severity != Error {
			t.Errorf("%s: %v, want error: the configuration says registry.example/ images have no shell", f.Object, f.Severity)
		}
	}
	for _, bad := range []string{"disable: [nope]\n", "severity: {no-pdb: fatal}\n", "drainMargin: soon\n", "unknown: 1\n"} {
		if _, err := LoadConfig(write(bad)); err == nil {
			t.Errorf("config %q: no error", bad)
		}
	}
}

func TestJSONHasExactlyTheFields(t *testing.T) {
	var out bytes.Buffer
	JSON(&out, Lint(read(t, "testdata/checks/no-readiness-probe.yaml"), Options{}))
	var rep map[string]json.RawMessage
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep) != 3 || string(rep["apiVersion"]) != `"`+ReportAPIVersion+`"` || string(rep["kind"]) != `"`+ReportKind+`"` {
		t.Fatalf("%v: not a %s %s with its findings: %s", err, ReportAPIVersion, ReportKind, out.String())
	}
	var got []map[string]any
	if err := json.Unmarshal(rep["findings"], &got); err != nil || len(got) == 0 {
		t.Fatalf("%v: %s", err, out.String())
	}
	// The fixture's objects have no namespace: namespace is there, empty, and the object
	// has its three parts all the same (Kind/namespace/name).
	want := []string{"container", "file", "hint", "id", "kind", "line", "message", "name", "namespace", "object", "severity"}
	for _, f := range got {
		if len(f) != len(want) {
			t.Errorf("fields %v, want %v", f, want)
		}
		if f["namespace"] != "" || f["object"] != fmt.Sprint(f["kind"], "//", f["name"]) {
			t.Errorf("namespace %q, object %q: want \"\" and Kind//name", f["namespace"], f["object"])
		}
		for _, k := range want {
			if _, ok := f[k]; !ok {
				t.Errorf("field %q missing in %v", k, f)
			}
		}
	}
}

// TestSARIF checks the properties that the SARIF 2.1.0 schema requires, and the ones
// code-scanning tools rely on (rule ids, levels, locations).
func TestSARIF(t *testing.T) {
	fs := Lint(read(t, "testdata/checks/pdb-blocks-drain.yaml"), Options{})
	var out bytes.Buffer
	if err := SARIF(&out, fs, "test"); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results *[]struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
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
	if err := json.Unmarshal(out.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || log.Runs[0].Tool.Driver.Name == "" || log.Runs[0].Results == nil {
		t.Fatalf("not a SARIF 2.1.0 log: %s", out.String())
	}
	run := log.Runs[0]
	if len(run.Tool.Driver.Rules) != len(Checks()) || len(*run.Results) != len(fs) {
		t.Fatalf("%d rules and %d results, want %d and %d", len(run.Tool.Driver.Rules), len(*run.Results), len(Checks()), len(fs))
	}
	for _, r := range *run.Results {
		if r.Message.Text == "" || (r.Level != "error" && r.Level != "warning") || run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID ||
			len(r.Locations) != 1 || r.Locations[0].PhysicalLocation.ArtifactLocation.URI == "" || r.Locations[0].PhysicalLocation.Region.StartLine < 1 {
			t.Errorf("incomplete result %+v", r)
		}
	}
}

// BenchmarkLint10k reads and lints 10,000 objects (2,500 applications of a Deployment,
// a Service, a PodDisruptionBudget and an HPA).
var benchApps = 2500

func BenchmarkLint10k(b *testing.B) {
	clean, err := os.ReadFile("testdata/clean.yaml")
	if err != nil {
		b.Fatal(err)
	}
	docs := strings.Split(string(clean), "\n---\n")[:4]
	var buf strings.Builder
	for i := range benchApps {
		for _, d := range docs {
			buf.WriteString(strings.ReplaceAll(d, "shop", fmt.Sprintf("shop%d", i)))
			buf.WriteString("\n---\n")
		}
	}
	data := []byte(buf.String())
	b.ReportAllocs()
	for b.Loop() {
		objs, err := manifest.Read("bench.yaml", data)
		if err != nil || len(objs) != 4*benchApps {
			b.Fatalf("%d objects: %v", len(objs), err)
		}
		if fs := Lint(objs, Options{}); len(fs) != 0 {
			b.Fatalf("%d findings", len(fs))
		}
	}
}

// The selector index must find what trying every selector finds: equality, set-based
// and multi-key selectors, across namespaces.
func TestLinkSelectors(t *testing.T) {
	in := `apiVersion: apps/v1
kind: Deployment
metadata: {name: w, namespace: a}
spec:
  template:
    metadata: {labels: {app: w, tier: web}}
    spec: {containers: [{name: c, image: x}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: eq, namespace: a}
spec: {selector: {matchLabels: {app: w, tier: web}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: in, namespace: a}
spec: {selector: {matchExpressions: [{key: tier, operator: In, values: [web, api]}]}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: exists, namespace: a}
spec: {selector: {matchExpressions: [{key: app, operator: Exists}]}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: notin, namespace: a}
spec: {selector: {matchExpressions: [{key: tier, operator: NotIn, values: [web]}]}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: other-ns, namespace: b}
spec: {selector: {matchLabels: {app: w}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: partial, namespace: a}
spec: {selector: {matchLabels: {app: w, tier: db}}}
---
apiVersion: v1
kind: Service
metadata: {name: s1, namespace: a}
spec: {selector: {tier: web}}
---
apiVersion: v1
kind: Service
metadata: {name: s2, namespace: a}
spec: {selector: {app: other}}
`
	objs, err := manifest.Read("in.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	ws := Workloads(objs)
	if len(ws) != 1 {
		t.Fatalf("%d workloads", len(ws))
	}
	var pdbs, svcs []string
	for _, p := range ws[0].PDBs {
		pdbs = append(pdbs, p.Obj.Name)
	}
	for _, s := range ws[0].Services {
		svcs = append(svcs, s.Name)
	}
	if got := strings.Join(pdbs, ","); got != "eq,in,exists" {
		t.Errorf("PDBs %s, want eq,in,exists", got)
	}
	if got := strings.Join(svcs, ","); got != "s1" {
		t.Errorf("Services %s, want s1", got)
	}
}

// The native sleep is checked against every kubelet that may run the pod, the rule
// napctl inject and the webhook follow: known nodes narrowed by the nodeSelector, else
// the oldest kubelet the skew policy allows.
func TestKubeletSkew(t *testing.T) {
	objs, err := manifest.Read("d.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: anywhere}
spec:
  template:
    spec:
      containers:
      - {name: app, image: a, lifecycle: {preStop: {sleep: {seconds: 5}}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: new-pool}
spec:
  template:
    spec:
      nodeSelector: {pool: new}
      containers:
      - {name: app, image: a, lifecycle: {preStop: {sleep: {seconds: 5}}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	v134 := Version{Major: 1, Minor: 34}
	mixed := []kube.Node{{Name: "n-new", Labels: map[string]string{"pool": "new"}, Kubelet: v134},
		{Name: "n-old", Labels: map[string]string{"pool": "old"}, Kubelet: Version{Major: 1, Minor: 29}}}
	for _, c := range []struct {
		name string
		opts Options
		want map[string]string // flagged object → what its message says
	}{
		{name: "1.34, nodes unknown: kubelets 1.31+", opts: Options{KubeVersion: &v134}, want: map[string]string{}},
		{name: "1.31, nodes unknown: kubelets may be 1.28", opts: Options{KubeVersion: &v131},
			want: map[string]string{"anywhere": "may be as old as 1.28", "new-pool": "may be as old as 1.28"}},
		{name: "mixed nodes", opts: Options{KubeVersion: &v134, Nodes: mixed},
			want: map[string]string{"anywhere": "node n-old's kubelet 1.29"}},
		{name: "new nodes only", opts: Options{KubeVersion: &v134, Nodes: mixed[:1]}, want: map[string]string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			for _, f := range Lint(objs, c.opts) {
				if f.ID == NativeSleepUnsupported {
					got[f.Object[strings.LastIndex(f.Object, "/")+1:]] = f.Message
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("flagged %v, want %v", got, c.want)
			}
			for name, msg := range c.want {
				if !strings.Contains(got[name], msg) {
					t.Errorf("%s: %q, want %q", name, got[name], msg)
				}
			}
		})
	}
}

// benchPairs are the sizes of the inject-versus-lint benchmark's manifests: Deployments,
// each with its Service, all in one namespace, as a chart renders them.
var benchPairs = []int{1000, 4000, 10000}

// BenchmarkInjectVsLint: napctl inject and napctl lint over the same manifest of n
// Deployments and Services, each as the command runs it (inject reads the input's
// Services first and decides each template by them). make bench prints the ratio per
// size; inject should stay within 3× lint at every size, and both linear.
func BenchmarkInjectVsLint(b *testing.B) {
	for _, n := range benchPairs {
		data := rendered.Apps(n)
		b.Run(fmt.Sprintf("pairs=%d/Lint", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				objs, err := manifest.Read("bench.yaml", data)
				if err != nil || len(objs) != 2*n {
					b.Fatalf("%d objects: %v", len(objs), err)
				}
				Lint(objs, Options{})
			}
		})
		b.Run(fmt.Sprintf("pairs=%d/Inject", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := inject.NewPlan(inject.Options{Mode: inject.ModeBinary})
				if err != nil {
					b.Fatal(err)
				}
				svcs, err := inject.ServicesIn("bench.yaml", data)
				if err != nil || len(svcs) != n {
					b.Fatalf("%d Services: %v", len(svcs), err)
				}
				p.AddServices(svcs)
				out, _, err := inject.Inject("bench.yaml", data, p)
				if err != nil || len(out) <= len(data) {
					b.Fatalf("%d → %d bytes: %v", len(data), len(out), err)
				}
			}
		})
	}
}

// A missing readiness probe's hint fits what the container serves: HTTP, gRPC, or
// neither (a database gets no HTTP path).
func TestReadinessHint(t *testing.T) {
	for _, c := range []struct {
		ports []corev1.ContainerPort
		want  string
	}{
		{[]corev1.ContainerPort{{ContainerPort: 8080}}, "httpGet: {path: /readyz, port: 8080}"},
		{[]corev1.ContainerPort{{Name: "http", ContainerPort: 9000}}, "httpGet: {path: /readyz, port: 9000}"},
		{[]corev1.ContainerPort{{Name: "grpc", ContainerPort: 9090}}, "{grpc: {port: 9090}}"},
		{[]corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}}, "tcpSocket, exec of its own client"},
		{nil, "tcpSocket, exec of its own client"},
	} {
		if got := readinessHint(corev1.Container{Ports: c.ports}); !strings.Contains(got, c.want) {
			t.Errorf("ports %v: hint %q, want it to say %q", c.ports, got, c.want)
		}
	}
}

// Workloads are known by API group and kind: an Argo Rollout behind a Service is
// linted as a Deployment is; a kind named Deployment in another group is not.
func TestWorkloadKinds(t *testing.T) {
	tmpl := "spec:\n  replicas: 2\n  template:\n    metadata: {labels: {app: %[1]s}}\n    spec:\n      containers: [{name: app, image: x, ports: [{containerPort: 8080}], readinessProbe: {tcpSocket: {port: 8080}}}]\n" +
		"---\napiVersion: v1\nkind: Service\nmetadata: {name: %[1]s}\nspec: {selector: {app: %[1]s}, ports: [{port: 80, targetPort: 8080}]}\n"
	for _, c := range []struct {
		apiVersion, kind string
		linted           bool
	}{
		{"apps/v1", "Deployment", true},
		{"argoproj.io/v1alpha1", "Rollout", true},
		{"apps.kruise.io/v1alpha1", "CloneSet", true},
		{"example.com/v1", "Deployment", false},
	} {
		src := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: w}\n"+tmpl, c.apiVersion, c.kind, "w")
		objs, err := manifest.Read("w.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range Lint(objs, Options{}) {
			found = found || f.ID == NoPreStopDelay
		}
		if found != c.linted {
			t.Errorf("%s %s: a no-prestop-delay finding %v, want %v", c.apiVersion, c.kind, found, c.linted)
		}
	}
}

// Only a native sleep makes lint need the nodes' kubelets.
func TestNeedsKubelets(t *testing.T) {
	deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: w}\nspec:\n  template:\n    spec:\n      containers: [{name: a, image: x, lifecycle: {preStop: %s}}]\n"
	for _, c := range []struct {
		preStop string
		want    bool
	}{
		{"{sleep: {seconds: 5}}", true},
		{"{exec: {command: [/nap/nap, 5s]}}", false},
		{"null", false},
	} {
		objs, err := manifest.Read("w.yaml", []byte(fmt.Sprintf(deployment, c.preStop)+"---\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := NeedsKubelets(objs); got != c.want {
			t.Errorf("preStop %s: %v, want %v", c.preStop, got, c.want)
		}
	}
}

// TestAppliedNamespace: an object without a namespace is paired with the objects in
// namespace default, where kubectl applies it by default, and with none in another.
func TestAppliedNamespace(t *testing.T) {
	objs, err := manifest.Read("ns.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: web, ports: [{containerPort: 8080}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: in-default, namespace: default}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: unnamed}
spec: {selector: {app: web}, ports: [{port: 81, targetPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: elsewhere, namespace: shop}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: web}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	ws := Workloads(objs)
	if len(ws) != 1 {
		t.Fatalf("%d workloads, want 1", len(ws))
	}
	var got []string
	for _, s := range ws[0].Services {
		got = append(got, s.Name)
	}
	if want := []string{"in-default", "unnamed"}; !slices.Equal(got, want) || len(ws[0].PDBs) != 1 {
		t.Errorf("Services %v, want %v; PDBs %d, want 1", got, want, len(ws[0].PDBs))
	}
}

// TestWorkloadFronts: the Ingresses and Gateway API routes of the input that name a
// workload's Services are its front doors (traffic.Reaching's paths), in its namespace.
func TestWorkloadFronts(t *testing.T) {
	src := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: app:1}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: web-grpc, namespace: shop}
spec: {selector: {app: web}, ports: [{port: 9090}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: shop}
spec:
  parentRefs: [{name: edge}]
  rules: [{backendRefs: [{name: web, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: other, namespace: elsewhere}
spec:
  rules: [{backendRefs: [{name: web-grpc, port: 9090}]}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: shop}
spec: {defaultBackend: {service: {name: web-grpc, port: {number: 9090}}}}
`
	objs, err := manifest.Read("fronts.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ws := Workloads(objs)
	if len(ws) != 1 {
		t.Fatalf("%d workloads", len(ws))
	}
	want := kube.Frontends{"web": {Route: true, RouteHTTP: true}, "web-grpc": {Ingress: true}}
	if !maps.Equal(ws[0].Fronts, want) {
		t.Errorf("fronts %v, want %v (a route in another namespace names another Service)", ws[0].Fronts, want)
	}
}

// A KEDA ScaledObject in the input scales its target as the HPA KEDA makes of it: a
// minReplicaCount of 3 keeps the Deployment's one replica from being a Service's only
// backend; 0 (scaled to zero while idle) serves with one pod, and the finding names the
// ScaledObject.
func TestKEDAScaledObject(t *testing.T) {
	got := map[string]string{}
	for _, f := range Lint(read(t, "testdata/keda.yaml"), Options{}) {
		if f.ID == SingleReplica {
			got[f.Name] = f.Message + " / " + f.Hint
		}
	}
	want := map[string]string{"bad-keda-idle": "its KEDA ScaledObject bad-keda-idle lets it scale to 1 (minReplicaCount) behind Service bad-keda-idle, its only backend: every rollout, eviction or node drain leaves it with no ready pod / set the ScaledObject's minReplicaCount to 2 or more"}
	if !maps.Equal(got, want) {
		t.Errorf("single-replica findings %v, want %v", got, want)
	}
}

// TestCheckPodAsLint: the paths' checks on a live pod (CheckPod, with the Services that
// select it and the front doors that name them, as the Reporter reads them) say what
// they say of its workload in a manifest: one rule, one text, whoever asks.
func TestCheckPodAsLint(t *testing.T) {
	for _, id := range []string{DelayBelowPath, AdaptiveMissesPool} {
		opts := checkOptions(t, id)
		in := Read(read(t, filepath.Join("testdata", "checks", id+".yaml")))
		byWorkload := map[string][]string{}
		for _, f := range CheckWorkloads(in.Workloads, opts) {
			if f.ID == id {
				byWorkload[f.Name] = append(byWorkload[f.Name], f.Container+": "+f.Message)
			}
		}
		if len(byWorkload) == 0 {
			t.Fatalf("%s: no finding in its testdata", id)
		}
		for _, w := range in.Workloads {
			var got []string
			pod := Pod{Namespace: "default", Name: w.Obj.Name + "-0", Spec: w.PodSpec, Services: w.services(), Fronts: w.Fronts.Of}
			for _, f := range CheckPod(pod, opts, id) {
				if f.Object != "Pod/default/"+pod.Name {
					t.Errorf("%s: %s: the finding's object is %s", id, w.Obj.Name, f.Object)
				}
				got = append(got, f.Container+": "+f.Message)
			}
			if want := byWorkload[w.Obj.Name]; !slices.Equal(got, want) {
				t.Errorf("%s: %s as a pod:\n%q\nwant, as in its manifest:\n%q", id, w.Obj.Name, got, want)
			}
			if got := CheckPod(Pod{Namespace: "default", Name: "alone", Spec: w.PodSpec}, opts, id); len(got) != 0 {
				t.Errorf("%s: %s as a pod that no Service selects: %+v", id, w.Obj.Name, got)
			}
		}
	}
}
