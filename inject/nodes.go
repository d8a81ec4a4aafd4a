package inject

import (
	"path"
	"reflect"
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// keyColumn is the column of key in mapping m, -1 when m has no such key.
func keyColumn(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Column
		}
	}
	return -1
}

func findByName(seq *yaml.Node, name string) *yaml.Node {
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	for _, item := range seq.Content {
		if n := lookup(item, "name"); n != nil && n.Value == name {
			return item
		}
	}
	return nil
}

func findMount(seq *yaml.Node, mountPath string) *yaml.Node {
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	for _, item := range seq.Content {
		if m := lookup(item, "mountPath"); m != nil && path.Clean(m.Value) == mountPath {
			return item
		}
	}
	return nil
}

// sameScalar: two scalars of different text decode to the same value (0555 and 365).
func sameScalar(a, b *yaml.Node) bool {
	var x, y any
	return a.Decode(&x) == nil && b.Decode(&y) == nil && reflect.DeepEqual(x, y)
}

func isFlow(n *yaml.Node) bool { return n.Style&yaml.FlowStyle != 0 }

// isNull tells whether n is a null value: `key:` with nothing after it, `~` or `null`.
// Kubernetes reads such a key as absent; Helm renders them often.
func isNull(n *yaml.Node) bool { return n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func nullToken(s string) bool { return s == "~" || s == "null" || s == "Null" || s == "NULL" }

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func num(i int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(i, 10)}
}

func octal(i int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "0" + strconv.FormatInt(i, 8)}
}

func boolean(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

func mapping(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i < len(kv); i += 2 {
		m.Content = append(m.Content, str(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return m
}

func sequence(flow bool, items ...*yaml.Node) *yaml.Node {
	s := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
	if flow {
		s.Style = yaml.FlowStyle
	}
	return s
}

// present is lookup with a null value read as absent, as Kubernetes reads it.
func present(m *yaml.Node, key string) *yaml.Node {
	if v := lookup(m, key); !isNull(v) {
		return v
	}
	return nil
}

// lookup returns the value of key in mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
