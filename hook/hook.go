package hook

import (
	"path"
	"slices"
	"strconv"
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
	// Stops: the hook begins the server's stop (nginx -s quit, kong quit) before it
	// waits, if it waits at all; it holds the routes' tail for nothing, and Wait is what
	// it waits first (0, or kong quit's --wait).
	Stops bool
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
		return OfExec(h.Exec.Command)
	case h.Exec != nil:
		return Hook{Kind: Exec}
	}
	return Hook{}
}

// OfExec reads an exec preStop hook's command: nap's, a sleep, a shell's script, a
// command that stops the server, or another.
func OfExec(cmd []string) Hook {
	out := Hook{Kind: Exec, Command: cmd}
	if len(cmd) == 0 {
		return out
	}
	switch {
	case path.Base(cmd[0]) == kube.BinaryName:
		out.Kind = Nap
		out.Wait, out.Known = wait.FromArgs(cmd[1:])
		return out
	case NeedsShell(cmd):
		out.Kind = Shell
	}
	var d time.Duration
	d, out.Known, out.Stops = execDelay(cmd)
	out.Wait = fixed(d)
	return out
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

// Holds is the least the hook holds the container whatever the traffic, when Known:
// its delay, or an adaptive wait's MIN. A path whose tail is longer still reaches the
// pod after it stopped.
func (h Hook) Holds() time.Duration { return h.Wait.Holds() }

func fixed(d time.Duration) wait.Wait { return wait.Wait{Kind: wait.Fixed, Delay: d} }

// execDelay finds how long an exec hook holds before the server begins to stop: its
// first command that sleeps or stops, in order (sleep's arguments; a stop, with its own
// wait where it has one), of the command itself or of a shell's -c script. Commands
// before it are taken to return at once.
func execDelay(cmd []string) (d time.Duration, known, stops bool) {
	cmds := [][]string{cmd}
	if shells[path.Base(cmd[0])] && len(cmd) >= 3 && cmd[1] == "-c" {
		cmds = nil
		script := strings.NewReplacer(";", " ; ", "&&", " ; ", "||", " ; ", "|", " ; ", "\n", " ; ", "&", " ; ").Replace(cmd[2])
		for _, c := range strings.Split(script, ";") {
			if f := strings.Fields(c); len(f) > 0 {
				cmds = append(cmds, f)
			}
		}
	}
	for _, c := range cmds {
		if path.Base(c[0]) == "exec" && len(c) > 1 {
			c = c[1:]
		}
		if path.Base(c[0]) == "sleep" {
			if len(cmds) > 1 { // in a script, sleep's one argument
				c = c[:min(len(c), 2)]
			}
			d, known := sleepArgs(c[1:])
			return d, known, false
		}
		if d, ok := stopWait(c); ok {
			return d, true, true
		}
	}
	return 0, false, false
}

// stops are servers' commands that begin their graceful stop (or kill them) at once:
// the command's name, then the words that make it a stop (none: any use), each word one
// of its alternatives (one ending in * matches the words it begins). A preStop hook of
// one holds nothing while the routes still send to the pod: a server in lame-duck mode
// or draining refuses or hands off the clients the routes still send.
var stops = []struct {
	cmd   string
	words [][]string
}{
	{"nginx", [][]string{{"-s"}, {"quit", "stop"}}},     // nginx -s quit
	{"openresty", [][]string{{"-s"}, {"quit", "stop"}}}, // OpenResty's nginx
	{"kong", [][]string{{"quit"}}},                      // kong quit (--wait N waits first)
	{"apachectl", [][]string{{"-k"}, {"graceful-stop", "stop"}}},
	{"httpd", [][]string{{"-k"}, {"graceful-stop", "stop"}}},
	{"caddy", [][]string{{"stop"}}},
	{"supervisorctl", [][]string{{"stop"}}},
	// NATS's lame-duck mode and stops, as its chart writes them (-sl=ldm=/var/run/nats/nats.pid)
	{"nats-server", [][]string{{"-sl", "--signal"}, {"ldm*", "quit*", "stop*", "term*"}}},
	{"nats-server", [][]string{{"-sl=ldm*", "-sl=quit*", "-sl=stop*", "-sl=term*", "--signal=ldm*", "--signal=quit*", "--signal=stop*", "--signal=term*"}}},
	{"nodetool", [][]string{{"drain", "stopdaemon"}}}, // Cassandra: flushes and stops listening
	{"kill", nil}, // kill -QUIT 1
	{"pkill", nil},
	{"killall", nil},
	{"killall5", nil},
}

// stopWait tells whether command c (its words) is a stop, and how long it waits before
// it stops: kong quit's --wait (--wait=N or --wait N, seconds), else 0.
func stopWait(c []string) (time.Duration, bool) {
	base := path.Base(c[0])
	for _, s := range stops {
		if base != s.cmd || !hasWords(c[1:], s.words) {
			continue
		}
		for i, a := range c[1:] {
			v, ok := strings.CutPrefix(a, "--wait=")
			if !ok && a == "--wait" && i+2 < len(c) {
				v, ok = c[i+2], true
			}
			if n, err := strconv.ParseFloat(v, 64); ok && err == nil && n > 0 {
				return time.Duration(n * float64(time.Second)), true
			}
		}
		return 0, true
	}
	return 0, false
}

// hasWords tells whether args hold the words in order, one after the other, each one of
// its alternatives.
func hasWords(args []string, words [][]string) bool {
	if len(words) == 0 {
		return true
	}
	for i := range args {
		if i+len(words) > len(args) {
			return false
		}
		match := true
		for j, alts := range words {
			if !slices.ContainsFunc(alts, func(alt string) bool { return isWord(args[i+j], alt) }) {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// isWord: arg is the word alt, or begins with it where alt ends in *.
func isWord(arg, alt string) bool {
	if prefix, ok := strings.CutSuffix(alt, "*"); ok {
		return strings.HasPrefix(arg, prefix)
	}
	return arg == alt
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
