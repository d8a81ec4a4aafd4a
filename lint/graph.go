package lint

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nap-k8s/nap/kube"
)

// Workload is a serving workload and the objects linked to it.
type Workload struct {
	Obj         *kube.Object
	PodSpec     corev1.PodSpec
	PodSpecNode *yaml.RNode
	Labels      map[string]string
	// Replicas is the declared replica count (1 when unset); PerNode for DaemonSets.
	Replicas int32
	PerNode  bool
	Strategy *appsv1.DeploymentStrategy // Deployments only

	Services []*kube.Object
	PDBs     []PDB
	HPAs     []autoscalingv2.HorizontalPodAutoscaler
}

// PDB is a PodDisruptionBudget with its source.
type PDB struct {
	Obj  *kube.Object
	Spec policyv1.PodDisruptionBudgetSpec
}

// MinReplicas is the fewest pods the workload runs: its HPA's minReplicas (default 1)
// when one scales it, else its replicas.
func (w *Workload) MinReplicas() int32 {
	min := w.Replicas
	for _, h := range w.HPAs {
		m := int32(1)
		if h.Spec.MinReplicas != nil {
			m = *h.Spec.MinReplicas
		}
		min = m
	}
	return min
}

// BehindService tells whether a Service selects the workload's pods.
func (w *Workload) BehindService() bool { return len(w.Services) > 0 }

// ContainerLine is the line of a container, or the object's.
func (w *Workload) ContainerLine(name string) int {
	if l := kube.ContainerLines(w.PodSpecNode, "containers")[name]; l > 0 {
		return l
	}
	return w.Obj.Line
}

// link builds the workloads of objs and attaches the Services, PDBs and HPAs that
// select or scale them, in the same namespace. Each object is decoded once and the
// matching runs per namespace, so that large inputs stay linear in practice.
func link(objs []*kube.Object) []*Workload {
	type hpaKey struct{ ns, kind, name string }
	var ws []*Workload
	services := selectorIndex[*kube.Object]{}
	pdbs := selectorIndex[PDB]{}
	hpas := map[hpaKey][]autoscalingv2.HorizontalPodAutoscaler{}
	for _, o := range objs {
		switch {
		case kube.IsWorkload(o.Kind):
			if w := workload(o); w != nil {
				ws = append(ws, w)
			}
		case o.Kind == "Service":
			var svc corev1.Service
			if o.Decode(&svc) == nil && len(svc.Spec.Selector) > 0 {
				services.add(o.Namespace, labels.SelectorFromSet(svc.Spec.Selector), o)
			}
		case o.Kind == "PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			if o.Decode(&p) != nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			if err == nil && !sel.Empty() {
				pdbs.add(o.Namespace, sel, PDB{Obj: o, Spec: p.Spec})
			}
		case o.Kind == "HorizontalPodAutoscaler":
			var h autoscalingv2.HorizontalPodAutoscaler
			if o.Decode(&h) == nil {
				k := hpaKey{o.Namespace, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name}
				hpas[k] = append(hpas[k], h)
			}
		}
	}
	for _, w := range ws {
		w.Services = services.matches(w.Obj.Namespace, w.Labels)
		w.PDBs = pdbs.matches(w.Obj.Namespace, w.Labels)
		w.HPAs = append(w.HPAs, hpas[hpaKey{w.Obj.Namespace, w.Obj.Kind, w.Obj.Name}]...)
	}
	return ws
}

func workload(o *kube.Object) *Workload {
	w := &Workload{Obj: o, PodSpecNode: o.PodSpecNode(), Labels: o.PodLabels(), Replicas: 1}
	if w.PodSpecNode == nil {
		return nil
	}
	if err := o.Decode(&w.PodSpec, podSpecPath(o.Kind)...); err != nil {
		return nil
	}
	var spec struct {
		Replicas *int32                     `json:"replicas"`
		Strategy *appsv1.DeploymentStrategy `json:"strategy"`
	}
	if o.Kind != "Pod" {
		o.Decode(&spec, "spec")
	}
	if spec.Replicas != nil {
		w.Replicas = *spec.Replicas
	}
	switch o.Kind {
	case "DaemonSet":
		w.PerNode = true
	case "Deployment":
		w.Strategy = spec.Strategy
	}
	return w
}

func podSpecPath(kind string) []string {
	if kind == "Pod" {
		return []string{"spec"}
	}
	return []string{"spec", "template", "spec"}
}

// selectorIndex finds the selectors that match a label set without trying every one:
// a selector that requires key=value is filed under that pair (its first such, in key
// order), and only pod labels' own pairs are looked up; the rest are tried one by one.
type selectorIndex[T any] map[string]*selectorBucket[T] // by namespace

type selectorBucket[T any] struct {
	byPair map[string][]selected[T] // "key=value"
	others []selected[T]
	n      int // insertion order, so that matches come out in input order
}

type selected[T any] struct {
	n   int
	sel labels.Selector
	v   T
}

func (x selectorIndex[T]) add(ns string, sel labels.Selector, v T) {
	b := x[ns]
	if b == nil {
		b = &selectorBucket[T]{byPair: map[string][]selected[T]{}}
		x[ns] = b
	}
	s := selected[T]{n: b.n, sel: sel, v: v}
	b.n++
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		if vals := r.Values(); (r.Operator() == selection.Equals || r.Operator() == selection.DoubleEquals ||
			r.Operator() == selection.In) && vals.Len() == 1 {
			k := r.Key() + "=" + vals.UnsortedList()[0]
			b.byPair[k] = append(b.byPair[k], s)
			return
		}
	}
	b.others = append(b.others, s)
}

func (x selectorIndex[T]) matches(ns string, podLabels map[string]string) []T {
	b := x[ns]
	if b == nil {
		return nil
	}
	set := labels.Set(podLabels)
	var hits []selected[T]
	for k, v := range podLabels {
		for _, s := range b.byPair[k+"="+v] {
			if s.sel.Matches(set) {
				hits = append(hits, s)
			}
		}
	}
	for _, s := range b.others {
		if s.sel.Matches(set) {
			hits = append(hits, s)
		}
	}
	slices.SortFunc(hits, func(a, b selected[T]) int { return a.n - b.n })
	out := make([]T, len(hits))
	for i, h := range hits {
		out[i] = h.v
	}
	return out
}
