package manifest

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// FieldError is a value of the wrong type in an object (replicas: "2", a template left
// unrendered as {{ .Values.x }}): Decode returns it where the JSON decoder names the
// field, with the line of the value.
type FieldError struct {
	Path string // the field, from the object's top: spec.replicas
	Line int    // the value's line, 0 when it was not found
	Got  string // what the value is: a string, a mapping, ...
	Want string // what Kubernetes takes there: an integer, ...
}

func (e *FieldError) Error() string {
	return e.Path + " is " + e.Got + ", where Kubernetes takes " + e.Want
}

// fieldError is err from decoding node n (at path in the object) as a FieldError where
// it names a field, or err.
func fieldError(n *yaml.Node, path []string, err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Field == "" {
		return err
	}
	fields := strings.Split(te.Field, ".")
	return &FieldError{
		Path: strings.Join(append(append([]string(nil), path...), fields...), "."),
		Line: lineOf(n, fields, te.Value),
		Got:  article(te.Value),
		Want: wantOf(te.Type),
	}
}

// lineOf is the line of the first value at fields below n (every item of a list on the
// way) whose JSON kind is got ("string", "number", "object", "array", "bool"), 0 if none.
func lineOf(n *yaml.Node, fields []string, got string) int {
	for n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if kind, _, _ := strings.Cut(got, " "); len(fields) == 0 && jsonKind(n) == kind { // "number 1.5": a number
		return n.Line
	}
	if n.Kind == yaml.SequenceNode { // the field is each item's (or, at the end, each item)
		for _, e := range n.Content {
			if l := lineOf(e, fields, got); l > 0 {
				return l
			}
		}
		return 0
	}
	if len(fields) == 0 || n.Kind != yaml.MappingNode {
		return 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == fields[0] {
			return lineOf(n.Content[i+1], fields[1:], got)
		}
	}
	return 0
}

// jsonKind is what the JSON decoder calls the value of n.
func jsonKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "object"
	case yaml.SequenceNode:
		return "array"
	}
	switch n.ShortTag() {
	case yaml.NodeTagInt, yaml.NodeTagFloat:
		return "number"
	case yaml.NodeTagBool:
		return "bool"
	case yaml.NodeTagString:
		return "string"
	}
	return ""
}

// article names a JSON kind as the message says it.
func article(kind string) string {
	switch kind {
	case "object":
		return "a mapping"
	case "array":
		return "a list"
	case "bool":
		return "a boolean"
	case "number":
		return "a number"
	case "string":
		return "a string"
	}
	if n, ok := strings.CutPrefix(kind, "number "); ok { // a number that does not fit: "number 1.5"
		return "the number " + n
	}
	return "a " + kind
}

// wantOf names the Go type the field decodes into as a Kubernetes user knows it.
func wantOf(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a " + t.String()
}
