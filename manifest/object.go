package manifest

import (
	"encoding/json"

	"github.com/nap-k8s/nap/kube"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Group is the API group of o's apiVersion ("" for the core group); an object that names
// no apiVersion is taken for the built-in kind of its name (kube.BuiltinKind).
func (o *Object) Group() string {
	if o.APIVersion == "" {
		k, _ := kube.BuiltinKind(o.Kind)
		return k.Group
	}
	return kube.GroupOf(o.APIVersion)
}

// workloadKind is what nap knows of o's kind when it runs pods (kube.Kinds).
func (o *Object) workloadKind() (kube.KindInfo, bool) {
	k, ok := kube.KindFor(o.Group(), o.Kind)
	return k, ok && len(k.PodSpec) > 0
}

// IsWorkload tells whether o runs long-lived pods that serve: the kinds whose
// termination nap cares about (Jobs and CronJobs run to completion).
func (o *Object) IsWorkload() bool {
	k, ok := o.workloadKind()
	return ok && k.Serves
}

// RunsToCompletion tells whether o's pods run to completion (Jobs, CronJobs).
func (o *Object) RunsToCompletion() bool {
	k, ok := o.workloadKind()
	return ok && !k.Serves
}

// PodSpecNode returns the pod spec node of o, or nil when o is no workload kind nap
// knows or has none.
func (o *Object) PodSpecNode() *yaml.RNode {
	k, ok := o.workloadKind()
	if !ok {
		return nil
	}
	n, err := o.Node.Pipe(yaml.Lookup(k.PodSpec...))
	if err != nil {
		return nil
	}
	return n
}

// LeftAlone says why nap leaves the pods of o alone although o may run some, "" when it
// does not: napctl inject notes it, napctl lint says what it did not check.
func (o *Object) LeftAlone() string {
	switch group := o.Group(); {
	case o.RunsToCompletion():
		return "a " + o.Kind + " runs to completion, it is not replaced while serving"
	case group == "serving.knative.dev" && o.Kind == "Service":
		return "a Knative Service's pods are drained by Knative itself (its queue-proxy), which also refuses lifecycle hooks"
	case (group == "template.openshift.io" || group == "") && o.Kind == "Template":
		return "an OpenShift Template: its objects take parameters; render it first (oc process -f " + o.File + ")"
	case !o.IsWorkload():
		if at := o.podTemplateAt(); at != "" {
			return o.APIVersion + " " + o.Kind + " is not a kind nap knows; its pods (" + at + ") are for its controller to shape"
		}
	}
	return ""
}

// HasPodTemplate tells whether o carries a pod template nap does not know the kind
// of (a pod spec's containers anywhere under spec: spec.template.spec.containers, or
// deeper, as OpenKruise's UnitedDeployment holds it): a custom workload whose pods nap
// leaves alone.
func (o *Object) HasPodTemplate() bool { return o.podTemplateAt() != "" }

// podTemplateAt is the path of the first pod spec under o's spec (a mapping whose
// containers is a list of mappings), "" if none within podTemplateDepth levels.
func (o *Object) podTemplateAt() string {
	spec, err := o.Node.Pipe(yaml.Lookup("spec"))
	if err != nil || spec == nil {
		return ""
	}
	return podSpecAt(spec.YNode(), "spec", podTemplateDepth)
}

// podTemplateDepth bounds the search for a pod template: UnitedDeployment's is 5 levels
// below spec (template.deploymentTemplate.spec.template.spec).
const podTemplateDepth = 8

func podSpecAt(n *yaml.Node, at string, depth int) string {
	if n.Kind != yaml.MappingNode || depth < 0 {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		if k == "containers" && v.Kind == yaml.SequenceNode && len(v.Content) > 0 && v.Content[0].Kind == yaml.MappingNode {
			return at
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if p := podSpecAt(n.Content[i+1], at+"."+n.Content[i].Value, depth-1); p != "" {
			return p
		}
	}
	return ""
}

// PodLabels returns the labels of o's pods (the template's, or a Pod's own).
func (o *Object) PodLabels() map[string]string { return o.podMeta("labels") }

// PodAnnotations returns the annotations of o's pods (the template's, or a Pod's own).
func (o *Object) PodAnnotations() map[string]string { return o.podMeta("annotations") }

// podMeta is the string map at field of the pods' metadata.
func (o *Object) podMeta(field string) map[string]string {
	path := []string{"spec", "template", "metadata", field}
	if o.Kind == "Pod" && o.Group() == "" {
		path = []string{"metadata", field}
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
	// node as YAML text and parses it again, which dominated linting large inputs; and
	// by Value, not yaml.v3's decoder, which is quadratic in a mapping's keys.
	tree, err := Value(n.YNode())
	if err != nil {
		return err
	}
	b, err := json.Marshal(tree)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fieldError(n.YNode(), path, err)
	}
	return nil
}

// Keys are the keys of the mapping at path, in order (none when it is not a mapping),
// read from the node: no value is decoded.
func (o *Object) Keys(path ...string) []string {
	n, err := o.Node.Pipe(yaml.Lookup(path...))
	if err != nil || n == nil {
		return nil
	}
	y := n.YNode()
	if y.Kind == yaml.AliasNode && y.Alias != nil {
		y = y.Alias
	}
	if y.Kind != yaml.MappingNode {
		return nil
	}
	keys := make([]string, 0, len(y.Content)/2)
	for i := 0; i+1 < len(y.Content); i += 2 {
		keys = append(keys, y.Content[i].Value)
	}
	return keys
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
