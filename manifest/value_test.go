package manifest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// valueCases are documents whose value Value must give as yaml.v3's decoder does.
var valueCases = []string{
	"a: 1\nb: [x, 2, 3.5, true, null, ~, '7']\nc: {d: e}\n",
	"ints: [0x1F, 0o17, 1_000, -3, 9223372036854775807, 18446744073709551615, 99999999999999999999]\n",
	"floats: [1e3, .5, -0.0, 6.02e23]\nbools: [true, True, TRUE, false, yes, no, on]\n",
	"base: &b {x: 1, y: 2}\nother: &o {y: 3, z: 4}\nm: {<<: [*b, *o], x: 9}\nn: {<<: *b}\n",
	"s: !!str 12\nt: 2001-12-14t21:59:43.10-05:00\nbin: !!binary aGVsbG8=\nq: \"a\\tb\"\n",
	"l: &l [1, 2]\nm: [*l, *l]\nempty: {}\nnone: []\nblock: |\n  two\n  lines\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  k1: v\n  k2: \"\"\n",
}

// Value gives what yaml.v3's decoder gives into an interface{}, as JSON (what Decode
// hands on), on every case.
func TestValueMatchesYAMLv3(t *testing.T) {
	for _, doc := range valueCases {
		if err := sameValue(doc); err != nil {
			t.Errorf("%s\n%v", doc, err)
		}
	}
}

// A repeated key is an error, as in yaml.v3; excessive aliasing too.
func TestValueRefuses(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"a: 1\nb: 2\na: 3\n", `line 3: mapping key "a" already defined at line 1`},
		{"m: {<<: [1]}\n", "map merge requires map or sequence of maps"},
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(c.doc), &n); err != nil {
			t.Fatal(err)
		}
		if _, err := Value(&n); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.doc, err, c.want)
		}
	}
	var laughs strings.Builder
	laughs.WriteString("a: &a [x, x, x, x, x, x, x, x, x, x]\n")
	prev := "a"
	for i := range 8 {
		name := fmt.Sprintf("l%d", i)
		fmt.Fprintf(&laughs, "%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", name, name, prev, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = name
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(laughs.String()), &n); err != nil {
		t.Fatal(err)
	}
	if _, err := Value(&n); err == nil || !strings.Contains(err.Error(), "excessive aliasing") {
		t.Errorf("a billion laughs: %v", err)
	}
}

func FuzzValue(f *testing.F) {
	for _, doc := range valueCases {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if err := sameValue(doc); err != nil {
			t.Fatal(err)
		}
	})
}

// sameValue compares Value with yaml.v3's decoding of doc, as JSON; documents yaml.v3
// cannot decode, or whose value JSON cannot carry, are not compared.
func sameValue(doc string) error {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		return nil
	}
	var want any
	if err := n.Decode(&want); err != nil {
		return nil
	}
	wantJSON, err := json.Marshal(want)
	if err != nil {
		return nil
	}
	got, err := Value(&n)
	if err != nil {
		return fmt.Errorf("Value: %v; yaml.v3 decodes it to %s", err, wantJSON)
	}
	gotJSON, err := json.Marshal(got)
	if err != nil {
		return fmt.Errorf("Value's %v: %v (yaml.v3's: %s)", got, err, wantJSON)
	}
	if string(gotJSON) != string(wantJSON) {
		return fmt.Errorf("Value gives %s, yaml.v3 %s", gotJSON, wantJSON)
	}
	return nil
}
