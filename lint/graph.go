package lint

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/traffic"
)

// Workload is a serving workload and the objects linked to it.
type Workload struct {
	Obj         *manifest.Object
	PodSpec     corev1.PodSpec
	PodSpecNode *yaml.RNode
	Labels      map[string]string
	// Replicas is the declared replica count (1 when unset); PerNode for DaemonSets.
	Replicas int32
	PerNode  bool
	Strategy *appsv1.DeploymentStrategy // Deployments only

	Services []*manifest.Object
	// ServiceBackends[i] is how many pods Services[i] has at the least, counting every
	// workload it selects (versions, canaries): one of several is not a single replica.
	ServiceBackends []int32
	PDBs            []PDB
	HPAs            []autoscalingv2.HorizontalPodAutoscaler
	// ConfigMapKeys are the keys (data and binaryData) of the ConfigMaps of the input in
	// the workload's namespace, by name: what its ConfigMap volumes can mount.
	ConfigMapKeys map[string]map[string]bool
	// Fronts are the front doors of the input (Ingresses, Gateway API routes) that name
	// the workload's Services as backends.
	Fronts kube.Frontends

	routed     []Routed
	routedDone bool
	// typed are the Services, decoded (services); frontsOf tells which front doors name
	// one (Fronts.Of, where the caller gives no Frontends of its own: CheckPod).
	typed     []*corev1.Service
	typedDone bool
	frontsOf  func(service string) kube.Fronts
}

// services are the workload's Services, decoded once; one that does not decode is left
// out, as Routed leaves it.
func (w *Workload) services() []*corev1.Service {
	if !w.typedDone {
		w.typedDone = true
		for _, o := range w.Services {
			svc := &corev1.Service{}
			if o.Decode(svc) == nil {
				svc.Name = o.Name
				w.typed = append(w.typed, svc)
			}
		}
	}
	return w.typed
}

// fronts tells which front doors name the Service called service.
func (w *Workload) fronts(service string) kube.Fronts {
	if w.frontsOf != nil {
		return w.frontsOf(service)
	}
	return w.Fronts.Of(service)
}

// routes are what the paths that reach the workload's pods need by calibration c (nil:
// none measured); ok false where no Service selects them.
func (w *Workload) routes(c *traffic.Calibration) (traffic.Need, bool) {
	svcs := w.services()
	if len(svcs) == 0 {
		return traffic.Need{}, false
	}
	return c.Route(svcs, w.fronts), true
}

// Routed is a container that a Service sends traffic to, with the first that does.
type Routed struct {
	Container corev1.Container
	Service   string
}

// Routed returns the containers the workload's Services send traffic to, in the pod's
// order: those a Service port's targetPort names (a container port's name) or numbers
// (a declared containerPort; no targetPort: the port's own number). A targetPort that no
// container declares still reaches the pod (containerPort is informational), so that
// Service counts for the containers with ports, or for all when none declares one.
func (w *Workload) Routed() []Routed {
	if w.routedDone {
		return w.routed
	}
	w.routedDone = true
	by := map[string]string{} // container → the first Service routing to it
	route := func(c, svc string) {
		if _, ok := by[c]; !ok {
			by[c] = svc
		}
	}
	for _, svc := range w.services() {
		if len(svc.Spec.Ports) == 0 {
			// No port named (a headless Service, or one written loosely): it may
			// route to any port.
			for _, c := range servingContainers(w.PodSpec) {
				route(c.Name, svc.Name)
			}
		}
		for _, p := range svc.Spec.Ports {
			matched := false
			for _, c := range w.PodSpec.Containers {
				for _, cp := range c.Ports {
					if serves(p, cp) {
						matched = true
						route(c.Name, svc.Name)
					}
				}
			}
			if !matched {
				for _, c := range servingContainers(w.PodSpec) {
					route(c.Name, svc.Name)
				}
			}
		}
	}
	for _, c := range w.PodSpec.Containers {
		if svc, ok := by[c.Name]; ok {
			w.routed = append(w.routed, Routed{Container: c, Service: svc})
		}
	}
	return w.routed
}

// serves tells whether Service port p sends to container port cp: by name when its
// targetPort is a name, else by number (no targetPort: the port's own number).
func serves(p corev1.ServicePort, cp corev1.ContainerPort) bool {
	if p.TargetPort.Type == intstr.String && p.TargetPort.StrVal != "" {
		return cp.Name == p.TargetPort.StrVal
	}
	return cp.ContainerPort == cmp.Or(p.TargetPort.IntVal, p.Port)
}

