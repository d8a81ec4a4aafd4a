package inject

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/wait"
)

// Plan is what Inject will do, resolved from Options once for a run.
type Plan struct {
	Mode Mode // ModeNative or ModeBinary
	// Wait is the wait every hook the plan adds holds (its ALLOW each template's).
	Wait       wait.Wait
	GraceExtra time.Duration
	Arch       string
	Containers []string
	ConfigMap  string
	Delivery   Delivery // DeliveryConfigMap or DeliveryImage
	Image      string
	// DeliveryWhy says why DeliveryAuto chose the ConfigMap ("" otherwise).
	DeliveryWhy string
	// Live: see Options.Live.
	Live bool

	// What the mode of each pod template is chosen from: native where every kubelet
	// that may run it has the sleep action (auto), or checked there (native).
	kube  *kube.Version
	nodes []kube.Node
	auto  bool
	// named are the containers of Containers that some template had (shared by the
	// plan's copies, for Unmatched).
	named map[string]bool
	// fromConfigMap are the namespaces of the templates given a hook that runs nap from
	// the ConfigMap ("" for a template with none), for ConfigMapNamespaces.
	fromConfigMap map[string]bool
	// objects counts the objects Inject and Parts read with the plan, for Objects.
	objects *int
	// archGiven: Options.Arch was set; assumedArch counts the templates that mount nap's
	// binary for an architecture nothing named (no selector, nodes unknown, no Arch), for
	// AssumedArch.
	archGiven   bool
	assumedArch *int
	// services are the Services of the whole input (AddServices), by namespace and
	// selector, shared by the plan's copies.
	services *services
}

// services are the Services AddServices gave a plan, filed by selector so that deciding
// a template costs its labels, not the input's Services.
type services struct {
	index *scope.Index[string] // their names
	n     int                  // how many were added
}

// AddServices gives the plan Services of the whole input (ServicesIn): a pod template
// then gets the delay only where scope.Decide, under the default policy, gives its pods
// one (a Service of its namespace selects them, or its labels opt it in), as the webhook
// would; the others are left alone with a note. With none added: every pod template, as
// also when Containers names the containers. An object without a namespace is in
// "default", as kubectl applies it with no -n.
func (p *Plan) AddServices(svcs []corev1.Service) {
	if p.services == nil {
		p.services = &services{index: scope.NewIndex[string]()}
	}
	for i := range svcs {
		p.services.index.AddService(cmp.Or(svcs[i].Namespace, metav1.NamespaceDefault), svcs[i].Spec.Selector, svcs[i].Name)
		p.services.n++
	}
}

// hasServices: AddServices gave the plan at least one Service.
func (p Plan) hasServices() bool { return p.services != nil && p.services.n > 0 }

// Objects is how many objects Inject and Parts have read with the plan: none means
// their input held nothing but comments and blank lines.
func (p Plan) Objects() int {
	if p.objects == nil {
		return 0
	}
	return *p.objects
}

// ConfigMapNamespaces are the namespaces where templates injected with the plan run nap
// from the nap ConfigMap, which must be there ("" for a template that names none: the
// namespace it is applied to), sorted.
func (p Plan) ConfigMapNamespaces() []string {
	return slices.Sorted(maps.Keys(p.fromConfigMap))
}

// AssumedArch is how many pod templates the plan gave nap's binary for Plan.Arch
// although nothing named an architecture: no kubernetes.io/arch selector, no known nodes,
// no Options.Arch. On a node of another architecture their hook cannot run, and the pod
// stops without a delay.
func (p Plan) AssumedArch() int { return *p.assumedArch }

// Unmatched are the names of Options.Containers that no pod template injected with the
// plan had: a typo, most likely.
func (p Plan) Unmatched() []string {
	var out []string
	for _, c := range p.Containers {
		if !p.named[c] {
			out = append(out, c)
		}
	}
	return out
}

// DefaultGraceExtra is the time beyond the preStop delay that Inject leaves the
// application to drain: Kubernetes' own default grace period.
const DefaultGraceExtra = kube.DefaultGracePeriod

