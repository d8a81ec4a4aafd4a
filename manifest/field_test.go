package manifest

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// A value of the wrong type is named by its field and its own line, in a list item too,
// also when the object's text is a helm template left unrendered.
func TestFieldError(t *testing.T) {
	const head = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
	for _, c := range []struct {
		name, body string
		want       FieldError
	}{
		{name: "quoted replicas", body: "  replicas: \"2\"\n",
			want: FieldError{Path: "spec.replicas", Line: 5, Got: "a string", Want: "an integer"}},
		{name: "unrendered template", body: "  replicas: {{ .Values.replicas }}\n",
			want: FieldError{Path: "spec.replicas", Line: 5, Got: "a mapping", Want: "an integer"}},
		{name: "in the second container", body: "  replicas: 2\n" + "  template:\n    spec:\n      containers:\n      - name: a\n        image: x\n        ports: [{containerPort: 80}]\n      - name: b\n        image: y\n        ports:\n        - containerPort: http\n",
			want: FieldError{Path: "spec.template.spec.containers.ports.containerPort", Line: 15, Got: "a string", Want: "an integer"}},
		{name: "an item of a list", body: "  template:\n    spec:\n      containers:\n      - name: a\n        image: x\n        args: [--port, 8080]\n",
			want: FieldError{Path: "spec.template.spec.containers.args", Line: 10, Got: "a number", Want: "a string"}},
		{name: "a number that is not an integer", body: "  replicas: 1.5\n",
			want: FieldError{Path: "spec.replicas", Line: 5, Got: "the number 1.5", Want: "an integer"}},
		{name: "a list where a mapping goes", body: "  selector: [app]\n",
			want: FieldError{Path: "spec.selector", Line: 5, Got: "a list", Want: "a mapping"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs, err := Read("a.yaml", []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"+c.body))
			if err != nil {
				t.Fatal(err)
			}
			var d appsv1.Deployment
			err = objs[0].Decode(&d)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Decode: %v, want a *FieldError", err)
			}
			if *fe != c.want {
				t.Errorf("%+v, want %+v", *fe, c.want)
			}
			var spec appsv1.DeploymentSpec // from below the top: the path still starts there
			if err := objs[0].Decode(&spec, "spec"); !errors.As(err, &fe) || *fe != c.want {
				t.Errorf("Decode at spec: %v, want %+v", err, c.want)
			}
		})
	}
}
