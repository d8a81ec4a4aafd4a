package inject

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// editor is how the plan changes a pod template: each change is made to the node tree,
// and to what the editor keeps besides. Two editors: textEditor (Inject) splices the
// manifest's text, treeEditor (Patch) records JSON Patch operations.
type editor interface {
	// put sets key: value in mapping m: in place of a null value, or added at the end.
	put(m *yaml.Node, key string, value *yaml.Node, compact bool) error
	// appendItem adds item at the end of sequence s.
	appendItem(s, item *yaml.Node, compact bool) error
	// setInt replaces scalar n with the integer v.
	setInt(n *yaml.Node, v int64) error
}

var (
	_ editor = (*textEditor)(nil)
	_ editor = (*treeEditor)(nil)
)