// NewPlan checks opts and resolves the mode.
func NewPlan(opts Options) (Plan, error) {
	p := Plan{Wait: opts.Wait, GraceExtra: DefaultGraceExtra, Arch: opts.Arch, Containers: opts.Containers, ConfigMap: opts.ConfigMap, Live: opts.Live,
		kube: opts.Kube, nodes: opts.Nodes, named: map[string]bool{}, fromConfigMap: map[string]bool{}, objects: new(int),
		archGiven: opts.Arch != "", assumedArch: new(int)}
	if p.Wait == (wait.Wait{}) {
		p.Wait = wait.Default()
	}
	if err := p.Wait.Check(); err != nil {
		return Plan{}, err
	}
	if opts.GraceExtra != nil {
		p.GraceExtra = *opts.GraceExtra
	}
	if p.GraceExtra < 0 {
		return Plan{}, fmt.Errorf("--grace-extra %v: must not be negative", p.GraceExtra)
	}
	if p.Arch == "" {
		p.Arch = "amd64"
	}
	if !slices.Contains(nap.Arches, p.Arch) {
		return Plan{}, fmt.Errorf("--arch %q: want one of %s", p.Arch, strings.Join(nap.Arches, ", "))
	}
	if p.ConfigMap == "" {
		p.ConfigMap = kube.ConfigMapName
	}
	if err := p.resolveDelivery(opts); err != nil {
		return Plan{}, err
	}
	delay := p.Wait.Delay
	whole := delay%time.Second == 0
	nativeOK := func() error {
		switch {
		case !whole:
			return fmt.Errorf("the native sleep action takes whole seconds, not %v", delay)
		case opts.Kube == nil:
			return nil // the user asked for native and did not say where: trust them
		case opts.Kube.Less(kube.NativeSleepSince):
			return fmt.Errorf("the native sleep action needs Kubernetes %v, not %v", kube.NativeSleepSince, *opts.Kube)
		case delay == 0 && opts.Kube.Less(kube.NativeSleepZeroSince):
			return fmt.Errorf("a native sleep of 0 seconds needs Kubernetes %v, not %v", kube.NativeSleepZeroSince, *opts.Kube)
		}
		return nil
	}
	switch {
	case p.Wait.IsAdaptive() && opts.Mode == ModeNative:
		return Plan{}, errors.New("--mode native: the native sleep action cannot wait for the pod's traffic; --wait adaptive needs nap's binary (--mode binary or auto)")
	case p.Wait.IsAdaptive() && (opts.Mode == ModeAuto || opts.Mode == ""):
		p.Mode = ModeBinary
		return p, nil
	}
	switch opts.Mode {
	case ModeNative:
		if err := nativeOK(); err != nil {
			return Plan{}, fmt.Errorf("--mode native: %w", err)
		}
		p.Mode = ModeNative
	case ModeBinary:
		p.Mode = ModeBinary
	case ModeAuto, "":
		p.Mode = ModeBinary
		p.auto = opts.Kube != nil && nativeOK() == nil // then per template, by its kubelets
	default:
		return Plan{}, fmt.Errorf("--mode %q: want auto, native or binary", opts.Mode)
	}
	return p, nil
}

// resolveDelivery checks --delivery and --image, and resolves auto for the cluster: the
// image volume only when it is known that every node mounts them (the nodes, or the
// oldest kubelet the skew policy allows), the ConfigMap otherwise, saying why.
func (p *Plan) resolveDelivery(opts Options) error {
	p.Delivery, p.Image = opts.Delivery, strings.TrimSpace(opts.Image)
	if p.Delivery == "" {
		p.Delivery = DeliveryConfigMap
	}
	switch p.Delivery {
	case DeliveryConfigMap:
		if p.Image != "" {
			return fmt.Errorf("--image %q goes with --delivery image or auto", p.Image)
		}
		return nil
	case DeliveryImage, DeliveryAuto:
	default:
		return fmt.Errorf("--delivery %q: want configmap, image or auto", opts.Delivery)
	}
	if p.Image == "" || strings.ContainsAny(p.Image, " \t\n\"'") {
		return fmt.Errorf("--delivery %s needs --image, nap's image reference (napctl image writes it), not %q", p.Delivery, p.Image)
	}
	if p.Delivery == DeliveryImage {
		if opts.Kube != nil && opts.Kube.Less(kube.ImageVolumeSince) {
			return fmt.Errorf("--delivery image: image volumes are on by default from Kubernetes %v, not %v (--delivery configmap)", kube.ImageVolumeSince, *opts.Kube)
		}
		return nil
	}
	p.Delivery = DeliveryConfigMap
	switch {
	case opts.Kube == nil:
		p.DeliveryWhy = "the cluster is unknown (--live or --kube-version)"
	case opts.Kube.Less(kube.ImageVolumeSince):
		p.DeliveryWhy = fmt.Sprintf("Kubernetes %v has no image volumes by default (%v+)", *opts.Kube, kube.ImageVolumeSince)
	case opts.Nodes == nil:
		if oldest, _ := kube.OldestKubelet(*opts.Kube, nil, nil); oldest.Less(kube.ImageVolumeSince) {
			p.DeliveryWhy = fmt.Sprintf("the nodes are unknown, and kubelets as old as %v may run pods (--live reads them)", oldest)
		} else {
			p.DeliveryWhy = "the nodes are unknown, and so are their container runtimes (--live reads them)"
		}
	default:
		for _, n := range opts.Nodes {
			if ok, why := kube.ImageVolumes(n); !ok {
				p.DeliveryWhy = why
				break
			}
		}
		if p.DeliveryWhy == "" {
			p.Delivery = DeliveryImage
		}
	}
	return nil
}

