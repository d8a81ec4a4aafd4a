package install

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	_ "github.com/nap-k8s/nap/controller" // registers the metrics
	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/internal/testutil/golden"
)

const monitoringDir = "../../deploy/monitoring"

// deploy/monitoring is what monitoring.go generates (go test -update rewrites it).
func TestMonitoringGolden(t *testing.T) {
	objs, err := MonitoringObjects("nap-system", Monitoring{})
	if err != nil {
		t.Fatal(err)
	}
	var stream []byte
	for i, u := range objs {
		b, err := objectYAML(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			stream = append(stream, "---\n"...)
		}
		stream = append(stream, b...)
	}
	golden.Check(t, filepath.Join(monitoringDir, "monitoring.yaml"), stream)
	rules, err := RulesFile()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join(monitoringDir, "nap.rules.yaml"), rules)
	dash, err := Dashboard()
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join(monitoringDir, "nap-dashboard.json"), append(dash, '\n'))
}

// promtool, as users run it, finds the rules valid and their unit tests
// (nap.rules.test.yaml) pass; the dashboard's queries, written as recording rules, are
// valid PromQL to it too.
func TestRulesPromtool(t *testing.T) {
	promtool := testenv.Tool(t, "promtool")
	dir := t.TempDir()
	for _, f := range []string{"nap.rules.yaml", "nap.rules.test.yaml"} {
		b, err := os.ReadFile(filepath.Join(monitoringDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var records []map[string]string
	for i, q := range DashboardQueries() {
		records = append(records, map[string]string{"record": "nap:dashboard_query:" + string(rune('a'+i)), "expr": q})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": records}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dashboard.rules.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"check", "rules", "nap.rules.yaml", "dashboard.rules.yaml"},
		{"test", "rules", "nap.rules.test.yaml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Every metric the rules and the dashboard name is one the controller exports (or the
// scrape's own up), and every alert is unit-tested.
func TestMonitoringNamesMetrics(t *testing.T) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{"up": true}
	for _, f := range families {
		exported[f.GetName()] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			exported[f.GetName()+suffix] = true
		}
	}
	// Vectors with no series yet are not gathered: register their names from the source,
	// the controller's and its packages' (the Reporter's, the certificates').
	files, err := filepath.Glob("../*/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	var src []byte
	for _, f := range append([]string{"../metrics.go"}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	if len(files) < 2 {
		t.Fatalf("the metrics of controller/report and controller/certs: found %v", files)
	}
	for _, m := range regexp.MustCompile(`Name: "(nap_[a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
		exported[m[1]] = true
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			exported[m[1]+suffix] = true
		}
	}
	metric := regexp.MustCompile(`\b(nap_[a-z_]+|up)\b`)
	var exprs []string
	for _, g := range Rules() {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	exprs = append(exprs, DashboardQueries()...)
	used := map[string]bool{}
	for _, e := range exprs {
		names := metric.FindAllString(e, -1)
		if len(names) == 0 {
			t.Errorf("%q names no metric", e)
		}
		for _, n := range names {
			used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] = true
			if !exported[n] {
				t.Errorf("%q names %s, which the controller does not export", e, n)
			}
		}
	}
	// Every metric of the controller is on the dashboard.
	for name := range exported {
		if strings.HasPrefix(name, "nap_") && !strings.HasSuffix(name, "_bucket") && !strings.HasSuffix(name, "_sum") && !strings.HasSuffix(name, "_count") && !used[name] {
			if !used[name] {
				t.Errorf("the dashboard and the rules leave out %s", name)
			}
		}
	}
	tests, err := os.ReadFile(filepath.Join(monitoringDir, "nap.rules.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range Rules() {
		for _, r := range g.Rules {
			if !slices.Contains(strings.Fields(string(tests)), r.Alert) {
				t.Errorf("alert %s has no promtool test in nap.rules.test.yaml", r.Alert)
			}
		}
	}
}
