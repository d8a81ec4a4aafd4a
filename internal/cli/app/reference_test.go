package app

import (
	"strings"
	"testing"

	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/testutil/golden"
)

// TestCommandReference: docs/reference/commands.md is what the commands say of
// themselves, every one with its flags.
func TestCommandReference(t *testing.T) {
	root := NewRootCommand(cli.IOStreams{})
	got := CommandReference(root)
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" && !strings.Contains(got, "\n## "+c.CommandPath()+"\n") {
			t.Errorf("no section for %s", c.CommandPath())
		}
	}
	golden.Check(t, "../../../docs/reference/commands.md", []byte(got))
}
