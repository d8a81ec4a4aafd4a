package manifest

import (
	"maps"
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
