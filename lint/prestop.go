package lint

import (
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/spec"
)

// delay is what a container's preStop hook does before the container gets SIGTERM.
type delay struct {
	kind     string        // "exec", "sleep" (native), "http"; "" for no preStop
	duration time.Duration // known length, when known > 0
	known    bool
	native   *corev1.SleepAction
	command  []string
}

// preStopDelay reads a container's preStop hook.
func preStopDelay(c corev1.Container) delay {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return delay{}
	}
	h := c.Lifecycle.PreStop
	switch {
	case h.Sleep != nil:
		return delay{kind: "sleep", native: h.Sleep, duration: time.Duration(h.Sleep.Seconds) * time.Second, known: true}
	case h.HTTPGet != nil:
		return delay{kind: "http"}
	case h.Exec != nil:
		d := delay{kind: "exec", command: h.Exec.Command}
		d.duration, d.known = execDuration(h.Exec.Command)
		return d
	}
	return delay{}
}

// HookDelay is how long container c's preStop hook holds it before SIGTERM, when that
// can be read (known: a native sleep; nap's, sleep's or a shell's `sleep N`), and
// whether the hook is the native sleep action. The controller judges live pods with it.
func HookDelay(c corev1.Container) (d time.Duration, known, native bool) {
	h := preStopDelay(c)
	return h.duration, h.known, h.kind == "sleep"
}

// execDuration finds the length of an exec sleep: nap's arguments, sleep's, or
// "sleep N" inside a shell's -c script.
func execDuration(cmd []string) (time.Duration, bool) {
	if len(cmd) == 0 {
		return 0, false
	}
	switch base := path.Base(cmd[0]); {
	case base == kube.BinaryName || base == "sleep":
		return sleepArgs(cmd[1:])
	case shells[base] && len(cmd) >= 3 && cmd[1] == "-c":
		f := strings.Fields(strings.NewReplacer(";", " ; ", "&&", " && ").Replace(cmd[2]))
		for i, w := range f {
			if path.Base(w) == "sleep" && i+1 < len(f) {
				return sleepArgs(f[i+1 : i+2])
			}
		}
	}
	return 0, false
}

// sleepArgs reads sleep's or nap's arguments with nap's own parser (GNU sleep's
// suffixes s, m, h are a subset; "d" is not).
func sleepArgs(args []string) (time.Duration, bool) {
	if len(args) == 0 {
		return spec.Default, true
	}
	r, err := spec.Parse(args)
	if err != nil || r.Infinite {
		return 0, false
	}
	return r.Duration, true
}

var shells = map[string]bool{"sh": true, "bash": true, "ash": true, "dash": true, "zsh": true, "ksh": true}

// NeedsShell tells whether command[0] needs a shell or a sleep binary in the image.
func NeedsShell(cmd []string) bool {
	if len(cmd) == 0 {
		return false
	}
	base := path.Base(cmd[0])
	return shells[base] || base == "sleep" || strings.HasPrefix(cmd[0], "/bin/") || strings.HasPrefix(cmd[0], "/usr/bin/")
}

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