// forTemplate resolves the plan for one pod template: in auto mode, native only when
// every kubelet that may run it has the sleep action; in native mode, an error when a
// known node's kubelet has not.
func (p Plan) forTemplate(spec *yaml.Node) (Plan, error) {
	if p.kube == nil || !p.auto && (p.Mode != ModeNative || p.nodes == nil) {
		return p, nil
	}
	selector := map[string]string{}
	if sel := lookup(spec, "nodeSelector"); sel != nil && sel.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(sel.Content); i += 2 {
			selector[sel.Content[i].Value] = sel.Content[i+1].Value
		}
	}
	oldest, node := kube.OldestKubelet(*p.kube, p.nodes, selector)
	ok := !oldest.Less(kube.NativeSleepSince)
	switch {
	case p.auto && ok:
		p.Mode = ModeNative
	case p.Mode == ModeNative && !ok:
		return Plan{}, fmt.Errorf("--mode native: node %s runs kubelet %v, which has no sleep action (%v+)", node, oldest, kube.NativeSleepSince)
	}
	return p, nil
}

// IsWindows tells whether a pod spec runs on Windows nodes (spec.os.name, or a
// nodeSelector on kubernetes.io/os), where nap's binary, a Linux executable, cannot run.
func IsWindows(spec *yaml.Node) bool {
	if n := lookup(lookup(spec, "os"), "name"); n != nil && n.Value == kube.Windows {
		return true
	}
	n := lookup(lookup(spec, "nodeSelector"), kube.OSLabel)
	return n != nil && n.Value == kube.Windows
}

// forWindows is the plan for a Windows pod: the native sleep action, which the kubelet
// runs on any node; or why there is none (the adaptive wait and fractions of a second
// need nap's binary; a cluster known to lack the action).
func (p Plan) forWindows() (Plan, string) {
	switch {
	case p.Mode == ModeNative:
		return p, ""
	case p.Wait.IsAdaptive():
		return p, "the adaptive wait needs nap's binary, a Linux executable"
	case p.Wait.Delay%time.Second != 0:
		return p, fmt.Sprintf("nap's binary is a Linux executable, and the native sleep action takes whole seconds, not %v", p.Wait.Delay)
	case p.kube != nil && p.kube.Less(kube.NativeSleepSince):
		return p, fmt.Sprintf("nap's binary is a Linux executable, and the native sleep action needs Kubernetes %v, not %v", kube.NativeSleepSince, *p.kube)
	}
	p.Mode = ModeNative
	return p, ""
}

// decide is scope.Decide for the pods of workload o under the default policy, over the
// input's Services (AddServices); an object without a namespace is in "default", as
// kubectl applies it with no -n.
func (p Plan) decide(o *manifest.Object, spec *yaml.Node) scope.Decision {
	ns := cmp.Or(o.Namespace, metav1.NamespaceDefault)
	labels := o.PodLabels()
	in := scope.Input{Installed: scope.Default, Pod: scope.Pod{Labels: labels}}
	if rp := lookup(spec, "restartPolicy"); rp != nil {
		in.Pod.RestartPolicy = corev1.RestartPolicy(rp.Value)
	}
	in.Selecting = func() (string, bool, error) {
		if names := p.services.index.Matches(ns, labels); len(names) > 0 {
			return names[0], true, nil // the first in the input, as SelectingService's
		}
		return "", false, nil
	}
	d, _ := scope.Decide(in)
	return d
}

// ServicesIn are the Services of a manifest (for Plan.AddServices), read from only the
// documents that can hold one.
func ServicesIn(file string, src []byte) ([]corev1.Service, error) {
	var out []corev1.Service
	for _, s := range manifest.Documents(src) {
		doc := src[s.Start:s.End]
		if !bytes.Contains(doc, []byte("Service")) {
			continue
		}
		objs, err := manifest.Read(file, doc)
		if err != nil { // named as reading it whole names it (Parts does the same)
			if _, err := manifest.Read(file, src); err != nil {
				return nil, err
			}
			return nil, &manifest.ReadError{File: file, Line: s.Line, Err: err}
		}
		for _, o := range objs {
			if o.Kind != "Service" || o.Group() != "" {
				continue
			}
			var svc corev1.Service
			if err := o.Decode(&svc); err != nil {
				return nil, &manifest.ReadError{File: file, Line: o.Line + s.Line - 1, Err: fmt.Errorf("%s: %w", o.Ref(), err)}
			}
			out = append(out, svc)
		}
	}
	return out, nil
}

