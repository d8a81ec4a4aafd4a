package install

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ValuesReference is docs/reference/chart-values.md: every value of the chart, its
// default and what values.yaml says of it, read from values.yaml as the chart's
// generator writes it, and its type from values.schema.json's: one source for the
// chart, its schema and its page.
func ValuesReference() ([]byte, error) {
	doc, err := valuesYAML()
	if err != nil {
		return nil, err
	}
	root, err := yaml.Parse(string(doc))
	if err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	raw, err := valuesSchema()
	if err != nil {
		return nil, err
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("# The chart's values\n\nGenerated from `charts/nap/values.yaml` and `values.schema.json`, which the chart's generator writes " +
		"(`go test ./controller/install -run TestValuesReference -update`): do not edit. Each value but the monitoring objects' (metrics.serviceMonitor, prometheusRule, dashboard) is a flag of `napctl install`: " +
		"[controller.md](../controller.md#the-helm-chart) maps them.\n\n| value | type | default | what it sets |\n|---|---|---|---|\n")
	// A comment above a group of values (wait:, metrics:) goes to its first value.
	pending := ""
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := strings.TrimPrefix(path+"."+k.Value, ".")
			about := comment(k.HeadComment, v.LineComment, k.LineComment)
			if _, grouped := schemaOf(schema, key)["properties"]; grouped && v.Kind == yaml.MappingNode && len(v.Content) > 0 {
				pending = strings.TrimSpace(pending + " " + about)
				walk(v, key)
				continue
			}
			about = strings.TrimSpace(pending + " " + about)
			pending = ""
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", key, schemaType(schemaOf(schema, key)), defaultOf(v), strings.ReplaceAll(about, "|", `\|`))
		}
	}
	walk(root.YNode(), "")
	return []byte(b.String()), nil
}

// comment is the text of YAML comments, their # and line breaks gone.
func comment(cs ...string) string {
	var words []string
	for _, c := range cs {
		for _, line := range strings.Split(c, "\n") {
			if line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#")); line != "" {
				words = append(words, line)
			}
		}
	}
	return strings.Join(words, " ")
}

// defaultOf is a value's default as the table shows it.
func defaultOf(v *yaml.Node) string {
	switch {
	case v.Kind == yaml.ScalarNode && v.Value == "":
		return `""`
	case v.Kind == yaml.ScalarNode:
		return "`" + v.Value + "`"
	case v.Kind == yaml.SequenceNode && len(v.Content) == 0:
		return "`[]`"
	case v.Kind == yaml.MappingNode && len(v.Content) == 0:
		return "`{}`"
	}
	s, err := yaml.String(v, yaml.Flow)
	if err != nil {
		return "?"
	}
	return "`" + strings.TrimSpace(s) + "`"
}

// schemaOf is the JSON schema's part for the value at path (dotted); nil when it has
// none.
func schemaOf(schema map[string]any, path string) map[string]any {
	cur := schema
	for _, key := range strings.Split(path, ".") {
		props, _ := cur["properties"].(map[string]any)
		if cur, _ = props[key].(map[string]any); cur == nil {
			return nil
		}
	}
	return cur
}

// schemaType is a schema's type, "" when it gives none.
func schemaType(m map[string]any) string {
	switch t := m["type"].(type) {
	case string:
		return t
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, fmt.Sprint(x))
		}
		return strings.Join(out, " or ")
	}
	return ""
}
