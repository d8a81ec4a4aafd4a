package lint

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
)

// shellless are image name patterns of images without a shell: distroless (not its
// :debug tags), Chainguard images (not their -dev variants), and scratch-based images
// that say so in their name. The configuration adds more prefixes.
func shellless(image string, extra []string) bool {
	for _, p := range extra {
		if strings.HasPrefix(image, p) {
			return true
		}
	}
	_, tag, _ := strings.Cut(image[strings.LastIndex(image, "/")+1:], ":")
	switch {
	case strings.Contains(image, "/distroless/") || strings.HasPrefix(image, "distroless/"):
		return !strings.Contains(tag, "debug")
	case strings.HasPrefix(image, "cgr.dev/chainguard/"):
		return !strings.Contains(tag, "dev")
	case strings.Contains(image, "scratch"):
		return true
	}
	return false
}

func gracePeriod(spec corev1.PodSpec) time.Duration {
	if spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	}
	return kube.DefaultGracePeriod
}

// servingContainers are those with ports, or all when none declares a port.
func servingContainers(spec corev1.PodSpec) []corev1.Container {
	var out []corev1.Container
	for _, c := range spec.Containers {
		if len(c.Ports) > 0 {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return spec.Containers
	}
	return out
}

func injectHint(w *Workload) string {
	return "napctl inject -f " + w.Obj.File + " --delay 10s"
}

// hookHint is the fix for container c whose own preStop hook holds no delay: inject
// rewrites nap's own hooks (the native sleep, nap's binary) but leaves any other hook
// alone, so for those it says what to change instead.
func hookHint(w *Workload, c corev1.Container) string {
	h := hook.Of(c)
	if h.Kind == hook.NativeSleep || h.Kind == hook.Nap || h.Kind == hook.None {
		return injectHint(w)
	}
	secs := int64(10)
	if d := h.Delay(); h.Known && d > 0 {
		secs = int64((d + time.Second - 1) / time.Second) // the hook's own delay, whole seconds
	}
	return fmt.Sprintf("napctl inject leaves container %q's own hook alone: replace its lifecycle.preStop with the native sleep (preStop: {sleep: {seconds: %d}}, Kubernetes 1.30+), or delete it and run %s", c.Name, secs, injectHint(w))
}
