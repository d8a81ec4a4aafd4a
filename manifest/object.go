package manifest

import (
	"encoding/json"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// podSpecPaths are where each kind keeps the pod spec that its pods run.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// IsWorkload tells whether kind runs long-lived pods that serve: the kinds whose
// termination nap cares about (Jobs and CronJobs run to completion).
func IsWorkload(kind string) bool {
	switch kind {
	case "Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "ReplicationController":
		return true
	}
	return false
}

// PodSpecNode returns the pod spec node of o, or nil when o has none.
func (o *Object) PodSpecNode() *yaml.RNode {
	path, ok := podSpecPaths[o.Kind]
	if !ok {
		return nil
	}
	n, err := o.Node.Pipe(yaml.Lookup(path...))
	if err != nil {
		return nil
	}
	return n
}

// PodLabels returns the labels of o's pods (the template's, or a Pod's own).
func (o *Object) PodLabels() map[string]string {
	path := []string{"spec", "template", "metadata", "labels"}
	if o.Kind == "Pod" {
		path = []string{"metadata", "labels"}
	}
	n, err := o.Node.Pipe(yaml.Lookup(path...))
	if err != nil || n == nil {
		return nil
	}
	var labels map[string]string
	if err := n.YNode().Decode(&labels); err != nil {
		return nil
	}
	return labels
}

// Decode decodes o (or the node at path inside it) into v, a Kubernetes API type.
func (o *Object) Decode(v any, path ...string) error {
	n := o.Node
	if len(path) > 0 {
		var err error
		if n, err = n.Pipe(yaml.Lookup(path...)); err != nil || n == nil {
			return err
		}
	}
	// Through the YAML node's own value, not RNode.MarshalJSON: that one re-encodes the
	// node as YAML text and parses it again, which dominated linting large inputs.
	var tree any
	if err := n.YNode().Decode(&tree); err != nil {
		return err
	}
	b, err := json.Marshal(tree)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// ContainerLines returns the line of each container of a pod spec node, by name.
func ContainerLines(podSpec *yaml.RNode, field string) map[string]int {
	lines := map[string]int{}
	if podSpec == nil {
		return lines
	}
	seq, err := podSpec.Pipe(yaml.Lookup(field))
	if err != nil || seq == nil {
		return lines
	}
	elems, _ := seq.Elements()
	for _, c := range elems {
		line := c.YNode().Line
		if n := c.YNode(); n.Kind == yaml.AliasNode && n.Alias != nil {
			// A container given as an alias (- *app): named where the alias stands, in
			// this list, and read from its anchor.
			c = yaml.NewRNode(n.Alias)
		}
		if name, err := c.Pipe(yaml.Lookup("name")); err == nil && name != nil {
			lines[yaml.GetValue(name)] = line
		}
	}
	return lines
}
