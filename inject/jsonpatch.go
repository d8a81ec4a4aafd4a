package inject

import (
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// treeEditor changes the node tree alone (a pod an API server sent: no text to keep)
// and records each change as a JSON Patch operation on the path of the node it changes.
type treeEditor struct {
	ops   []Op
	paths map[*yaml.Node]string
}

// newTreeEditor edits the tree under root and records JSON Patch operations.
func newTreeEditor(root *yaml.Node) *treeEditor {
	e := &treeEditor{paths: map[*yaml.Node]string{}}
	e.index(root, "")
	return e
}

func (e *treeEditor) put(m *yaml.Node, key string, value *yaml.Node, _ bool) error {
	kind := "add"
	i := nullAt(m, key)
	if i >= 0 {
		kind = "replace"
	}
	if err := e.op(kind, m, "/"+pointerEscape.Replace(key), value); err != nil {
		return err
	}
	setValue(m, i, key, value)
	return nil
}

func (e *treeEditor) appendItem(s, item *yaml.Node, _ bool) error {
	if err := e.op("add", s, "/-", item); err != nil {
		return err
	}
	if item.Kind == yaml.MappingNode || item.Kind == yaml.SequenceNode {
		e.index(item, e.paths[s]+"/"+strconv.Itoa(len(s.Content)))
	}
	s.Content = append(s.Content, item)
	return nil
}

func (e *treeEditor) setInt(n *yaml.Node, v int64) error {
	if err := e.op("replace", n, "", num(v)); err != nil {
		return err
	}
	setScalarInt(n, v)
	return nil
}

// nullAt is the index of key's null value in mapping m (`key:`, `~`, `null`), or -1.
func nullAt(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && isNull(m.Content[i+1]) {
			return i + 1
		}
	}
	return -1
}

// setValue puts value in the tree: at index i of m (a null's), or as a new key.
func setValue(m *yaml.Node, i int, key string, value *yaml.Node) {
	if i >= 0 {
		m.Content[i] = value
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, value)
}

func setScalarInt(n *yaml.Node, v int64) {
	n.Value, n.Tag, n.Style = strconv.FormatInt(v, 10), "!!int", 0
}

// index records the JSON Pointer of n and everything under it.
func (e *treeEditor) index(n *yaml.Node, path string) {
	e.paths[n] = path
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			e.index(n.Content[i+1], path+"/"+pointerEscape.Replace(n.Content[i].Value))
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			e.index(c, path+"/"+strconv.Itoa(i))
		}
	}
}

var pointerEscape = strings.NewReplacer("~", "~0", "/", "~1")

// op records a JSON Patch operation at path (the node's, then suffix) with value.
func (e *treeEditor) op(kind string, n *yaml.Node, suffix string, value *yaml.Node) error {
	path, ok := e.paths[n]
	if !ok {
		return fmt.Errorf("an edit of a node with no known path (please report this)")
	}
	path += suffix
	v, err := nodeValue(value)
	if err != nil {
		return err
	}
	e.ops = append(e.ops, Op{Op: kind, Path: path, Value: v})
	if value.Kind == yaml.MappingNode || value.Kind == yaml.SequenceNode {
		e.index(value, path) // later edits may go inside it
	}
	return nil
}

// nodeValue is an inserted node as a JSON value.
func nodeValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := nodeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return n.Value, nil
		case "!!int":
			return strconv.ParseInt(n.Value, 0, 64) // 0555 is octal, as YAML 1.1 reads it
		case "!!bool":
			return strconv.ParseBool(n.Value)
		}
	}
	return nil, fmt.Errorf("no JSON value for a %s node", n.Tag)
}
