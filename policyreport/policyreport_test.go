package policyreport

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nap-k8s/nap/internal/testutil/golden"
)

var (
	api = corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "api"}
	r1  = Result{Workload: api, Policy: "not-injected", Severity: "high", Message: "admitted while the webhook was down", Properties: map[string]string{"pods": "2"}}
	r2  = Result{Workload: api, Policy: "failed-prestop-hook", Severity: "high", Message: "exec: /bin/sh: not found", Properties: map[string]string{"pods": "1", "cause": "no-shell"}}
)

// The reports as nap writes them, in both formats: two failures and what the
// workload's terminations said.
func TestReportGolden(t *testing.T) {
	for _, f := range Formats {
		b, err := yaml.Marshal(Report(f, "shop", []Result{r2, r1, terminations().Result(api)}).Object)
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", strings.ToLower(f.Kind)+".yaml"), b)
	}
}
