package report

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestReasons: every Reason the package declares is in reasons once, with its event;
// nap_pods_unprotected's help says every reason that metric counts (all but
// FailedPreStopHook), so that a reason added is a reason said.
func TestReasons(t *testing.T) {
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, "reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			v := sp.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); ok && id.Name == "Reason" {
				for _, n := range v.Names {
					declared[n.Name] = true
				}
			}
		}
	}
	if len(declared) != len(reasons) {
		t.Errorf("%d Reason constants, %d rows in reasons", len(declared), len(reasons))
	}
	seen := map[Reason]bool{}
	help := unprotectedHelp()
	for _, r := range reasons {
		if seen[r.reason] || !strings.HasPrefix(r.event, "Nap") {
			t.Errorf("%s: twice, or its event %q is not nap's", r.reason, r.event)
		}
		seen[r.reason] = true
		if counted := r.reason != FailedPreStopHook; counted != (r.help != "") || counted != strings.Contains(help, string(r.reason)+" (") {
			t.Errorf("%s: its help %q; nap_pods_unprotected's help: %s", r.reason, r.help, help)
		}
	}
}
