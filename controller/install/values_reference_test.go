package install

import (
	"strings"
	"testing"

	"github.com/nap-k8s/nap/internal/testutil/golden"
)

// TestValuesReference: docs/reference/chart-values.md is every value of values.yaml,
// with the schema's type, its default and its comment; each top-level value the schema
// knows is on it.
func TestValuesReference(t *testing.T) {
	b, err := ValuesReference()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| `replicas` | integer | `2` |", "| `wait.delay` | string or number |", "| `learn` | boolean | `false` |", "| `image.pullPolicy` | string | \"\" |"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no row %q", want)
		}
	}
	golden.Check(t, "../../docs/reference/chart-values.md", b)
}