// PDB is a PodDisruptionBudget with its source.
type PDB struct {
	Obj  *manifest.Object
	Spec policyv1.PodDisruptionBudgetSpec
}

// MinReplicas is the fewest pods the workload runs: its HPA's minReplicas (default 1)
// when one scales it, else its replicas.
func (w *Workload) MinReplicas() int32 {
	least := w.Replicas
	for _, h := range w.HPAs {
		m := int32(1)
		if h.Spec.MinReplicas != nil {
			m = *h.Spec.MinReplicas
		}
		least = m
	}
	return least
}

// BehindService tells whether a Service selects the workload's pods.
func (w *Workload) BehindService() bool { return len(w.Services) > 0 || len(w.typed) > 0 }

// ContainerLine is the line of a container, or the object's.
func (w *Workload) ContainerLine(name string) int {
	if l := manifest.ContainerLines(w.PodSpecNode, "containers")[name]; l > 0 {
		return l
	}
	return w.Obj.Line
}

// Workloads builds the workloads of objs, as the checks (and napctl status) see them,
// and attaches the Services, PDBs and HPAs that select or scale them, in the same
// namespace. Each object is decoded once and the
// matching runs per namespace, so that large inputs stay linear in practice. Services
// that only serve metrics are not attached: no client's request goes through them.
func Workloads(objs []*manifest.Object) []*Workload { return Read(objs).Workloads }

// Unchecked is a workload that Read could not read as its kind (a field of the wrong
// type, a template value left unrendered): no check ran on it. Err is a
// *manifest.FieldError where the decoder named the field.
type Unchecked struct {
	Obj  *manifest.Object
	Line int // the bad value's line, else the object's
	Err  error
}

func (u Unchecked) String() string {
	return fmt.Sprintf("%s:%d: %s: not checked: %v", u.Obj.File, u.Line, u.Obj.Ref(), u.Err)
}

// Duplicate is an object that two inputs hold (the same group, kind, namespace and
// name): it is one object in the cluster, so Read counts it once, as Kept, the one read
// last (what kubectl apply -f leaves of them); Dropped is the other.
type Duplicate struct{ Kept, Dropped *manifest.Object }

func (d Duplicate) String() string {
	at := fmt.Sprintf("%s:%d: %s: ", d.Dropped.File, d.Dropped.Line, d.Dropped.Ref())
	if d.Kept.File == d.Dropped.File && d.Kept.Line == d.Dropped.Line {
		return at + "read twice (the same input given twice): counted once"
	}
	return at + fmt.Sprintf("also in %s:%d, which is checked in its place (applied after it, it is what the cluster keeps)", d.Kept.File, d.Kept.Line)
}

// Input is what Read makes of the objects.
type Input struct {
	Workloads  []*Workload
	Unchecked  []Unchecked // in input order
	Duplicates []Duplicate // in input order of the dropped copies
}

// classTargets are the target types the input's IngressClasses take from its
// IngressClassParams (kube.ClassTargetsOf), which decide its Ingresses' before their
// annotations.
func classTargets(objs []*manifest.Object) kube.ClassTargets {
	var classes []networkingv1.IngressClass
	var params []map[string]any
	for _, o := range objs {
		switch {
		case o.Kind == "IngressClass" && o.Group() == networkingv1.GroupName:
			var c networkingv1.IngressClass
			if o.Decode(&c) == nil {
				classes = append(classes, c)
			}
		case o.Kind == kube.IngressClassParamsKind && o.Group() == kube.IngressClassParamsGroup:
			var p map[string]any
			if o.Decode(&p) == nil {
				params = append(params, p)
			}
		}
	}
	if len(classes) == 0 {
		return nil
	}
	return kube.ClassTargetsOf(classes, params)
}

