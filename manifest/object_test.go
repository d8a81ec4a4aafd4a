package manifest

import (
	"maps"
	"strings"
	"testing"
)

// A container is found at its line in the list, also when it is given as an alias of
// a container anchored elsewhere in the same pod spec.
func TestContainerLines(t *testing.T) {
	src := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      initContainers:
      - &app
        name: app
        image: x
      containers:
      - name: sidecar
        image: y
      - *app
`
	objs, err := Read("a.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	spec := objs[0].PodSpecNode()
	for field, want := range map[string]map[string]int{
		"initContainers": {"app": 8},
		"containers":     {"sidecar": 12, "app": 14},
	} {
		if got := ContainerLines(spec, field); !maps.Equal(got, want) {
			t.Errorf("%s: %v, want %v", field, got, want)
		}
	}
}

// A kind nap does not know is said to hold pods wherever its pod spec is (within the
// search's depth), and only when it holds one.
func TestLeftAloneFindsPodTemplates(t *testing.T) {
	for _, c := range []struct {
		name, spec, want string
	}{
		{name: "a template", spec: "  template:\n    spec:\n      containers: [{name: a, image: a}]\n", want: "its pods (spec.template.spec)"},
		{name: "UnitedDeployment", spec: "  template:\n    cloneSetTemplate:\n      spec:\n        template:\n          spec:\n            containers: [{name: a, image: a}]\n", want: "its pods (spec.template.cloneSetTemplate.spec.template.spec)"},
		{name: "no pods", spec: "  replicas: 2\n  containers: []\n"},
		{name: "a list of names, not containers", spec: "  containers: [a, b]\n"},
	} {
		objs, err := Read("x.yaml", []byte("apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t}\nspec:\n"+c.spec))
		if err != nil {
			t.Fatal(err)
		}
		got := objs[0].LeftAlone()
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: LeftAlone %q, want %q", c.name, got, c.want)
		}
	}
}
