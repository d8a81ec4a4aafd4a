package lint

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/nap-k8s/nap/internal/testutil/golden"
)

// TestChecksReference: docs/reference/lint-checks.md lists every check as lint has it,
// its ID, default severity and title, and the fixture that shows it.
func TestChecksReference(t *testing.T) {
	var b strings.Builder
	b.WriteString("# napctl lint: every check\n\nGenerated from `lint.Checks()` (`go test ./lint -run TestChecksReference -update`): do not edit. " +
		"What each one finds and why: [lint.md](../lint.md); a configuration file changes a severity.\n\n" +
		"| ID | default severity | finds | example |\n|---|---|---|---|\n")
	for _, c := range Checks() {
		if _, err := os.Stat("testdata/checks/" + c.ID + ".yaml"); err != nil {
			t.Errorf("%s: no fixture: %v", c.ID, err)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | [testdata](../../lint/testdata/checks/%s.yaml) |\n", c.ID, c.Severity, c.Title, c.ID)
	}
	golden.Check(t, "../docs/reference/lint-checks.md", []byte(b.String()))
}