// Read is Workloads, with the workloads it could not read (Unchecked) and the objects
// that more than one input held (Duplicates).
func Read(objs []*manifest.Object) Input {
	objs, dups := dedupe(objs)
	var unchecked []Unchecked
	type hpaKey struct{ ns, kind, name string }
	var ws []*Workload
	var svcs []*manifest.Object
	services := scope.NewIndex[*manifest.Object]()
	pdbs := scope.NewIndex[PDB]()
	hpas := map[hpaKey][]autoscalingv2.HorizontalPodAutoscaler{}
	configMaps := map[string]map[string]map[string]bool{} // namespace, name, key
	fronts := map[string]kube.Frontends{}                 // namespace: its Services' front doors
	classes := classTargets(objs)
	for _, o := range objs {
		switch {
		case o.IsWorkload():
			w, err := workload(o)
			if err != nil {
				u := Unchecked{Obj: o, Line: o.Line, Err: err}
				if fe := (*manifest.FieldError)(nil); errors.As(err, &fe) && fe.Line > 0 {
					u.Line = fe.Line
				}
				unchecked = append(unchecked, u)
			} else if w != nil {
				ws = append(ws, w)
			}
		case o.Kind == "Service":
			svcs = append(svcs, o)
		case o.Kind == "ConfigMap":
			// Its keys alone, from the node: lint reads nothing else of a ConfigMap, and
			// one may hold a million.
			keys := map[string]bool{}
			for _, field := range []string{"data", "binaryData"} {
				for _, k := range o.Keys(field) {
					keys[k] = true
				}
			}
			ns := appliedNamespace(o)
			if configMaps[ns] == nil {
				configMaps[ns] = map[string]map[string]bool{}
			}
			configMaps[ns][o.Name] = keys
		case o.Kind == "PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			if o.Decode(&p) != nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			if err == nil && !sel.Empty() {
				pdbs.Add(appliedNamespace(o), sel, PDB{Obj: o, Spec: p.Spec})
			}
		case o.Kind == "Ingress":
			var ing networkingv1.Ingress
			if o.Decode(&ing) != nil {
				continue
			}
			ns := appliedNamespace(o)
			if fronts[ns] == nil {
				fronts[ns] = kube.Frontends{}
			}
			fronts[ns].AddIngress(&ing, classes)
		case isDoor(o):
			d, _ := kube.DoorOf(o.Group(), o.Kind)
			var obj map[string]any
			if o.Decode(&obj) != nil {
				continue
			}
			ns := appliedNamespace(o)
			if fronts[ns] == nil {
				fronts[ns] = kube.Frontends{}
			}
			if meta, ok := obj["metadata"].(map[string]any); ok {
				meta["namespace"] = ns // a door's references default to its own
			}
			fronts[ns].AddDoor(d, obj)
		case o.Kind == "HorizontalPodAutoscaler":
			var h autoscalingv2.HorizontalPodAutoscaler
			if o.Decode(&h) == nil {
				k := hpaKey{appliedNamespace(o), h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name}
				hpas[k] = append(hpas[k], h)
			}
		case o.Group() == "keda.sh" && o.Kind == "ScaledObject":
			if h, ok := kedaHPA(o); ok {
				k := hpaKey{appliedNamespace(o), h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name}
				hpas[k] = append(hpas[k], h)
			}
		}
	}
	for _, o := range svcs {
		var svc corev1.Service
		if o.Decode(&svc) == nil && !metricsOnly(&svc) {
			services.AddService(appliedNamespace(o), svc.Spec.Selector, o)
		}
	}
	// A Service's backends as a whole: the pods of every workload it selects.
	backends := map[*manifest.Object]int32{}
	for _, w := range ws {
		ns := appliedNamespace(w.Obj)
		w.Services = services.Matches(ns, w.Labels)
		w.PDBs = pdbs.Matches(ns, w.Labels)
		w.HPAs = append(w.HPAs, hpas[hpaKey{ns, w.Obj.Kind, w.Obj.Name}]...)
		w.ConfigMapKeys = configMaps[ns]
		for _, svc := range w.Services {
			if f, ok := fronts[ns][svc.Name]; ok {
				if w.Fronts == nil {
					w.Fronts = kube.Frontends{}
				}
				w.Fronts[svc.Name] = f
			}
		}
		n := w.MinReplicas()
		if w.PerNode {
			n = 2 // a DaemonSet: a pod on every node, never one for the whole Service
		}
		for _, s := range w.Services {
			backends[s] += n
		}
	}
	for _, w := range ws {
		w.ServiceBackends = make([]int32, len(w.Services))
		for i, s := range w.Services {
			w.ServiceBackends[i] = backends[s]
		}
	}
	return Input{Workloads: ws, Unchecked: unchecked, Duplicates: dups}
}

// metricsOnly tells whether every port of svc is named for metrics (metrics,
// prometheus, http-metrics, metrics-tls, ...): no client request goes through such a
// Service. A port that a ServiceMonitor or PodMonitor scrapes is not thereby
// metrics-only: Grafana's web port and an aggregated API's port are scraped and serve
// clients too.
func metricsOnly(svc *corev1.Service) bool {
	if len(svc.Spec.Ports) == 0 {
		return false
	}
	for _, p := range svc.Spec.Ports {
		name := strings.ToLower(p.Name)
		if name != "metrics" && name != "prometheus" && !strings.HasSuffix(name, "-metrics") && !strings.HasPrefix(name, "metrics-") {
			return false
		}
	}
	return true
}

