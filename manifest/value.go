package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// FromValue makes the object named name, line 1, from a decoded JSON object (what an
// API server returned: maps, slices, strings, bools, nil, int64, float64 and json.Number
// numbers).
// It builds the node tree directly: printing JSON and parsing it back as YAML cost a
// fleet-wide read most of its time. Keys are sorted, so equal values give equal trees.
func FromValue(name string, v map[string]any) (*Object, error) {
	n, err := node(v)
	if err != nil {
		return nil, &ReadError{File: name, Line: 1, Err: err}
	}
	var objs []*Object
	if err := add(&objs, name, yaml.NewRNode(n)); err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		return nil, &ReadError{File: name, Line: 1, Err: fmt.Errorf("%d objects, want one", len(objs))}
	}
	return objs[0], nil
}

func node(v any) (*yaml.Node, error) {
	scalar := func(tag, value string) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value, Line: 1, Column: 1}
	}
	switch v := v.(type) {
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap, Line: 1, Column: 1, Content: make([]*yaml.Node, 0, 2*len(v))}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			val, err := node(v[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			n.Content = append(n.Content, scalar(yaml.NodeTagString, k), val)
		}
		return n, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: yaml.NodeTagSeq, Line: 1, Column: 1, Content: make([]*yaml.Node, 0, len(v))}
		for i, e := range v {
			en, err := node(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			n.Content = append(n.Content, en)
		}
		return n, nil
	case string:
		return scalar(yaml.NodeTagString, v), nil
	case bool:
		return scalar(yaml.NodeTagBool, strconv.FormatBool(v)), nil
	case nil:
		return scalar(yaml.NodeTagNull, "null"), nil
	case int64:
		return scalar(yaml.NodeTagInt, strconv.FormatInt(v, 10)), nil
	case int:
		return scalar(yaml.NodeTagInt, strconv.Itoa(v)), nil
	case float64:
		return scalar(yaml.NodeTagFloat, strconv.FormatFloat(v, 'g', -1, 64)), nil
	case json.Number: // a decoder's UseNumber: integers stay exact
		if _, err := v.Int64(); err == nil {
			return scalar(yaml.NodeTagInt, v.String()), nil
		}
		return scalar(yaml.NodeTagFloat, v.String()), nil
	}
	return nil, fmt.Errorf("a value of type %T", v)
}

// maxValueNodes bounds the values Value makes of one node: aliases may stand for the
// same nodes again and again (a "billion laughs" document), as yaml.v3 bounds them too.
const maxValueNodes = 10_000_000

// Value is the JSON value of node n, as yaml.v3's decoding into an interface{} gives it
// (scalars by their resolved tags, aliases followed, "<<" merge keys merged, a repeated
// key an error), in one pass: yaml.v3's own decoder checks each mapping key against
// every key before it, quadratic in a mapping's keys (a ConfigMap of 80,000 keys took
// napctl lint 34 s).
func Value(n *yaml.Node) (any, error) {
	budget := maxValueNodes
	return value(n, &budget)
}

func value(n *yaml.Node, budget *int) (any, error) {
	if *budget--; *budget < 0 {
		return nil, errors.New("document has excessive aliasing")
	}
	switch n.Kind {
	case 0: // an empty document
		return nil, nil
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return value(n.Content[0], budget)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: an alias to nothing", n.Line)
		}
		return value(n.Alias, budget)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, e := range n.Content {
			v, err := value(e, budget)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		lines := make(map[string]int, len(n.Content)/2)
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == yaml.MergeTag {
				merges = append(merges, v)
				continue
			}
			key, err := value(k, budget)
			if err != nil {
				return nil, err
			}
			name := fmt.Sprint(key)
			if key == nil {
				name = "null"
			}
			if line, dup := lines[name]; dup {
				return nil, fmt.Errorf("line %d: mapping key %q already defined at line %d", k.Line, name, line)
			}
			lines[name] = k.Line
			if out[name], err = value(v, budget); err != nil {
				return nil, err
			}
		}
		// Merged keys never override the mapping's own, nor those of an earlier source.
		for _, m := range merges {
			if m.Kind == yaml.AliasNode && m.Alias != nil {
				m = m.Alias
			}
			sources := []*yaml.Node{m}
			if m.Kind == yaml.SequenceNode {
				sources = m.Content
			}
			for _, src := range sources {
				v, err := value(src, budget)
				if err != nil {
					return nil, err
				}
				mv, ok := v.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("line %d: map merge requires map or sequence of maps as the value", m.Line)
				}
				for k, e := range mv {
					if _, set := out[k]; !set {
						out[k] = e
					}
				}
			}
		}
		return out, nil
	case yaml.ScalarNode:
		return scalarValue(n)
	}
	return nil, fmt.Errorf("line %d: a YAML node of kind %d", n.Line, n.Kind)
}

// scalarValue is a scalar as yaml.v3 resolves it into an interface{}.
func scalarValue(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case yaml.NodeTagNull:
		return nil, nil
	case yaml.NodeTagBool:
		b, err := strconv.ParseBool(n.Value)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q is not a bool", n.Line, n.Value)
		}
		return b, nil
	case yaml.NodeTagInt:
		s := strings.ReplaceAll(n.Value, "_", "")
		if i, err := strconv.ParseInt(s, 0, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(s, 0, 64); err == nil {
			return u, nil
		}
		// yaml.v3 reads the digits after 0b and 0o (YAML 1.2's octal) with a sign of
		// their own: 0o+0 is 0, 0o-7 is -7, -0o7 is -7.
		for _, p := range []struct {
			prefix string
			base   int
		}{{"0b", 2}, {"-0b", 2}, {"0o", 8}, {"-0o", 8}} {
			rest, ok := strings.CutPrefix(s, p.prefix)
			if !ok {
				continue
			}
			if p.prefix[0] == '-' {
				rest = "-" + rest
			}
			if i, err := strconv.ParseInt(rest, p.base, 64); err == nil {
				return i, nil
			}
			if u, err := strconv.ParseUint(rest, p.base, 64); err == nil {
				return u, nil
			}
		}
		// Past 64 bits yaml.v3 keeps it as a float.
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q is not an int", n.Line, n.Value)
		}
		return f, nil
	case yaml.NodeTagFloat:
		switch strings.ToLower(n.Value) {
		case ".inf", "+.inf":
			return math.Inf(1), nil
		case "-.inf":
			return math.Inf(-1), nil
		case ".nan":
			return math.NaN(), nil
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q is not a float", n.Line, n.Value)
		}
		return f, nil
	case yaml.NodeTagString:
		return n.Value, nil
	}
	// !!binary, !!timestamp and the rarer tags: as yaml.v3 decodes the one scalar.
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
