package inject

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/wait"
)

// Mode is how Inject delays a container's termination.
type Mode string

// The modes.
const (
	ModeAuto   Mode = "auto"   // native when the cluster and the delay allow it, else binary
	ModeNative Mode = "native" // lifecycle.preStop.sleep (Kubernetes 1.30+, whole seconds)
	ModeBinary Mode = "binary" // exec of nap, mounted from the nap ConfigMap
)

// Options configure Inject.
type Options struct {
	// Wait is the preStop wait (package wait); the zero Wait is wait.Default(). The
	// adaptive wait needs nap's binary; its ALLOW is each template's probes'
	// (hook.Background), whatever Wait.Allow says.
	Wait wait.Wait
	Mode Mode          // default ModeAuto
	Kube *kube.Version // the target cluster's version; nil: unknown (auto picks binary)
	// Nodes are the cluster's nodes and their kubelets; nil: unknown, and any kubelet
	// the skew policy allows may run a pod (see kube.OldestKubelet).
	Nodes      []kube.Node
	Containers []string       // the containers to delay; default every regular container
	Arch       string         // the architecture when the template does not say; default amd64
	GraceExtra *time.Duration // grace period beyond the delay; nil: DefaultGraceExtra
	ConfigMap  string         // the nap ConfigMap's name; default kube.ConfigMapName
	// Delivery is how the nap binary reaches the container in ModeBinary: from the
	// ConfigMap (default), from Image as an image volume, or auto: the image volume
	// where the cluster mounts them (Kube and Nodes say so), else the ConfigMap.
	Delivery Delivery
	Image    string // nap's image (napctl image), for DeliveryImage and DeliveryAuto
}

// Delivery is how the nap binary reaches the container.
type Delivery string

// The deliveries.
const (
	DeliveryConfigMap Delivery = "configmap" // a ConfigMap volume, the pod's architecture's key
	DeliveryImage     Delivery = "image"     // an image volume: the kubelet pulls its node's architecture
	DeliveryAuto      Delivery = "auto"      // image where every kubelet and runtime can, else configmap
)

// Deliveries are the deliveries, in the order help texts give them.
var Deliveries = []Delivery{DeliveryConfigMap, DeliveryImage, DeliveryAuto}

// DeliveryNames are Deliveries' names.
func DeliveryNames() []string { return names(Deliveries) }

func names[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// Note is something Inject tells the user about the input without failing: a Job it
// skipped, a preStop it left alone, an architecture it had to guess.
type Note struct {
	File string
	Line int
	Msg  string
}

func (n Note) String() string { return fmt.Sprintf("%s:%d: %s", n.File, n.Line, n.Msg) }

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
}

// ConfigMapNamespaces are the namespaces where templates injected with the plan run nap
// from the nap ConfigMap, which must be there ("" for a template that names none: the
// namespace it is applied to), sorted.
func (p Plan) ConfigMapNamespaces() []string {
	return slices.Sorted(maps.Keys(p.fromConfigMap))
}

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
	p := Plan{Wait: opts.Wait, GraceExtra: DefaultGraceExtra, Arch: opts.Arch, Containers: opts.Containers, ConfigMap: opts.ConfigMap,
		kube: opts.Kube, nodes: opts.Nodes, named: map[string]bool{}, fromConfigMap: map[string]bool{}}
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

// Inject adds the plan's preStop delay to every pod template in one manifest and
// returns the manifest with nothing else changed. Objects it cannot or should not
// change are left as they are, with a note.
func Inject(file string, src []byte, p Plan) ([]byte, []Note, error) {
	parts, notes, err := Parts(file, src, p)
	if err != nil || len(parts) == 1 {
		return parts.first(), notes, err
	}
	return bytes.Join(parts, nil), notes, nil
}

// Output is a manifest as Parts returns it: pieces to write in order.
type Output [][]byte

// Len is how many bytes the pieces hold.
func (o Output) Len() int {
	n := 0
	for _, b := range o {
		n += len(b)
	}
	return n
}

func (o Output) first() []byte {
	if len(o) == 0 {
		return nil
	}
	return o[0]
}

