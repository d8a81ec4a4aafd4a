package inject

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/nap-k8s/nap/manifest"
)

// TestPatchMatchesInject: Patch (the webhook's way, on a decoded object) and Inject (the
// text's way) make the same objects from every golden case, object by object; and a
// second Patch of what the first made adds nothing.
func TestPatchMatchesInject(t *testing.T) {
	for _, tc := range injectCases {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join("testdata", "inject", tc.input)
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			injected, _ := runInject(t, in, src, tc.opts)
			want := objectsJSON(t, in, injected)
			p, err := NewPlan(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, doc := range objectsJSON(t, in, src) {
				patched := applyPatch(t, doc, p)
				if !reflect.DeepEqual(decodeJSON(t, patched), decodeJSON(t, want[i])) {
					t.Errorf("object %d: Patch made\n%s\nInject made\n%s", i, patched, want[i])
				}
				if again := applyPatch(t, patched, p); !bytes.Equal(again, patched) {
					t.Errorf("object %d: a second Patch changed\n%s\ninto\n%s", i, patched, again)
				}
			}
		})
	}
}

// applyPatch decodes doc as the webhook does, patches it with p, and applies the
// operations with an independent JSON Patch implementation.
func applyPatch(t *testing.T, doc []byte, p Plan) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	o, err := manifest.FromValue("object", v)
	if err != nil {
		t.Fatal(err)
	}
	ops, _, err := Patch(o, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) == 0 {
		return doc
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	out, err := patch.Apply(doc)
	if err != nil {
		t.Fatalf("applying %s: %v", raw, err)
	}
	return out
}

// objectsJSON reads a manifest's objects, each as JSON.
func objectsJSON(t *testing.T, file string, src []byte) [][]byte {
	t.Helper()
	objs, err := manifest.Read(file, src)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, o := range objs {
		var v any
		if err := o.Node.YNode().Decode(&v); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	return docs
}

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
