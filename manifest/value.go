package manifest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

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
