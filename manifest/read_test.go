package manifest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	kjson "k8s.io/apimachinery/pkg/util/json"
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
		{"list items by alias", "kind: List\nx: &i\n- kind: Pod\n  metadata: {name: a}\nitems: *i\n", []string{"Pod/a@3"}, ""},
		{"list items null", "kind: List\nitems:\n", nil, ""},
		{"list items not a list", "kind: List\nitems: 3\n", nil, "in.yaml:2: List items: not a list"},
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

// FromValue builds the tree that reading the same object as JSON gives: every value
// decodes alike, and the object's identity is read from it.
func TestFromValue(t *testing.T) {
	in := `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop",
	  "labels": {"app": "web", "on": "true", "n": "5"}},
	  "spec": {"replicas": 3, "paused": false, "x": null, "ratio": 0.25, "big": 9007199254740993,
	    "template": {"spec": {"containers": [{"name": "app", "args": ["-a", "1", "null"]}], "terminationGracePeriodSeconds": 45}}}}`
	want, err := Read("in.json", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]any{}
	if err := kjson.Unmarshal([]byte(in), &v); err != nil { // int64 and float64 numbers, as an API client decodes
		t.Fatal(err)
	}
	got, err := FromValue("live:Deployment/shop/web", v)
	if err != nil {
		t.Fatal(err)
	}
	if got.Ref() != want[0].Ref() || got.APIVersion != "apps/v1" || got.File != "live:Deployment/shop/web" || got.Line != 1 {
		t.Errorf("got %s %s %s:%d", got.APIVersion, got.Ref(), got.File, got.Line)
	}
	var a, b any
	if err := got.Decode(&a); err != nil {
		t.Fatal(err)
	}
	if err := want[0].Decode(&b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("decoded\n%v\nwant\n%v", a, b)
	}
	if l := got.PodLabels(); l != nil {
		t.Errorf("pod labels %v, want none", l)
	}
	if _, err := FromValue("x", map[string]any{"kind": "Pod", "spec": map[string]any{"n": int32(1)}}); err == nil || !strings.Contains(err.Error(), "spec: n: a value of type int32") {
		t.Errorf("error %v, want one naming spec.n", err)
	}
	if _, err := FromValue("x", map[string]any{"metadata": map[string]any{}}); err == nil || !strings.Contains(err.Error(), "without kind") {
		t.Errorf("error %v, want: without kind", err)
	}
}

// Documents cuts before each document's start, keeps every byte, and reading each span
// gives the objects of reading the whole, at the same lines.
func TestDocuments(t *testing.T) {
	for _, c := range []struct {
		name, in string
		lines    []int // the line each span starts at
	}{
		{"one", "kind: Pod\nmetadata: {name: a}\n", []int{1}},
		{"empty", "", []int{1}},
		{"leading marker", "---\nkind: Pod\n---\nkind: Service\n", []int{1, 3}},
		{"comment first", "# top\nkind: Pod\n--- # next\nkind: Service\n---\n", []int{1, 3, 5}},
		{"marker with a node", "kind: Pod\n--- {kind: Service}\n", []int{1, 2}},
		{"crlf", "kind: Pod\r\n---\r\nkind: Service\r\n", []int{1, 2}},
		{"not markers", "kind: ConfigMap\ndata:\n  a: |\n    ---\n    x\n  b: ----\n---x: 1\n", []int{1}},
		{"json stream", "{\"kind\": \"Pod\"}\n{\"kind\":\n \"Service\"} {\"kind\": \"Secret\"}\n", []int{1, 2, 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			spans := Documents([]byte(c.in))
			var lines []int
			var joined strings.Builder
			var objs []string
			at := 0
			for _, s := range spans {
				if s.Start != at {
					t.Fatalf("span %+v does not start where the last ended (%d)", s, at)
				}
				at = s.End
				lines = append(lines, s.Line)
				joined.WriteString(c.in[s.Start:s.End])
				part, err := Read("in.yaml", []byte(c.in[s.Start:s.End]))
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range part {
					objs = append(objs, fmt.Sprintf("%s@%d", o.Kind, o.Line+s.Line-1))
				}
			}
			if joined.String() != c.in || !reflect.DeepEqual(lines, c.lines) {
				t.Errorf("spans %+v (lines %v), want lines %v and every byte", spans, lines, c.lines)
			}
			whole, err := Read("in.yaml", []byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, o := range whole {
				want = append(want, fmt.Sprintf("%s@%d", o.Kind, o.Line))
			}
			if !reflect.DeepEqual(objs, want) {
				t.Errorf("read by span %v, whole %v", objs, want)
			}
		})
	}
}

// An object is named even without a name: by its generateName, else as having none.
func TestRef(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"kind: Deployment\nmetadata: {name: web}\n", "Deployment/web"},
		{"kind: Deployment\nmetadata: {name: web, namespace: shop}\n", "Deployment/shop/web"},
		{"apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {namespace: default}\n", "Service/default/(no name)"},
		{"kind: Pod\nmetadata: {generateName: job-}\n", "Pod/job-*"},
	} {
		objs, err := Read("in.yaml", []byte(tc.in))
		if err != nil || len(objs) != 1 {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if got := objs[0].Ref(); got != tc.want {
			t.Errorf("%q: Ref %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A YAML error is named at the line at fault, not the line before it (yaml.v3's
// context mark) nor none (an unknown alias), in a later document too.
func TestReadErrorLines(t *testing.T) {
	const head = "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n"
	for _, c := range []struct {
		name, src string
		line      int
	}{
		{name: "a tab in the indentation", src: head + "\tlabels: {}\n", line: 5},
		{name: "a flow list left open", src: head + "  labels: [a, b\nspec: {}\n", line: 5},
		{name: "an indentation that fits nothing", src: head + " labels: x\n", line: 5},
		{name: "a quote left open", src: "apiVersion: v1\nkind: Service\nmetadata:\n  name: \"a\nspec: {}\n", line: 4},
		{name: "an alias to nothing", src: "apiVersion: v1\nkind: Service\nmetadata:\n  name: *x\n", line: 4},
		{name: "in the second document", src: "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\n" + head + "  bad: : x\n", line: 9},
		{name: "a second JSON value that is not JSON", src: "{\"apiVersion\": \"v1\", \"kind\": \"Service\"}\n{\"apiVersion\": \"v1\",\n \"kind\": \n}\n", line: 2},
		{name: "a comment in JSON", src: "{\n  // a comment\n  \"a\": 1\n}\n", line: 2},
		{name: "left open at the end", src: "apiVersion: v1\nkind: Service\nmetadata: {name: [\n", line: 3},
	} {
		_, err := Read("x.yaml", []byte(c.src))
		var re *ReadError
		if !errors.As(err, &re) || re.Line != c.line {
			t.Errorf("%s: %v, want an error at line %d", c.name, err, c.line)
		}
	}
}