// Parts is Inject with the output in pieces, each document's own: an unchanged
// document is the input's bytes, not a copy. It reads, edits and checks one document
// at a time (manifest.Documents), so that beyond the input it holds only the changed
// documents' text and one document's tree. Where a document cannot be done on its own,
// the whole manifest is done at once, which names the error as reading it whole does.
func Parts(file string, src []byte, p Plan) (Output, []Note, error) {
	spans := manifest.Documents(src)
	if len(spans) == 1 {
		b, notes, err := injectWhole(file, src, p)
		if err != nil {
			return nil, nil, err
		}
		return Output{b}, notes, nil
	}
	var notes []Note
	out := make(Output, 0, len(spans))
	for _, s := range spans {
		b, n, err := injectWhole(file, src[s.Start:s.End], p)
		if err != nil {
			b, notes, err := injectWhole(file, src, p)
			if err != nil {
				return nil, nil, err
			}
			return Output{b}, notes, nil
		}
		for i := range n {
			n[i].Line += s.Line - 1
		}
		notes = append(notes, n...)
		out = append(out, b)
	}
	return out, notes, nil
}

// injectWhole is Inject on src read whole: one document, or all of them when one
// cannot be done alone.
func injectWhole(file string, src []byte, p Plan) ([]byte, []Note, error) {
	objs, err := manifest.Read(file, src)
	if err != nil {
		return nil, nil, err
	}
	e := newEditor(src)
	var notes []Note
	for _, o := range objs {
		n, err := p.injectObject(e, o)
		notes = append(notes, n...)
		if err != nil {
			line, at := o.Line, o
			var le *lineError
			if errors.As(err, &le) {
				// The line may be in another object (an alias to o's containers): name it.
				line, err, at = le.line, le.err, objectAt(objs, le.line)
			}
			return nil, nil, &manifest.ReadError{File: file, Line: line, Err: fmt.Errorf("%s: %w", at.Ref(), err)}
		}
	}
	if len(e.edits) == 0 {
		return src, notes, nil
	}
	out := e.apply()
	if err := verify(file, out, objs); err != nil {
		return nil, nil, err
	}
	return out, notes, nil
}

// objectAt is the object of objs (in the order of their lines) that line is in.
func objectAt(objs []*manifest.Object, line int) *manifest.Object {
	at := objs[0]
	for _, o := range objs {
		if o.Line <= line {
			at = o
		}
	}
	return at
}

// Op is one JSON Patch (RFC 6902) operation, as Patch returns them.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Patch injects p into one object that is already decoded, such as a pod an API server
// sends to the webhook: there is no text to keep, so it edits the tree alone (no
// splicing, no re-reading to verify) and returns the edits as JSON Patch operations on
// the object, with the same decisions and notes as Inject. No operations: nothing to add.
func Patch(o *manifest.Object, p Plan) ([]Op, []Note, error) {
	e := newTreeEditor(o.Node.YNode())
	notes, err := p.injectObject(e, o)
	if err != nil {
		var le *lineError
		if errors.As(err, &le) {
			err = le.err
		}
		return nil, nil, &manifest.ReadError{File: o.File, Line: o.Line, Err: fmt.Errorf("%s: %w", o.Ref(), err)}
	}
	return e.ops, notes, nil
}

// lineError is an error at a line of its own, not the object's.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return e.err.Error() }

// verify checks that the edited text reads as the edited trees: the splicing changed
// what it meant to, and nothing else.
func verify(file string, out []byte, want []*manifest.Object) error {
	got, err := manifest.Read(file, out)
	if err != nil {
		return fmt.Errorf("nap made invalid YAML of %s (please report this): %w", file, err)
	}
	if len(got) != len(want) {
		return fmt.Errorf("nap changed the number of objects in %s (please report this)", file)
	}
	for i := range got {
		if !sameTree(got[i].Node.YNode(), want[i].Node.YNode()) {
			return &manifest.ReadError{File: file, Line: want[i].Line, Err: fmt.Errorf("%s: cannot edit this layout in place (please report it)", want[i].Ref())}
		}
	}
	return nil
}

// sameTree tells whether two trees hold the same: the same kinds of node, tags and
// scalar values (0555 is 365), in the same order, aliases compared by what they stand
// for. Layout, style and comments are not compared (a scalar's style only through its
// tag), nor what an object nap does not edit would mean to Kubernetes.
func sameTree(a, b *yaml.Node) bool {
	return sameNodes(a, b, map[[2]*yaml.Node]bool{})
}

