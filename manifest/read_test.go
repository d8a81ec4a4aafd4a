package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		refs     []string // Ref@line of each object
		err      string
	}{
		{"documents", "a: 1\nkind: Service\nmetadata: {name: s, namespace: n}\n---\n---\nkind: Pod\nmetadata: {name: p}\n",
			[]string{"Service/n/s@1", "Pod/p@6"}, ""},
		{"json", `{"kind": "Pod", "metadata": {"name": "p"}}`, []string{"Pod/p@1"}, ""},
		{"list", "kind: List\nitems:\n- kind: Pod\n  metadata: {name: a}\n- kind: Service\n  metadata: {name: b}\n",
			[]string{"Pod/a@3", "Service/b@5"}, ""},
		{"empty", "", nil, ""},
		{"comments only", "# nothing\n---\n# here\n", nil, ""},
		{"no kind", "kind: Pod\n---\nmetadata: {name: x}\n", nil, "in.yaml:3: object without kind"},
		{"not an object", "kind: Pod\n---\n- 1\n", nil, "in.yaml:3: a document is not an object"},
		{"bad yaml", "kind: Pod\nmetadata:\n  name: [\n", nil, "in.yaml:"},
		{"bad list item", "kind: List\nitems:\n- kind: Pod\n- 3\n", nil, "in.yaml:4: a document is not an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Read("in.yaml", []byte(tc.in))
			if tc.err != "" {
				var re *ReadError
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) || !errors.As(err, &re) {
					t.Fatalf("error %v, want %q...", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var refs []string
			for _, o := range objs {
				refs = append(refs, fmt.Sprintf("%s@%d", o.Ref(), o.Line))
			}
			if strings.Join(refs, " ") != strings.Join(tc.refs, " ") {
				t.Errorf("got %v, want %v", refs, tc.refs)
			}
		})
	}
}

// FuzzRead: any input is read or refused with a ReadError that names the file; never a
// panic, and every object read has a kind and a line inside the input.
func FuzzRead(f *testing.F) {
	f.Add([]byte("kind: Pod\nmetadata: {name: p}\n---\nkind: List\nitems: [{kind: Service}]\n"))
	f.Add([]byte(`{"kind": "Deployment", "spec": {"template": {}}}`))
	f.Add([]byte("a: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		objs, err := Read("f.yaml", data)
		if err != nil {
			var re *ReadError
			if !errors.As(err, &re) || re.File != "f.yaml" || !strings.HasPrefix(err.Error(), "f.yaml:") {
				t.Fatalf("error %v is not a ReadError naming the file", err)
			}
			return
		}
		lines := strings.Count(string(data), "\n") + 1
		for _, o := range objs {
			if o.Kind == "" || o.Line < 1 || o.Line > lines {
				t.Fatalf("object %q at line %d of %d", o.Kind, o.Line, lines)
			}
		}
	})
}