// dedupe is objs with each object once (by group, kind, applied namespace and name; the
// copy read last), and the copies left out. Objects without a name are all kept.
func dedupe(objs []*manifest.Object) ([]*manifest.Object, []Duplicate) {
	type key struct{ group, kind, ns, name string }
	last := map[key]int{}
	for i, o := range objs {
		if o.Name != "" {
			last[key{o.Group(), o.Kind, appliedNamespace(o), o.Name}] = i
		}
	}
	if len(last) == len(objs) {
		return objs, nil
	}
	var out []*manifest.Object
	var dups []Duplicate
	for i, o := range objs {
		if o.Name == "" {
			out = append(out, o)
			continue
		}
		if j := last[key{o.Group(), o.Kind, appliedNamespace(o), o.Name}]; j != i {
			dups = append(dups, Duplicate{Kept: objs[j], Dropped: o})
			continue
		}
		out = append(out, o)
	}
	return out, dups
}

// kedaHPA is the HorizontalPodAutoscaler that KEDA makes of ScaledObject o, as far as
// lint reads it: its target (kind Deployment unless it names one) and its minReplicas,
// minReplicaCount or, where that is 0 (scaled to zero while idle), 1 while it serves.
// Its Kind says ScaledObject, for the findings to name.
func kedaHPA(o *manifest.Object) (autoscalingv2.HorizontalPodAutoscaler, bool) {
	var so struct {
		Spec struct {
			ScaleTargetRef struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
				Name       string `json:"name"`
			} `json:"scaleTargetRef"`
			MinReplicaCount *int32 `json:"minReplicaCount"`
		} `json:"spec"`
	}
	if o.Decode(&so) != nil || so.Spec.ScaleTargetRef.Name == "" {
		return autoscalingv2.HorizontalPodAutoscaler{}, false
	}
	var h autoscalingv2.HorizontalPodAutoscaler
	h.Kind, h.Name, h.Namespace = o.Kind, o.Name, o.Namespace
	ref := so.Spec.ScaleTargetRef
	h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: ref.APIVersion, Kind: cmp.Or(ref.Kind, "Deployment"), Name: ref.Name}
	least := int32(1)
	if m := so.Spec.MinReplicaCount; m != nil && *m > 1 {
		least = *m
	}
	h.Spec.MinReplicas = &least
	return h, true
}

// workload is o as lint reads it: nil without a pod template, an error when its spec
// does not read as its kind's.
func workload(o *manifest.Object) (*Workload, error) {
	w := &Workload{Obj: o, PodSpecNode: o.PodSpecNode(), Labels: o.PodLabels(), Replicas: 1}
	if w.PodSpecNode == nil {
		return nil, nil
	}
	if o.Kind == "Pod" {
		if err := o.Decode(&w.PodSpec, "spec"); err != nil {
			return nil, err
		}
		return w, nil
	}
	// The spec once, template included: decoding dominates linting a fleet.
	var spec struct {
		Replicas *int32                     `json:"replicas"`
		Strategy *appsv1.DeploymentStrategy `json:"strategy"`
		Template struct {
			Spec corev1.PodSpec `json:"spec"`
		} `json:"template"`
	}
	if err := o.Decode(&spec, "spec"); err != nil {
		return nil, err
	}
	w.PodSpec = spec.Template.Spec
	if spec.Replicas != nil {
		w.Replicas = *spec.Replicas
	}
	switch o.Kind {
	case "DaemonSet":
		w.PerNode = true
	case "Deployment":
		w.Strategy = spec.Strategy
	case "DeploymentConfig": // its Rolling strategy has other fields; Recreate is Recreate
		if spec.Strategy != nil && spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
			w.Strategy = &appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		}
	}
	return w, nil
}

// appliedNamespace is the namespace o lands in when the input is applied as kubectl
// applies it by default: its own, or, when it names none, "default" (kubectl's
// namespace with no -n and a context that sets none). So a Deployment without a
// namespace is paired with a Service in namespace: default, as they meet in the
// cluster. Applied with -n X, objects without a namespace meet each other in X, and
// kubectl refuses one that names another namespace: pairing them among themselves is
// right there too. Objects read from a cluster always name theirs.
func appliedNamespace(o *manifest.Object) string {
	if o.Namespace == "" {
		return metav1.NamespaceDefault
	}
	return o.Namespace
}

// isDoor tells whether o is a front door nap reads (kube.Doors).
func isDoor(o *manifest.Object) bool {
	_, ok := kube.DoorOf(o.Group(), o.Kind)
	return ok
}