// sameNodes is sameTree, each pair of nodes that aliases reach compared once (done), so
// that many aliases to one anchor cost as the anchor does.
func sameNodes(a, b *yaml.Node, done map[[2]*yaml.Node]bool) bool {
	aliased := false
	for a.Kind == yaml.AliasNode && a.Alias != nil {
		a, aliased = a.Alias, true
	}
	for b.Kind == yaml.AliasNode && b.Alias != nil {
		b, aliased = b.Alias, true
	}
	if aliased {
		if done[[2]*yaml.Node{a, b}] {
			return true
		}
		done[[2]*yaml.Node{a, b}] = true
	}
	if a.Kind != b.Kind || a.ShortTag() != b.ShortTag() || len(a.Content) != len(b.Content) {
		return false
	}
	if a.Kind == yaml.ScalarNode && a.Value != b.Value && !sameScalar(a, b) {
		return false
	}
	for i := range a.Content {
		if !sameNodes(a.Content[i], b.Content[i], done) {
			return false
		}
	}
	return true
}

func (p Plan) note(o *manifest.Object, line int, format string, args ...any) Note {
	if line == 0 {
		line = o.Line
	}
	return Note{File: o.File, Line: line, Msg: o.Ref() + ": " + fmt.Sprintf(format, args...)}
}

// injectObject runs the plan on one object, in named steps: the template and its plan,
// the target containers, each container's mount and hook, the volume, the grace period.
func (p Plan) injectObject(e editor, o *manifest.Object) ([]Note, error) {
	switch {
	case o.RunsToCompletion():
		return []Note{p.note(o, 0, "skipped: a %s runs to completion, it is not replaced while serving", o.Kind)}, nil
	case o.Group() == "serving.knative.dev" && o.Kind == "Service":
		return []Note{p.note(o, 0, "skipped: a Knative Service's pods are drained by Knative itself (its queue-proxy), which also refuses lifecycle hooks")}, nil
	case !o.IsWorkload() && o.HasPodTemplate():
		return []Note{p.note(o, 0, "skipped: %s %s is not a kind nap knows; its pods are for its controller to shape", o.APIVersion, o.Kind)}, nil
	case !o.IsWorkload():
		return nil, nil
	}
	ps := o.PodSpecNode()
	if ps == nil || ps.YNode().Kind != yaml.MappingNode {
		return []Note{p.note(o, 0, "skipped: no pod template")}, nil
	}
	spec := ps.YNode()
	p, err := p.forTemplate(spec)
	if err != nil {
		return nil, err
	}
	var osNotes []Note
	if IsWindows(spec) {
		var skip string
		if p, skip = p.forWindows(); skip != "" {
			return []Note{p.note(o, 0, "skipped: a Windows pod: %s", skip)}, nil
		}
		osNotes = []Note{p.note(o, 0, "a Windows pod: the native sleep action, not nap's binary (a Linux executable)")}
	}
	t := &template{p: p, e: e, o: o, spec: spec, notes: osNotes}
	if err := t.guard(lookup(spec, "containers"), "containers"); err != nil {
		return nil, err
	}
	containers := lookup(spec, "containers")
	if containers == nil || containers.Kind != yaml.SequenceNode || len(containers.Content) == 0 {
		return []Note{p.note(o, 0, "skipped: no containers")}, nil
	}
	t.compact = !isFlow(containers) && containers.Column == keyColumn(spec, "containers")

	arch, archNote := p.archOf(spec)
	if archNote != "" && p.Delivery != DeliveryImage {
		t.notes = append(t.notes, p.note(o, 0, "%s", archNote))
	}
	// An image volume too: nap's image has no other architecture for the kubelet to pull.
	if p.Mode == ModeBinary && !slices.Contains(nap.Arches, arch) {
		return append(t.notes, p.note(o, 0, "skipped: no nap binary for architecture %s", arch)), nil
	}
	targets := t.targets(containers)
	// A volume called nap that is not ours: leave the whole template alone.
	if p.Mode == ModeBinary {
		if v := findByName(lookup(spec, "volumes"), kube.VolumeName); v != nil && !p.ownVolume(v) {
			return append(t.notes, p.note(o, v.Line, "skipped: it has a volume named %q that is not the nap ConfigMap", kube.VolumeName)), nil
		}
	}
	for _, c := range targets {
		if err := t.delay(c); err != nil {
			return t.notes, err
		}
	}
	if t.needVolume && p.Delivery == DeliveryConfigMap && p.fromConfigMap != nil {
		p.fromConfigMap[o.Namespace] = true
	}
	if t.needVolume && findByName(lookup(spec, "volumes"), kube.VolumeName) == nil {
		if err := t.volume(arch); err != nil {
			return t.notes, err
		}
	}
	if t.delayed {
		if err := t.grace(); err != nil {
			return t.notes, err
		}
	}
	return t.notes, nil
}

