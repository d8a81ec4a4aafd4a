package observe

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Target is what to watch: the pods a selector picks in a namespace. Name is how the
// user named it ("deployment/web", "app=web").
type Target struct {
	Namespace string
	Name      string
	Selector  labels.Selector
}

// workloadKinds are the kinds a target may name, by every spelling kubectl accepts.
var workloadKinds = map[string]string{
	"deployment": "deployment", "deployments": "deployment", "deploy": "deployment",
	"statefulset": "statefulset", "statefulsets": "statefulset", "sts": "statefulset",
	"daemonset": "daemonset", "daemonsets": "daemonset", "ds": "daemonset",
	"replicaset": "replicaset", "replicasets": "replicaset", "rs": "replicaset",
}

// Resolve turns what the user wrote into a Target in namespace: KIND/NAME of a
// Deployment, StatefulSet, DaemonSet or ReplicaSet (whose pod selector is read from the
// cluster), or a label selector ("app=web", "tier in (api,web)").
func Resolve(ctx context.Context, cs kubernetes.Interface, namespace, s string) (Target, error) {
	t := Target{Namespace: namespace, Name: s}
	kind, name, isWorkload := strings.Cut(s, "/")
	if !isWorkload {
		sel, err := labels.Parse(s)
		if err != nil {
			return t, fmt.Errorf("--watch %q: neither KIND/NAME nor a label selector: %w", s, err)
		}
		if sel.Empty() {
			return t, fmt.Errorf("--watch %q: an empty selector would watch every pod of namespace %s", s, namespace)
		}
		t.Selector = sel
		return t, nil
	}
	k, ok := workloadKinds[strings.ToLower(kind)]
	if !ok || name == "" {
		return t, fmt.Errorf("--watch %q: want deployment/NAME, statefulset/NAME, daemonset/NAME, replicaset/NAME or a label selector", s)
	}
	var sel *metav1.LabelSelector
	var err error
	get := metav1.GetOptions{}
	switch k {
	case "deployment":
		d, e := cs.AppsV1().Deployments(namespace).Get(ctx, name, get)
		if err = e; e == nil {
			sel = d.Spec.Selector
		}
	case "statefulset":
		d, e := cs.AppsV1().StatefulSets(namespace).Get(ctx, name, get)
		if err = e; e == nil {
			sel = d.Spec.Selector
		}
	case "daemonset":
		d, e := cs.AppsV1().DaemonSets(namespace).Get(ctx, name, get)
		if err = e; e == nil {
			sel = d.Spec.Selector
		}
	case "replicaset":
		d, e := cs.AppsV1().ReplicaSets(namespace).Get(ctx, name, get)
		if err = e; e == nil {
			sel = d.Spec.Selector
		}
	}
	if err != nil {
		return t, fmt.Errorf("--watch %s in namespace %s: %w", s, namespace, err)
	}
	t.Name = k + "/" + name
	if t.Selector, err = metav1.LabelSelectorAsSelector(sel); err != nil || t.Selector.Empty() {
		return t, fmt.Errorf("--watch %s: its pod selector %v selects no pods or every pod: %v", s, sel, err)
	}
	return t, nil
}
