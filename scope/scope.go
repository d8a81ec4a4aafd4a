package scope

import (
	"fmt"
	"strings"

	"github.com/nap-k8s/nap/kube"
)

// Scope says which pods nap's webhook gives a delay without an explicit opt-in: chosen
// at install (the controller's --policy) and per namespace with Label.
type Scope string

// The scopes. Adding one is a row of scopes below (and its tests).
const (
	// OptIn: only pods and namespaces labelled InjectLabel=enabled.
	OptIn Scope = "opt-in"
	// Default: also every pod that backs a Service, unless it or its namespace is
	// labelled InjectLabel=disabled.
	Default Scope = "default"
	// Audit: the pods Default would change are admitted unchanged, with a warning, a
	// metric and an event saying what nap would add.
	Audit Scope = "audit"
)

// The labels and flag that choose a scope, and the labels that opt in and out.
const (
	// Label on a namespace overrides the installed scope there. Its name keeps the
	// word users know: nap.dev/policy.
	Label = "nap.dev/policy"
	// InjectLabel on a pod or its namespace opts in (Enabled) or out (Disabled).
	InjectLabel = kube.InjectLabel
	Enabled     = "enabled"
	Disabled    = "disabled"
	// Flag is the controller's flag (napctl controller, napctl install) that sets the
	// installed scope.
	Flag = "policy"
)

// info is what nap does under a scope.
type info struct {
	scope Scope
	help  string // for flags' help
	// byService: pods not opted in explicitly are decided by the Services that select
	// them, which only the webhook reads (CEL cannot).
	byService bool
	// injects: the pods it decides for get the delay; otherwise they are only reported.
	injects bool
}

// scopes is the list, in the order help texts give them.
var scopes = []info{
	{scope: OptIn, help: "only pods and namespaces labelled " + InjectLabel + "=" + Enabled, injects: true},
	{scope: Default, help: "also every pod that backs a Service", byService: true, injects: true},
	{scope: Audit, help: "report what default would add (a warning, an event, a metric), change nothing", byService: true},
}

func (s Scope) info() info {
	for _, i := range scopes {
		if i.scope == s {
			return i
		}
	}
	return info{scope: s}
}

// All returns every scope.
func All() []Scope {
	out := make([]Scope, len(scopes))
	for i, s := range scopes {
		out[i] = s.scope
	}
	return out
}

// Names are All's names.
func Names() []string {
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s.scope)
	}
	return names
}

// Parse reads a scope's name.
func Parse(s string) (Scope, error) {
	for _, i := range scopes {
		if string(i.scope) == s {
			return i.scope, nil
		}
	}
	names := Names()
	last := len(names) - 1
	return "", fmt.Errorf("policy %q: want %s or %s", s, strings.Join(names[:last], ", "), names[last])
}

// ByService tells whether the scope decides pods that are not opted in explicitly by
// the Services that select them: it needs the webhook, which reads Services.
func (s Scope) ByService() bool { return s.info().byService }

// Injects tells whether the pods the scope decides for get the delay (Audit only
// reports them).
func (s Scope) Injects() bool { return s.info().injects }

// ByServiceScopes are the scopes that decide by Services, and the others.
func ByServiceScopes() (by, not []string) {
	for _, i := range scopes {
		if i.byService {
			by = append(by, string(i.scope))
		} else {
			not = append(not, string(i.scope))
		}
	}
	return by, not
}

// Help describes the scopes for a flag's help text.
func Help() string {
	parts := make([]string, len(scopes))
	for i, s := range scopes {
		parts[i] = fmt.Sprintf("%s (%s)", s.scope, s.help)
	}
	return strings.Join(parts, ", ") + "; the namespace label " + Label + " overrides it"
}

// FromArgs reads the installed scope from the controller's arguments (--policy=X or
// --policy X); OptIn, false when they do not say.
func FromArgs(args []string) (Scope, bool) {
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--"+Flag+"=")
		if !ok && a == "--"+Flag && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			if s, err := Parse(v); err == nil {
				return s, true
			}
		}
	}
	return OptIn, false
}
