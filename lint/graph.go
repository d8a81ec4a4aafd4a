package lint

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
// select or scale them, in the same namespace.
func link(objs []*kube.Object) []*Workload {
	var ws []*Workload
	var services, pdbs, hpas []*kube.Object
	for _, o := range objs {
		switch {
		case kube.IsWorkload(o.Kind):
			if w := workload(o); w != nil {
				ws = append(ws, w)
			}
		case o.Kind == "Service":
			services = append(services, o)
		case o.Kind == "PodDisruptionBudget":
			pdbs = append(pdbs, o)
		case o.Kind == "HorizontalPodAutoscaler":
			hpas = append(hpas, o)
		}
	}
	for _, w := range ws {
		set := labels.Set(w.Labels)
		for _, s := range services {
			var svc corev1.Service
			if s.Namespace != w.Obj.Namespace || s.Decode(&svc) != nil || len(svc.Spec.Selector) == 0 {
				continue
			}
			if labels.SelectorFromSet(svc.Spec.Selector).Matches(set) {
				w.Services = append(w.Services, s)
			}
		}
		for _, p := range pdbs {
			var pdb policyv1.PodDisruptionBudget
			if p.Namespace != w.Obj.Namespace || p.Decode(&pdb) != nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(set) {
				continue
			}
			w.PDBs = append(w.PDBs, PDB{Obj: p, Spec: pdb.Spec})
		}
		for _, h := range hpas {
			var hpa autoscalingv2.HorizontalPodAutoscaler
			if h.Namespace != w.Obj.Namespace || h.Decode(&hpa) != nil {
				continue
			}
			if hpa.Spec.ScaleTargetRef.Kind == w.Obj.Kind && hpa.Spec.ScaleTargetRef.Name == w.Obj.Name {
				w.HPAs = append(w.HPAs, hpa)
			}
		}
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