func (p Plan) note(o *manifest.Object, line int, format string, args ...any) Note {
	if line == 0 {
		line = o.Line
	}
	return Note{File: o.File, Line: line, Msg: o.Ref() + ": " + fmt.Sprintf(format, args...)}
}

// ownPreStop tells whether a preStop hook is one that nap adds (in any mode, with any
// delay), whether it runs the binary, and how long it sleeps.
func (p Plan) ownPreStop(pre *yaml.Node) (own, binary bool, d time.Duration) {
	if s := lookup(pre, "sleep"); s != nil && len(pre.Content) == 2 {
		var secs int64
		if v := lookup(s, "seconds"); v != nil {
			secs, _ = strconv.ParseInt(v.Value, 10, 64)
		}
		return true, false, time.Duration(secs) * time.Second
	}
	if cmd := commandOf(pre); len(cmd) >= 1 && cmd[0] == kube.MountPath+"/"+kube.BinaryName {
		w, ok := wait.FromArgs(cmd[1:])
		if !ok {
			w.Delay = nap.Default // what nap holds for arguments it cannot read
		}
		return true, true, w.Delay // an adaptive wait's longest
	}
	return false, false, 0
}

// ownVolume tells whether v is nap's volume: the nap ConfigMap, alone or first of a
// projected volume's sources (with the live wait, liveVolume), or nap's image.
func (p Plan) ownVolume(v *yaml.Node) bool {
	if name := lookup(lookup(v, "configMap"), "name"); name != nil && name.Value == p.ConfigMap {
		return true
	}
	if srcs := lookup(lookup(v, "projected"), "sources"); srcs != nil && srcs.Kind == yaml.SequenceNode && len(srcs.Content) > 0 {
		if name := lookup(lookup(srcs.Content[0], "configMap"), "name"); name != nil && name.Value == p.ConfigMap {
			return true
		}
	}
	ref := lookup(lookup(v, "image"), "reference")
	return ref != nil && p.Image != "" && ref.Value == p.Image
}

// archOf reads the architecture a pod template can run on: its kubernetes.io/arch
// nodeSelector, or the values of its required node affinity; else the one architecture
// of the known nodes its nodeSelector matches; the plan's otherwise. note warns where
// pods may run on another architecture than the one mounted; assumed says that nothing
// named one (nodes not read from a cluster, and Options.Arch unset).
func (p Plan) archOf(spec *yaml.Node) (arch, note string, assumed bool) {
	if a := lookup(lookup(spec, "nodeSelector"), kube.ArchLabel); a != nil && a.Value != "" {
		return a.Value, "", false
	}
	terms := lookup(lookup(lookup(lookup(spec, "affinity"), "nodeAffinity"),
		"requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms")
	var archs []string
	if terms != nil {
		for _, t := range terms.Content {
			exprs := lookup(t, "matchExpressions")
			if exprs == nil {
				continue
			}
			for _, x := range exprs.Content {
				if k := lookup(x, "key"); k == nil || k.Value != kube.ArchLabel {
					continue
				}
				if op := lookup(x, "operator"); op == nil || op.Value != "In" {
					continue
				}
				if vals := lookup(x, "values"); vals != nil {
					for _, v := range vals.Content {
						if !slices.Contains(archs, v.Value) {
							archs = append(archs, v.Value)
						}
					}
				}
			}
		}
	}
	where := "pods can run on"
	if len(archs) == 0 && kube.NodesRead(p.nodes) {
		// No selector of its own: the architectures of the nodes that may run it.
		selector := map[string]string{}
		if sel := lookup(spec, "nodeSelector"); sel != nil && sel.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(sel.Content); i += 2 {
				selector[sel.Content[i].Value] = sel.Content[i+1].Value
			}
		}
		for _, a := range kube.NodeArches(p.nodes, selector) {
			if !slices.Contains(archs, a) {
				archs = append(archs, a)
			}
		}
		where = "the pods select no architecture and the nodes that may run them are"
	}
	switch len(archs) {
	case 0:
		return p.Arch, "", !p.archGiven && !kube.NodesRead(p.nodes)
	case 1:
		return archs[0], "", false
	}
	if p.Mode == ModeNative {
		return p.Arch, "", false
	}
	slices.Sort(archs)
	return p.Arch, fmt.Sprintf("warning: %s %s; nap is mounted for %s only (--arch), use a nodeSelector or --mode native", where, strings.Join(archs, ", "), p.Arch), false
}