// template is one pod template under edit, and what the steps found so far.
type template struct {
	p       Plan
	e       editor
	o       *manifest.Object
	spec    *yaml.Node
	compact bool // block sequences written without indenting their "-" under the key
	notes   []Note

	delayed    bool          // a container has nap's hook, added or already there
	longest    time.Duration // the longest preStop delay of the template, once delayed
	needVolume bool          // a hook runs the binary
}

// container is a target container.
type container struct {
	node *yaml.Node
	name string
}

// guard refuses an edit of n unless it belongs to this template alone.
func (t *template) guard(n *yaml.Node, what string) error {
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return &lineError{line: n.Line, err: fmt.Errorf("%s is the alias *%s: nap cannot add a hook to one user of it and not the others; write it out", what, n.Value)}
	}
	if alias, ok := t.o.SharedBy(n); ok {
		return &lineError{line: alias, err: fmt.Errorf("the alias here shares %s (line %d) of %s: nap cannot add a hook to one user of it and not the others; write it out", what, n.Line, t.o.Ref())}
	}
	return nil
}

// targets are the containers to delay: every regular container, or those the plan
// names (sidecars, restartable init containers, only when named).
func (t *template) targets(containers *yaml.Node) []container {
	var out []container
	all := slices.Clone(containers.Content) // appended to: never the node's own array
	if len(t.p.Containers) > 0 {
		all = append(all, sidecars(t.spec)...) // delayed only when named
	}
	found := map[string]bool{}
	for i, c := range all {
		if c.Kind != yaml.MappingNode {
			continue
		}
		name := ""
		if n := lookup(c, "name"); n != nil {
			name = n.Value
		}
		if len(t.p.Containers) > 0 && !slices.Contains(t.p.Containers, name) {
			continue
		}
		if len(t.p.Containers) == 0 && i >= len(containers.Content) {
			continue
		}
		found[name] = true
		if t.p.named != nil {
			t.p.named[name] = true
		}
		out = append(out, container{c, name})
	}
	for _, want := range t.p.Containers {
		if !found[want] {
			t.notes = append(t.notes, t.p.note(t.o, 0, "no container %q", want))
		}
	}
	return out
}

// delay gives container c the plan's hook (and, for the binary, its mount), or counts
// the hook nap gave it before; another hook is left alone, with a note.
func (t *template) delay(c container) error {
	p, o := t.p, t.o
	lc := present(c.node, "lifecycle")
	if lc != nil && lc.Kind != yaml.MappingNode {
		t.notes = append(t.notes, p.note(o, lc.Line, "container %q: lifecycle is not a mapping; left alone", c.name))
		return nil
	}
	if pre := present(lc, "preStop"); pre != nil {
		if own, binary, d := p.ownPreStop(pre); own {
			t.delayed, t.longest, t.needVolume = true, max(t.longest, d), t.needVolume || binary
		} else {
			t.notes = append(t.notes, p.note(o, pre.Line, "container %q already has a preStop hook; left alone", c.name))
		}
		return nil
	}
	if p.Mode == ModeBinary {
		mounted, err := t.mount(c)
		if err != nil || !mounted {
			return err
		}
		t.needVolume = true
	}
	if err := cmp.Or(t.guard(c.node, fmt.Sprintf("container %q", c.name)), t.guard(lc, fmt.Sprintf("container %q's lifecycle", c.name))); err != nil {
		return err
	}
	var err error
	if lc == nil {
		err = t.e.put(c.node, "lifecycle", mapping("preStop", t.preStop()), t.compact)
	} else {
		err = t.e.put(lc, "preStop", t.preStop(), t.compact)
	}
	if err != nil {
		return err
	}
	t.delayed, t.longest = true, max(t.longest, p.Wait.Delay)
	return nil
}

