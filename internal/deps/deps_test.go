package deps

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/nap-k8s/nap"

// pkg is what `go list -deps -json` says of a package.
type pkg struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Deps       []string // everything it links, recursively
}

// list returns every package of the module, and every package each links (itself
// first): one `go list` for the whole module.
func list(t *testing.T) (own []string, deps map[string][]pkg) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	all := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var d pkg
		if err := dec.Decode(&d); err != nil {
			t.Fatal(err)
		}
		all[d.ImportPath] = d
		if d.ImportPath == module || strings.HasPrefix(d.ImportPath, module+"/") {
			own = append(own, d.ImportPath)
		}
	}
	deps = map[string][]pkg{}
	for _, p := range own {
		deps[p] = append(deps[p], all[p])
		for _, d := range all[p].Deps {
			deps[p] = append(deps[p], all[d])
		}
	}
	return own, deps
}

func TestRules(t *testing.T) {
	own, deps := list(t)
	// links lists what p links of banned: a package and those below it, or with a
	// trailing "$" that package alone.
	links := func(p, banned string) []string {
		exact := strings.HasSuffix(banned, "$")
		banned = strings.TrimSuffix(banned, "$")
		var hits []string
		for _, d := range deps[p] {
			if d.ImportPath != p && (d.ImportPath == banned || !exact && strings.HasPrefix(d.ImportPath, banned+"/")) {
				hits = append(hits, d.ImportPath)
			}
		}
		return hits
	}
	for _, c := range []struct {
		rule   string
		pkgs   []string // the packages the rule is about
		banned []string // what they may not link
	}{
		{rule: "cmd/nap, the reference, links no assembler, ELF writer or program",
			pkgs:   []string{module + "/cmd/nap"},
			banned: []string{module + "/internal/asm", module + "/internal/elf", module + "/sleeper$"}},
		{rule: "manifests are read, injected and linted without the assemblers (the binaries come from configmap)",
			pkgs:   []string{module + "/manifest", module + "/kube", module + "/inject", module + "/lint"},
			banned: []string{module + "/internal/asm", module + "/internal/elf", module + "/sleeper$", module + "/configmap"}},
		{rule: "reading manifests, and judging coverage from objects, needs no API client",
			pkgs:   []string{module + "/manifest", module + "/kube", module + "/inject", module + "/lint", module + "/status"},
			banned: []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}},
		{rule: "the prober knows nothing of Kubernetes (observe watches the cluster and hands it events)",
			pkgs:   []string{module + "/probe"},
			banned: []string{"k8s.io", "sigs.k8s.io"}},
		{rule: "drain is for any Go service: it links nothing of Kubernetes",
			pkgs:   []string{module + "/drain", module + "/drain/grpcdrain", module + "/drain/wsdrain"},
			banned: []string{"k8s.io", "sigs.k8s.io", module + "/kube"}},
		{rule: "drain for HTTP alone links no gRPC and no WebSocket library (grpcdrain, wsdrain do)",
			pkgs:   []string{module + "/drain"},
			banned: []string{"google.golang.org/grpc", "github.com/coder/websocket"}},
		{rule: "hack/ builds on the libraries, not on the controller or the CLI",
			pkgs:   filter(own, module+"/hack/"),
			banned: []string{module + "/controller", module + "/internal/cli"}},
		{rule: "the decision (scope), the hook vocabulary (hook) and the wait (wait) are pure: no API client, none of the packages that use them",
			pkgs: []string{module + "/scope", module + "/hook", module + "/wait"},
			banned: []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", module + "/manifest", module + "/inject",
				module + "/lint", module + "/status", module + "/controller", module + "/live", module + "/calibrate"}},
		{rule: "the traffic paths are pure: classifying what reaches a pod (every admission, every scan) links no API client and nothing that opens a path (calibrate does)",
			pkgs: []string{module + "/traffic"},
			banned: []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", module + "/calibrate", module + "/lint",
				module + "/status", module + "/controller", module + "/live"}},
		{rule: "the wait is below the hooks, which read it out of pods",
			pkgs:   []string{module + "/wait"},
			banned: []string{module + "/hook"}},
		{rule: "the Reporter, the webhook's certificates and the evicted pods' router are packages of their own, below the controller's: none links it, nor another",
			pkgs:   []string{module + "/controller/report", module + "/controller/certs", module + "/controller/evicted"},
			banned: []string{module + "/controller$", module + "/controller/report$", module + "/controller/certs$", module + "/controller/evicted$", module + "/controller/install"}},
		{rule: "the lab's records are judged without a cluster: test/forensic parses what the lab tests fetch",
			pkgs:   []string{module + "/test/forensic"},
			banned: []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}},
		{rule: "libraries never import the CLI",
			pkgs: filter(own, module+"/", func(p string) bool {
				return !strings.HasPrefix(p, module+"/cmd/") && !strings.HasPrefix(p, module+"/internal/cli") && !strings.HasPrefix(p, module+"/test/")
			}),
			banned: []string{module + "/internal/cli"}},
	} {
		if len(c.pkgs) == 0 {
			t.Errorf("%s: no package to check", c.rule)
		}
		for _, p := range c.pkgs {
			for _, b := range c.banned {
				if hits := links(p, b); len(hits) > 0 {
					t.Errorf("%s: %s links %v", c.rule, p, hits)
				}
			}
		}
	}
	// The specification imports the standard library only.
	for _, d := range deps[module+"/sleeper/nap"] {
		if !d.Standard && d.ImportPath != module+"/sleeper/nap" {
			t.Errorf("sleeper/nap links %s: the specification is plain Go, standard library only", d.ImportPath)
		}
	}
	if len(deps[module+"/sleeper/nap"]) == 0 {
		t.Error("no sleeper/nap package")
	}
}

// filter returns the packages with prefix that pass every test.
func filter(pkgs []string, prefix string, tests ...func(string) bool) []string {
	var out []string
	for _, p := range pkgs {
		if strings.HasPrefix(p, prefix) && !slices.ContainsFunc(tests, func(f func(string) bool) bool { return !f(p) }) {
			out = append(out, p)
		}
	}
	return out
}

// TestHooksThroughTheVocabulary: lint, status and the controller read a container's
// preStop hook only through package hook (one place says what a hook is, how long it
// holds, what its failure means), never field by field.
func TestHooksThroughTheVocabulary(t *testing.T) {
	field := regexp.MustCompile(`\.Lifecycle\.|\.PreStop\b`)
	checked := 0
	for _, dir := range []string{"lint", "status", "controller", "controller/report"} {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for i, line := range strings.Split(string(b), "\n") {
				if field.MatchString(line) {
					t.Errorf("%s:%d reads a hook field by field; use package hook: %s", f, i+1, strings.TrimSpace(line))
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no file checked")
	}
}

// TestMetricsHome: a metric is defined and registered in its package's metrics.go and
// nowhere else, so that a package's metrics are read in one file (docs/architecture.md).
func TestMetricsHome(t *testing.T) {
	metric := regexp.MustCompile(`prometheus\.New[A-Za-z]*(Vec)?\(|MustRegister\(`)
	homes := map[string]bool{}
	err := filepath.WalkDir(filepath.Join("..", ".."), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != filepath.Join("..", "..")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if metric.MatchString(line) {
				if filepath.Base(path) != "metrics.go" {
					t.Errorf("%s:%d defines or registers a metric outside its package's metrics.go: %s", path, i+1, strings.TrimSpace(line))
				}
				homes[filepath.Dir(path)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(homes) < 4 {
		t.Errorf("metrics found in %d packages, want the controller's four at least: %v", len(homes), homes)
	}
}
