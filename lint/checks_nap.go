package lint

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// The nap volume itself.
func napChecks() []Check {
	return []Check{
		Check{ID: NapVolumeNotExecutable, Title: "The nap volume is not executable", Severity: Error, Run: napVolumeNotExecutable},
		Check{ID: NapArchMismatch, Title: "The nap binary's architecture contradicts the nodeSelector", Severity: Error, Run: napArchMismatch},
		Check{ID: NapVolumeMissing, Title: "A container mounts nap without a nap volume", Severity: Error, Run: napVolumeMissing},
		Check{ID: NapKeyMissing, Title: "The nap ConfigMap in the input lacks the key the pod mounts", Severity: Error, Run: napKeyMissing},
		Check{ID: NapOnWindows, Title: "nap's binary in a pod that runs on Windows", Severity: Error, Run: napOnWindows},
		Check{ID: AdaptiveAllowTooLow, Title: "nap's adaptive wait allows fewer connections than the pod's probes open", Severity: Warning, Run: adaptiveAllowTooLow},
	}
}

// napKeyMissing: the nap ConfigMap is in the input, in the pod's namespace, but has no
// key the pod's nap volume mounts (napctl configmap --arch amd64, a pod on arm64): the
// kubelet cannot mount the volume, and the pod does not start.
func napKeyMissing(_ *Context, w *Workload) []Finding {
	var out []Finding
	for _, v := range napVolumes(w.PodSpec) {
		keys, ok := w.ConfigMapKeys[v.ConfigMap.Name]
		if !ok {
			continue // not in the input: nothing to say of it
		}
		for _, it := range v.ConfigMap.Items {
			if !keys[it.Key] && (it.Path == kube.BinaryName || v.ConfigMap.Optional == nil || !*v.ConfigMap.Optional) {
				out = append(out, Finding{
					Message: fmt.Sprintf("volume %q mounts key %q of ConfigMap %s, which has no such key in this input: the pod's volume cannot be mounted", v.Name, it.Key, v.ConfigMap.Name),
					Hint:    "add the architecture to the ConfigMap (napctl configmap --arch " + strings.Join(nap.Arches, ",") + ")",
				})
			}
		}
	}
	return out
}

// napOnWindows: nap's binary is a Linux executable; on a Windows node its hook fails
// (FailedPreStopHook) and the container gets no delay.
func napOnWindows(_ *Context, w *Workload) []Finding {
	if !kube.IsWindows(w.PodSpec) {
		return nil
	}
	return perContainer(w, w.PodSpec.Containers, func(c corev1.Container) *Finding {
		if hook.Of(c).Kind != hook.Nap {
			return nil
		}
		return &Finding{
			Message: fmt.Sprintf("container %q runs nap's binary, a Linux executable, but the pod runs on Windows nodes: the hook fails (FailedPreStopHook) and there is no delay", c.Name),
			Hint:    "use the native sleep action, lifecycle.preStop.sleep (napctl inject gives Windows pods that)",
		}
	})
}

// adaptiveAllowTooLow: an adaptive wait whose --allow is below what the pod's own
// probes open in a quiet window (hook.Background) never sees quiet: every termination
// holds to MAX. napctl inject and the webhook set it from the probes; it goes stale when
// a probe is added or made more frequent by hand.
func adaptiveAllowTooLow(_ *Context, w *Workload) []Finding {
	periods := hook.ProbePeriods(w.PodSpec)
	return perContainer(w, w.PodSpec.Containers, func(c corev1.Container) *Finding {
		h := hook.Of(c)
		if !h.Adaptive() {
			return nil
		}
		need := hook.Background(h.Wait.Quiet, periods)
		if h.Wait.Allow >= need {
			return nil
		}
		return &Finding{
			Message: fmt.Sprintf("container %q's adaptive wait allows %d new connections per %v quiet window, but the pod's probes open up to %d in one: the wait never sees quiet and holds the full %v on every termination", c.Name, h.Wait.Allow, h.Wait.Quiet, need, h.Delay()),
			Hint:    fmt.Sprintf("set --allow %d in the hook (napctl inject --wait adaptive reads the probes and sets it)", need),
		}
	})
}

// napVolumeMissing: a mount of the volume "nap" with no such volume in the pod, which
// the API server rejects (seen when a template shares its containers through a YAML
// alias and only one of them got the volume).
func napVolumeMissing(_ *Context, w *Workload) []Finding {
	for _, v := range w.PodSpec.Volumes {
		if v.Name == kube.VolumeName {
			return nil
		}
	}
	var out []Finding
	for _, c := range append(slices.Clone(w.PodSpec.InitContainers), w.PodSpec.Containers...) {
		for _, m := range c.VolumeMounts {
			if m.Name == kube.VolumeName {
				out = append(out, Finding{
					Container: c.Name,
					Line:      w.ContainerLine(c.Name),
					Message:   fmt.Sprintf("container %q mounts volume %q, which the pod does not have: the API server rejects the pod", c.Name, m.Name),
					Hint:      "add the nap volume (napctl inject adds both), or remove the mount",
				})
			}
		}
	}
	return out
}

// napVolumes are the pod's volumes from the nap ConfigMap: a ConfigMap volume, or a
// projected volume's source (nap's binary beside the live wait: inject.Options.Live),
// read as the ConfigMap volume it projects (its mode the projected volume's).
func napVolumes(spec corev1.PodSpec) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == kube.ConfigMapName {
			out = append(out, v)
		}
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if cm := src.ConfigMap; cm != nil && cm.Name == kube.ConfigMapName {
				out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: cm.LocalObjectReference, Items: cm.Items, DefaultMode: v.Projected.DefaultMode, Optional: cm.Optional}}})
			}
		}
	}
	return out
}

func napVolumeNotExecutable(_ *Context, w *Workload) []Finding {
	var out []Finding
	for _, v := range napVolumes(w.PodSpec) {
		mode := int32(0o644) // the API's default
		if v.ConfigMap.DefaultMode != nil {
			mode = *v.ConfigMap.DefaultMode
		}
		for _, it := range v.ConfigMap.Items {
			m := mode
			if it.Mode != nil {
				m = *it.Mode
			}
			if it.Path == kube.BinaryName && m&0o111 == 0 {
				mode = m
				break
			}
		}
		if mode&0o111 == 0 {
			out = append(out, Finding{
				Message: fmt.Sprintf("volume %q mounts the nap ConfigMap with mode %#o: the binary cannot run and the preStop hook fails", v.Name, mode),
				Hint:    "set defaultMode: 0555 (or 0755)",
			})
		}
	}
	return out
}

func napArchMismatch(_ *Context, w *Workload) []Finding {
	node := w.PodSpec.NodeSelector[kube.ArchLabel]
	if node == "" {
		return nil
	}
	var out []Finding
	for _, v := range napVolumes(w.PodSpec) {
		for _, it := range v.ConfigMap.Items {
			arch, ok := strings.CutPrefix(it.Key, kube.KeyForArch(""))
			if !ok || arch == node {
				continue
			}
			known := false
			for _, a := range nap.Arches {
				known = known || a == arch
			}
			if known {
				out = append(out, Finding{
					Message: fmt.Sprintf("volume %q mounts the %s nap binary, but the pods run on %s nodes (nodeSelector %s): exec format error in every preStop", v.Name, arch, node, kube.ArchLabel),
					Hint:    "select the key " + kube.KeyForArch(node),
				})
			}
		}
	}
	return out
}
