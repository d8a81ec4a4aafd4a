package hook

import (
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/wait"
)

// Kind is what a preStop hook runs.
type Kind string

// The kinds. Adding one: a row here, a case in Of, and its words in failure.go.
const (
	None        Kind = ""             // no preStop hook
	NativeSleep Kind = "native-sleep" // lifecycle.preStop.sleep, run by the kubelet
	Nap         Kind = "nap"          // an exec of nap
	Shell       Kind = "shell"        // an exec that needs a shell or sleep binary in the image
	Exec        Kind = "exec"         // another exec
	HTTP        Kind = "http"         // an httpGet
)

// Hook is one container's preStop hook.
type Hook struct {
	Kind Kind
	// Wait is how long it holds the container before SIGTERM, when Known: a native
	// sleep, nap's arguments (a fixed delay or the adaptive wait), sleep's, or a shell's
	// `sleep N` (fixed, all but nap's).
	Wait  wait.Wait
	Known bool
	// Sleep is the native action (NativeSleep); Command the exec's (Nap, Shell, Exec).
	Sleep   *corev1.SleepAction
	Command []string
}

// Handler is container c's preStop handler, nil when it has none.
func Handler(c corev1.Container) *corev1.LifecycleHandler {
	if c.Lifecycle == nil {
		return nil
	}
	return c.Lifecycle.PreStop
}

// Of reads container c's preStop hook.
func Of(c corev1.Container) Hook {
	h := Handler(c)
	if h == nil {
		return Hook{}
	}
	switch {
	case h.Sleep != nil:
		return Hook{Kind: NativeSleep, Sleep: h.Sleep, Wait: fixed(time.Duration(h.Sleep.Seconds) * time.Second), Known: true}
	case h.HTTPGet != nil:
		return Hook{Kind: HTTP}
	case h.Exec != nil && len(h.Exec.Command) > 0:
		out := Hook{Kind: Exec, Command: h.Exec.Command}
		switch {
		case path.Base(h.Exec.Command[0]) == kube.BinaryName:
			out.Kind = Nap
		case NeedsShell(h.Exec.Command):
			out.Kind = Shell
		}
		if out.Kind == Nap {
			out.Wait, out.Known = wait.FromArgs(h.Exec.Command[1:])
		} else {
			var d time.Duration
			d, out.Known = execDelay(h.Exec.Command)
			out.Wait = fixed(d)
		}
		return out
	case h.Exec != nil:
		return Hook{Kind: Exec}
	}
	return Hook{}
}

// First is the hook of the first container of spec that has one: what "the pod's hook"
// means where one is named for a whole workload.
func First(spec corev1.PodSpec) (Hook, string) {
	for _, c := range spec.Containers {
		if h := Of(c); h.Kind != None {
			return h, c.Name
		}
	}
	return Hook{}, ""
}

// Delay is how long h holds the container, when Known: the fixed delay, or the
// adaptive wait's longest (MAX).
func (h Hook) Delay() time.Duration { return h.Wait.Delay }

// Adaptive tells whether h is nap's adaptive wait.
func (h Hook) Adaptive() bool { return h.Wait.IsAdaptive() }

func fixed(d time.Duration) wait.Wait { return wait.Wait{Kind: wait.Fixed, Delay: d} }

// execDelay finds the length of an exec sleep: sleep's arguments, or "sleep N" inside a
// shell's -c script.
func execDelay(cmd []string) (time.Duration, bool) {
	switch base := path.Base(cmd[0]); {
	case base == "sleep":
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

// sleepArgs reads sleep's arguments with nap's own parser (GNU sleep's suffixes s, m, h
// are a subset; "d" is not; nap's flags are not sleep's).
func sleepArgs(args []string) (time.Duration, bool) {
	if len(args) == 0 {
		return nap.Default, true
	}
	r, err := nap.Parse(args)
	if err != nil || r.Infinite || r.Adaptive {
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
