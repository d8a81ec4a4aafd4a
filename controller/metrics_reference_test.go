package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nap-k8s/nap/internal/testutil/golden"
)

var descRE = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}\}$`)

// TestMetricsReference: docs/reference/metrics.md lists every metric the controller
// serves, from the collectors it registers (Collectors): name, type, labels, help; and
// every nap metric the registry serves is among them.
func TestMetricsReference(t *testing.T) {
	var b strings.Builder
	b.WriteString("# The controller's metrics\n\nGenerated from the collectors it registers (`go test ./controller -run TestMetricsReference -update`): do not edit. " +
		"Alerts, the dashboard and what to watch: [monitoring.md](../monitoring.md).\n\n| metric | type | labels | what it counts |\n|---|---|---|---|\n")
	listed := map[string]bool{}
	for _, c := range Collectors() {
		name, help, variable := described(t, c)
		var kind string
		switch c.(type) { // a Gauge is a Counter too (Inc, Add): asked first
		case prometheus.Gauge, *prometheus.GaugeVec:
			kind = "gauge"
		case prometheus.Counter, *prometheus.CounterVec:
			kind = "counter"
		case prometheus.Histogram, *prometheus.HistogramVec:
			kind = "histogram"
		default:
			t.Fatalf("%s: a collector of no known type: %T", name, c)
		}
		labels := "—"
		if variable != "" {
			labels = "`" + strings.ReplaceAll(variable, ",", "`, `") + "`"
		}
		listed[name] = true
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, kind, labels, strings.ReplaceAll(help, "|", `\|`))
	}
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "nap_") && !listed[strings.TrimSuffix(f.GetName(), "_total")] && !listed[f.GetName()] {
			t.Errorf("%s is served but not listed in Collectors()", f.GetName())
		}
	}
	golden.Check(t, "../docs/reference/metrics.md", []byte(b.String()))
}

// TestDocsNameRealMetrics: a metric the docs, the README and deploy/monitoring name is
// one the controller serves (a histogram's _bucket, _sum and _count series included).
func TestDocsNameRealMetrics(t *testing.T) {
	served := map[string]bool{}
	for _, c := range Collectors() {
		name, _, _ := described(t, c)
		served[name] = true
	}
	files, _ := filepath.Glob("../docs/*.md")
	guides, _ := filepath.Glob("../docs/guides/*.md")
	monitoring, _ := filepath.Glob("../deploy/monitoring/*")
	name := regexp.MustCompile(`\bnap_[a-z_]+`)
	for _, f := range slices.Concat(files, guides, monitoring, []string{"../README.md"}) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range name.FindAllString(string(b), -1) {
			base := m
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				base = strings.TrimSuffix(base, suffix)
			}
			if !served[m] && !served[base] {
				t.Errorf("%s names %s, which the controller does not serve", f, m)
			}
		}
	}
}

// described is what c's description says: its name, its help and its variable labels
// ("a,b").
func described(t *testing.T, c prometheus.Collector) (name, help, variable string) {
	t.Helper()
	ch := make(chan *prometheus.Desc, 1)
	c.Describe(ch)
	close(ch)
	d := <-ch
	m := descRE.FindStringSubmatch(d.String())
	if m == nil {
		t.Fatalf("a description it cannot read: %s", d)
	}
	name, _ = strconv.Unquote(m[1])
	help, _ = strconv.Unquote(m[2])
	return name, help, m[3]
}
