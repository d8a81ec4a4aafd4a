package kube

import "testing"

// The kinds table is one home: each group and kind once, each built-in name once, and
// the lookups read it.
func TestKinds(t *testing.T) {
	seen, builtins := map[groupKind]bool{}, map[string]bool{}
	for _, k := range Kinds {
		gk := groupKind{k.Group, k.Kind}
		if seen[gk] {
			t.Errorf("%s %s twice", k.Group, k.Kind)
		}
		seen[gk] = true
		if k.Builtin {
			if builtins[k.Kind] {
				t.Errorf("built-in kind %s twice", k.Kind)
			}
			builtins[k.Kind] = true
		}
		if k.TemplateHashLabel != "" && len(k.PodSpec) == 0 {
			t.Errorf("%s: a template hash label, and no pods", k.Kind)
		}
	}
	for _, c := range []struct{ group, kind, api string }{
		{"apps", "Deployment", "apps/v1"}, {"", "ReplicationController", "v1"}, {"argoproj.io", "Rollout", "argoproj.io/v1alpha1"},
		{"apps.kruise.io", "CloneSet", "apps.kruise.io/v1alpha1"}, {"batch", "CronJob", "batch/v1"},
	} {
		if k, ok := KindFor(c.group, c.kind); !ok || k.APIVersion() != c.api {
			t.Errorf("%s %s: %+v", c.group, c.kind, k)
		}
	}
	if k, ok := KindOfResource("apps", "statefulsets"); !ok || k.Kind != "StatefulSet" {
		t.Errorf("apps statefulsets: %+v", k)
	}
	if k, ok := BuiltinKind("DaemonSet"); !ok || k.Group != "apps" {
		t.Errorf("DaemonSet: %+v", k)
	}
}