// mount mounts nap's volume at kube.MountPath in container c, unless it is there;
// false, with a note, when the container cannot take it.
func (t *template) mount(c container) (bool, error) {
	p, o := t.p, t.o
	mounts := present(c.node, "volumeMounts")
	if mounts != nil && mounts.Kind != yaml.SequenceNode {
		t.notes = append(t.notes, p.note(o, mounts.Line, "container %q: volumeMounts is not a list; left alone", c.name))
		return false, nil
	}
	if m := findMount(mounts, kube.MountPath); m != nil {
		if n := lookup(m, "name"); n == nil || n.Value != kube.VolumeName {
			t.notes = append(t.notes, p.note(o, m.Line, "container %q mounts something else at %s; left alone", c.name, kube.MountPath))
			return false, nil
		}
		return true, nil
	}
	mount := mapping("name", str(kube.VolumeName), "mountPath", str(kube.MountPath), "readOnly", boolean(true))
	if err := cmp.Or(t.guard(c.node, fmt.Sprintf("container %q", c.name)), t.guard(mounts, fmt.Sprintf("container %q's volumeMounts", c.name))); err != nil {
		return false, err
	}
	if mounts == nil {
		return true, t.e.put(c.node, "volumeMounts", sequence(false, mount), t.compact)
	}
	return true, t.e.appendItem(mounts, mount, t.compact)
}

// volume adds nap's volume: the ConfigMap's key for arch, or nap's image.
func (t *template) volume(arch string) error {
	p := t.p
	vol := mapping("name", str(kube.VolumeName), "configMap", mapping(
		"name", str(p.ConfigMap),
		"defaultMode", octal(0o555),
		"items", sequence(false, mapping("key", str(kube.KeyForArch(arch)), "path", str(kube.BinaryName))),
	))
	if p.Delivery == DeliveryImage {
		// The kubelet pulls its node's architecture; the image holds /nap alone.
		vol = mapping("name", str(kube.VolumeName), "image", mapping("reference", str(p.Image), "pullPolicy", str("IfNotPresent")))
	}
	if err := cmp.Or(t.guard(t.spec, "the pod spec"), t.guard(lookup(t.spec, "volumes"), "volumes")); err != nil {
		return err
	}
	switch vols := lookup(t.spec, "volumes"); {
	case vols == nil || isNull(vols):
		return t.e.put(t.spec, "volumes", sequence(false, vol), t.compact)
	case vols.Kind != yaml.SequenceNode:
		return fmt.Errorf("volumes is not a list")
	default:
		return t.e.appendItem(vols, vol, t.compact)
	}
}

// grace raises terminationGracePeriodSeconds to cover the longest delay and the
// plan's drain time, where it is shorter.
func (t *template) grace() error {
	need := int64((t.longest + t.p.GraceExtra + time.Second - 1) / time.Second)
	g := lookup(t.spec, "terminationGracePeriodSeconds")
	if g == nil || isNull(g) {
		if need <= int64(kube.DefaultGracePeriod/time.Second) {
			return nil
		}
		if err := t.guard(t.spec, "the pod spec"); err != nil {
			return err
		}
		return t.e.put(t.spec, "terminationGracePeriodSeconds", num(need), t.compact)
	}
	cur, err := strconv.ParseInt(g.Value, 10, 64)
	switch {
	case g.Kind != yaml.ScalarNode || err != nil || g.ShortTag() != "!!int":
		t.notes = append(t.notes, t.p.note(t.o, g.Line, "terminationGracePeriodSeconds %q is not a number; left alone", g.Value))
		return nil
	case cur >= need:
		return nil
	}
	if err := t.guard(g, "terminationGracePeriodSeconds"); err != nil {
		return err
	}
	return t.e.setInt(g, need)
}

