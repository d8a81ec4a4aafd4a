package inject

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// injectObject runs the plan on one object, in named steps: the template and its plan,
// the target containers, each container's mount and hook, the volume, the grace period.
func (p Plan) injectObject(e editor, o *manifest.Object) ([]Note, error) {
	switch why := o.LeftAlone(); {
	case why != "":
		return []Note{p.note(o, 0, "skipped: %s", why)}, nil
	case !o.IsWorkload():
		return nil, nil
	}
	ps := o.PodSpecNode()
	if ps == nil || ps.YNode().Kind != yaml.MappingNode {
		return []Note{p.note(o, 0, "skipped: no pod template")}, nil
	}
	spec := ps.YNode()
	if p.hasServices() && len(p.Containers) == 0 {
		if d := p.decide(o, spec); !d.Inject {
			// Why its neighbours matter: a file alone, with no Service, gets every template
			// delayed; among inputs that hold Services, only what they select.
			return []Note{p.note(o, 0, "left alone: %s (the inputs hold Services, so only the pod templates a Service selects get the delay, as the webhook's default policy gives it; --container NAME delays one anyway)", d)}, nil
		}
	}
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
	if p.Live && p.Mode == ModeBinary && p.Delivery == DeliveryConfigMap {
		t.liveKey = liveKeyOf(o)
	}
	if err := t.guard(lookup(spec, "containers"), "containers"); err != nil {
		return nil, err
	}
	containers := lookup(spec, "containers")
	if containers == nil || containers.Kind != yaml.SequenceNode || len(containers.Content) == 0 {
		return []Note{p.note(o, 0, "skipped: no containers")}, nil
	}
	t.compact = !isFlow(containers) && containers.Column == keyColumn(spec, "containers")

	arch, archNote, assumed := p.archOf(spec)
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
		if assumed && p.Delivery == DeliveryConfigMap {
			*p.assumedArch++
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
	// liveKey is the pods' workload's key of the live waits, where the hooks read it
	// (Plan.Live): "" where they do not.
	liveKey string
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
		} else if h := hook.OfExec(commandOf(pre)); h.Stops && h.Delay() == 0 {
			t.notes = append(t.notes, p.note(o, pre.Line, "container %q's preStop hook %q begins the server's stop at once, so it holds no delay; left alone: make it wait first (sleep 10 && ...)", c.name, strings.Join(h.Command, " ")))
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

// commandOf is an exec hook's command, nil for another hook.
func commandOf(pre *yaml.Node) []string {
	cmd := lookup(lookup(pre, "exec"), "command")
	if cmd == nil || cmd.Kind != yaml.SequenceNode {
		return nil
	}
	var out []string
	for _, a := range cmd.Content {
		out = append(out, a.Value)
	}
	return out
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
	if t.liveKey != "" {
		// The binary as above, and the workload's live wait, optional: a pod starts
		// before nap's controller keeps one, and reads it once it does.
		vol = mapping("name", str(kube.VolumeName), "projected", mapping(
			"defaultMode", octal(0o555),
			"sources", sequence(false,
				mapping("configMap", mapping("name", str(p.ConfigMap),
					"items", sequence(false, mapping("key", str(kube.KeyForArch(arch)), "path", str(kube.BinaryName))))),
				mapping("configMap", mapping("name", str(kube.LiveWaitsName),
					"items", sequence(false, mapping("key", str(t.liveKey), "path", str(kube.LiveFile))),
					"optional", boolean(true))),
			),
		))
	}
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

// preStop is the hook that the plan adds to this template: its wait's ALLOW is what the
// template's probes open (hook.Background) in the wait's window (an adaptive wait's
// QUIET; a fixed wait's verdict's, wait.FixedQuiet).
func (t *template) preStop() *yaml.Node {
	w := t.p.Wait
	if t.p.Mode == ModeNative {
		return mapping("sleep", mapping("seconds", num(int64(w.Delay/time.Second))))
	}
	w.Allow = hook.Background(w.BackgroundQuiet(), t.probePeriods())
	w.Live = t.liveKey != ""
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

// liveKeyOf is the key of the live waits (kube.LiveKey) of the workload whose pods o
// makes, as nap's controller names it from each pod (kube.WorkloadOf): o itself for a
// workload, a pod's controller for a pod. "" where the pods' workload is not o's name
// (a CronJob's pods belong to Jobs it names as it goes) or a pod has none (a name it
// does not have yet, no controller).
func liveKeyOf(o *manifest.Object) string {
	if o.Kind == "CronJob" {
		return ""
	}
	if o.Kind != "Pod" {
		if o.Name == "" {
			return ""
		}
		return kube.LiveKey(kube.Workload{Kind: o.Kind, Name: o.Name})
	}
	var p corev1.Pod
	meta := o.Node.Field("metadata")
	if meta == nil || meta.Value == nil {
		return ""
	}
	b, err := meta.Value.MarshalJSON()
	if err != nil || json.Unmarshal(b, &p.ObjectMeta) != nil {
		return ""
	}
	w := kube.WorkloadOf(&p)
	if w.Name == "" {
		return ""
	}
	return kube.LiveKey(w)
}
