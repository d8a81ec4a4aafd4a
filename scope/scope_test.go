package scope

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDecide(t *testing.T) {
	svc := func(name string, ok bool) func() (string, bool, error) {
		return func() (string, bool, error) { return name, ok, nil }
	}
	backed := svc("shop", true)
	for _, tc := range []struct {
		name string
		in   Input
		want Decision
	}{
		{name: "opt-in, nothing labelled", in: Input{Selecting: backed},
			want: Decision{Scope: OptIn, Why: "not opted in"}},
		{name: "pod opted in", in: Input{Pod: Pod{Labels: map[string]string{InjectLabel: Enabled}}},
			want: Decision{Scope: OptIn, Inject: true, Explicit: true, Why: "the pod is opted in"}},
		{name: "pod opted in wins over its namespace opted out", in: Input{Pod: Pod{Labels: map[string]string{InjectLabel: Enabled}},
			NamespaceLabels: map[string]string{InjectLabel: Disabled}},
			want: Decision{Scope: OptIn, Inject: true, Explicit: true, Why: "the pod is opted in"}},
		{name: "pod opted out wins over its namespace opted in", in: Input{Pod: Pod{Labels: map[string]string{InjectLabel: Disabled}},
			NamespaceLabels: map[string]string{InjectLabel: Enabled}},
			want: Decision{Scope: OptIn, Explicit: true, Why: "the pod is opted out"}},
		{name: "namespace opted in", in: Input{NamespaceLabels: map[string]string{InjectLabel: Enabled}},
			want: Decision{Scope: OptIn, Inject: true, Explicit: true, Why: "its namespace is opted in"}},
		{name: "namespace opted out under default", in: Input{Installed: Default, NamespaceLabels: map[string]string{InjectLabel: Disabled}, Selecting: backed},
			want: Decision{Scope: Default, Explicit: true, Why: "its namespace is opted out"}},
		{name: "excluded namespace", in: Input{Installed: Default, Excluded: true, Pod: Pod{Labels: map[string]string{InjectLabel: Enabled}}},
			want: Decision{Scope: Default, Explicit: true, Why: "its namespace is excluded"}},
		{name: "default, Service-backed", in: Input{Installed: Default, Selecting: backed},
			want: Decision{Scope: Default, Inject: true, Why: "Service shop selects it"}},
		{name: "default, no Service", in: Input{Installed: Default, Selecting: svc("", false)},
			want: Decision{Scope: Default, Why: "no Service selects it"}},
		{name: "default, a Job's pod", in: Input{Installed: Default, Pod: Pod{OwnerKinds: []string{"Job"}}, Selecting: backed},
			want: Decision{Scope: Default, Why: "a Job's pod"}},
		{name: "default, a pod that does not restart", in: Input{Installed: Default, Pod: Pod{RestartPolicy: corev1.RestartPolicyOnFailure}, Selecting: backed},
			want: Decision{Scope: Default, Why: "restartPolicy OnFailure"}},
		{name: "audit reports", in: Input{Installed: Audit, Selecting: backed},
			want: Decision{Scope: Audit, Audit: true, Why: "Service shop selects it"}},
		{name: "namespace label overrides the installed scope", in: Input{Installed: OptIn, NamespaceLabels: map[string]string{Label: "default"}, Selecting: backed},
			want: Decision{Scope: Default, Inject: true, Why: "Service shop selects it"}},
		{name: "namespace label to opt-in under default", in: Input{Installed: Default, NamespaceLabels: map[string]string{Label: "opt-in"}, Selecting: backed},
			want: Decision{Scope: OptIn, Why: "not opted in"}},
		{name: "an unknown namespace label is ignored", in: Input{Installed: Default, NamespaceLabels: map[string]string{Label: "everything"}, Selecting: backed},
			want: Decision{Scope: Default, Inject: true, Why: "Service shop selects it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestDecideReadsServicesOnlyWhenNeeded: the Services are read (an informer list in
// the webhook) only for pods the scope decides by them, and their error is returned.
func TestDecideReadsServicesOnlyWhenNeeded(t *testing.T) {
	calls := 0
	failing := func() (string, bool, error) { calls++; return "", false, errors.New("cache not synced") }
	if _, err := Decide(Input{Installed: OptIn, Selecting: failing}); err != nil || calls != 0 {
		t.Errorf("opt-in: err %v after %d reads, want none", err, calls)
	}
	if _, err := Decide(Input{Installed: Default, Pod: Pod{OwnerKinds: []string{"CronJob"}}, Selecting: failing}); err != nil || calls != 0 {
		t.Errorf("a CronJob's pod: err %v after %d reads, want none", err, calls)
	}
	_, err := Decide(Input{Installed: Default, Selecting: failing})
	if err == nil || !strings.Contains(err.Error(), "cache not synced") || calls != 1 {
		t.Errorf("default: err %v after %d reads, want the Services' error after 1", err, calls)
	}
}

func TestParseAndTable(t *testing.T) {
	for _, s := range All() {
		if got, err := Parse(string(s)); err != nil || got != s {
			t.Errorf("Parse(%q) = %q, %v", s, got, err)
		}
		if !strings.Contains(Help(), string(s)+" (") {
			t.Errorf("Help() does not describe %s: %s", s, Help())
		}
	}
	if _, err := Parse("everything"); err == nil || err.Error() != `policy "everything": want opt-in, default or audit` {
		t.Errorf("Parse(everything): %v", err)
	}
	by, not := ByServiceScopes()
	if strings.Join(by, ",") != "default,audit" || strings.Join(not, ",") != "opt-in" {
		t.Errorf("ByServiceScopes() = %v, %v", by, not)
	}
	if OptIn.ByService() || !Default.Injects() || Audit.Injects() {
		t.Error("the table's flags are off")
	}
}

func TestFromArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Scope
		ok   bool
	}{
		{args: []string{"controller", "--policy=default"}, want: Default, ok: true},
		{args: []string{"controller", "--policy", "audit"}, want: Audit, ok: true},
		{args: []string{"controller", "--delay=10s"}, want: OptIn},
		{args: []string{"controller", "--policy=everything"}, want: OptIn},
	} {
		if got, ok := FromArgs(tc.args); got != tc.want || ok != tc.ok {
			t.Errorf("FromArgs(%q) = %s, %v; want %s, %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}