// preStop is the hook that the plan adds to this template: an adaptive wait's ALLOW is
// what the template's probes open (hook.Background).
func (t *template) preStop() *yaml.Node {
	w := t.p.Wait
	if t.p.Mode == ModeNative {
		return mapping("sleep", mapping("seconds", num(int64(w.Delay/time.Second))))
	}
	if w.IsAdaptive() {
		w.Allow = hook.Background(w.Quiet, t.probePeriods())
	}
	var args []*yaml.Node
	for _, a := range w.Command() {
		args = append(args, str(a))
	}
	return mapping("exec", mapping("command", sequence(true, args...)))
}

// sidecars are the pod spec's sidecars: its restartable init containers
// (hook.IsSidecar).
func sidecars(spec *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	if inits := lookup(spec, "initContainers"); inits != nil {
		for _, c := range inits.Content {
			if rp := lookup(c, "restartPolicy"); rp != nil && hook.IsSidecar(rp.Value) {
				out = append(out, c)
			}
		}
	}
	return out
}

// probePeriods are hook.ProbePeriods of the template, read from its YAML.
func (t *template) probePeriods() []time.Duration {
	var periods []time.Duration
	var cs []*yaml.Node
	if c := lookup(t.spec, "containers"); c != nil {
		cs = append(cs, c.Content...)
	}
	cs = append(cs, sidecars(t.spec)...)
	for _, c := range cs {
		for _, kind := range hook.BackgroundProbes {
			pr := lookup(c, kind)
			if pr == nil || !slices.ContainsFunc(hook.ConnectingHandlers, func(h string) bool { return lookup(pr, h) != nil }) {
				continue
			}
			period := hook.DefaultProbePeriod
			if v := lookup(pr, "periodSeconds"); v != nil {
				if n, err := strconv.ParseInt(v.Value, 10, 64); err == nil && n > 0 {
					period = time.Duration(n) * time.Second
				}
			}
			periods = append(periods, period)
		}
	}
	return periods
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
	cmd := lookup(lookup(pre, "exec"), "command")
	if cmd != nil && cmd.Kind == yaml.SequenceNode && len(cmd.Content) >= 1 &&
		cmd.Content[0].Value == kube.MountPath+"/"+kube.BinaryName {
		var args []string
		for _, a := range cmd.Content[1:] {
			args = append(args, a.Value)
		}
		w, ok := wait.FromArgs(args)
		if !ok {
			w.Delay = nap.Default // what nap holds for arguments it cannot read
		}
		return true, true, w.Delay // an adaptive wait's longest
	}
	return false, false, 0
}

func (p Plan) ownVolume(v *yaml.Node) bool {
	if name := lookup(lookup(v, "configMap"), "name"); name != nil && name.Value == p.ConfigMap {
		return true
	}
	ref := lookup(lookup(v, "image"), "reference")
	return ref != nil && p.Image != "" && ref.Value == p.Image
}

// archOf reads the architecture a pod template can run on: its kubernetes.io/arch
// nodeSelector, or the values of its required node affinity; the plan's otherwise.
func (p Plan) archOf(spec *yaml.Node) (string, string) {
	if a := lookup(lookup(spec, "nodeSelector"), kube.ArchLabel); a != nil && a.Value != "" {
		return a.Value, ""
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
	switch len(archs) {
	case 0:
		return p.Arch, ""
	case 1:
		return archs[0], ""
	}
	if p.Mode == ModeNative {
		return p.Arch, ""
	}
	slices.Sort(archs)
	return p.Arch, fmt.Sprintf("warning: pods can run on %s; nap is mounted for %s only (--arch), use a nodeSelector or --mode native", strings.Join(archs, ", "), p.Arch)
}

func keyColumn(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Column
		}
	}
	return -1
}

func findByName(seq *yaml.Node, name string) *yaml.Node {
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	for _, item := range seq.Content {
		if n := lookup(item, "name"); n != nil && n.Value == name {
			return item
		}
	}
	return nil
}

func findMount(seq *yaml.Node, mountPath string) *yaml.Node {
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	for _, item := range seq.Content {
		if m := lookup(item, "mountPath"); m != nil && path.Clean(m.Value) == mountPath {
			return item
		}
	}
	return nil
}

// sameScalar: two scalars of different text decode to the same value (0555 and 365).
func sameScalar(a, b *yaml.Node) bool {
	var x, y any
	return a.Decode(&x) == nil && b.Decode(&y) == nil && reflect.DeepEqual(x, y)
}
