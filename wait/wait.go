package wait

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// Kind is how a wait ends.
type Kind string

// The kinds. Adding one: a row here and in Kinds, its fields in Wait, its reader and
// writer in this package.
const (
	Fixed    Kind = "fixed"    // after Delay
	Adaptive Kind = "adaptive" // once the pod's traffic has been quiet, within Min and Delay
)

// Kinds are the kinds, in the order help texts give them.
var Kinds = []Kind{Fixed, Adaptive}

// KindNames are Kinds' names.
func KindNames() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = string(k)
	}
	return out
}

// Wait is one preStop wait.
type Wait struct {
	Kind Kind
	// Delay is how long a fixed wait holds, and the longest an adaptive wait may (its
	// MAX, never shorter than Min).
	Delay time.Duration
	// The adaptive wait (sleeper/nap): at least Min, until no more than Allow new
	// connections reached the pod for Quiet. Allow is the pod's own: what its probes
	// open in a quiet window (hook.Background), set where the hook is written; a fixed
	// wait has one too, for its verdict, in nap's QUIET (FixedQuiet).
	Min   time.Duration
	Quiet time.Duration
	Allow int64
	// Requests is the request signal's WITHIN (nap --requests): with it, a request on a
	// connection the pod accepted earlier keeps the wait open too, as a new connection
	// does; 0, off. For pods behind clients that pool their connections and let go of a
	// pod late (an L7 load balancer with the pods as targets); not behind clients that
	// pin theirs (kube-proxy, an L4 load balancer), which send until the app closes them:
	// the wait would hold to MAX.
	Requests time.Duration
	// DelayText is how a fixed Delay was written where it was text ("2.5", "2500ms"): a
	// hook's argv keeps the user's spelling. Empty: Arg(Delay).
	DelayText string
	// Live: nap reads the wait the cluster keeps for the pod's workload when its hook
	// starts (nap --live, kube.LiveWaitsName), and waits at least as long as both that
	// and this wait.
	Live bool
}

// PooledRequests is the request signal's WITHIN that an adaptive wait gets where a
// client that pools its connections reaches the pod (traffic.Path.Pools), unless the
// wait sets its own: nap.ActiveWithin, two readings of the sockets.
const PooledRequests = nap.ActiveWithin

// MaxDelay is the longest wait nap gives a hook (a fixed delay, an adaptive MAX, MIN or
// QUIET): a preStop wait of more than a day holds every rollout, scale-down and drain a
// day per pod, and is a typo (1000000h) more often than a plan. It keeps the grace
// period's arithmetic (delay plus the drain time, in Go's int64 nanoseconds and the
// API's int64 seconds) far from overflow, which a delay near nap's own limit (292
// years) did not.
const MaxDelay = 24 * time.Hour

// Default is the wait when nothing is chosen: DefaultInput's fixed wait (10s).
func Default() Wait { return builtIn.Fixed }

// DefaultAdaptive is DefaultInput's adaptive wait: no MIN, nap's QUIET and MAX.
func DefaultAdaptive() Wait { return builtIn.Adaptive }

// Native is the fixed wait the native sleep action can hold in w's place, never shorter
// than w may hold: its delay (an adaptive wait's MAX) rounded up to whole seconds.
func (w Wait) Native() Wait {
	d := (w.Delay + time.Second - 1) / time.Second * time.Second
	return Wait{Kind: Fixed, Delay: d}
}

// FixedQuiet is the QUIET a fixed wait's verdict judges by, and its Allow is counted in:
// nap's default (sleeper/nap).
const FixedQuiet = nap.DefaultQuiet

// BackgroundQuiet is the window w's Allow is counted in: its QUIET, FixedQuiet for a fixed
// wait.
func (w Wait) BackgroundQuiet() time.Duration {
	if w.IsAdaptive() {
		return w.Quiet
	}
	return FixedQuiet
}

// IsAdaptive tells whether w is the adaptive wait.
func (w Wait) IsAdaptive() bool { return w.Kind == Adaptive }

// Holds is the least w holds a container whatever the traffic: a fixed wait's delay,
// an adaptive wait's MIN. A path whose tail is longer still reaches the pod after it
// stopped.
func (w Wait) Holds() time.Duration {
	if w.IsAdaptive() {
		return w.Min
	}
	return w.Delay
}

// Check tells whether w is a wait nap can run: a known kind, no negative duration, a
// MAX no shorter than MIN.
func (w Wait) Check() error {
	switch w.Kind {
	case Fixed:
		if w.Allow < 0 {
			return fmt.Errorf("the fixed wait's ALLOW %d must not be negative", w.Allow)
		}
	case Adaptive:
		switch {
		case w.Min < 0 || w.Quiet < 0 || w.Allow < 0 || w.Requests < 0:
			return fmt.Errorf("the adaptive wait's MIN %v, QUIET %v, ALLOW %d and WITHIN %v must not be negative", w.Min, w.Quiet, w.Allow, w.Requests)
		case w.Min > w.Delay:
			return fmt.Errorf("the adaptive wait's MIN %v is longer than its MAX %v", w.Min, w.Delay)
		}
	default:
		return fmt.Errorf("wait %q: want %s", w.Kind, strings.Join(KindNames(), " or "))
	}
	if w.Delay < 0 {
		return fmt.Errorf("delay %v: must not be negative", w.Delay)
	}
	if m := max(w.Delay, w.Min, w.Quiet, w.Requests); m > MaxDelay {
		return fmt.Errorf("a wait of %v: longer than a preStop wait may be (%v)", m, MaxDelay)
	}
	return nil
}

// DelayArg is the fixed wait's delay as its hook's argument: as it was written, else
// Arg(Delay).
func (w Wait) DelayArg() string {
	if w.DelayText != "" {
		return w.DelayText
	}
	return Arg(w.Delay)
}

// Args are nap's arguments for w: DELAY [--allow N] (N when not 0), or [MIN] --quiet
// QUIET --max MAX --allow N [--requests WITHIN]; then --live where w is Live.
func (w Wait) Args() []string {
	if w.Live {
		w.Live = false
		return append(w.Args(), nap.FlagLive)
	}
	if !w.IsAdaptive() {
		if w.Allow > 0 {
			return []string{w.DelayArg(), nap.FlagAllow, strconv.FormatInt(w.Allow, 10)}
		}
		return []string{w.DelayArg()}
	}
	var args []string
	if w.Min > 0 {
		args = append(args, Arg(w.Min))
	}
	args = append(args, nap.FlagQuiet, Arg(w.Quiet), nap.FlagMax, Arg(w.Delay), nap.FlagAllow, strconv.FormatInt(w.Allow, 10))
	if w.Requests > 0 {
		args = append(args, nap.FlagRequests, Arg(w.Requests))
	}
	return args
}

// Command is nap's hook for w: the binary in its mount, then Args.
func (w Wait) Command() []string {
	return append([]string{kube.MountPath + "/" + kube.BinaryName}, w.Args()...)
}

// FromArgs reads nap's arguments as nap does (sleeper/nap): the wait they make, and
// false where nap would not hold for a known time (invalid arguments, which nap reads as
// its default with a complaint; inf).
func FromArgs(args []string) (Wait, bool) {
	r, err := nap.Parse(args)
	if err != nil || r.Infinite {
		return Wait{}, false
	}
	if !r.Adaptive {
		return Wait{Kind: Fixed, Delay: r.Duration, Allow: r.Allow, Live: r.Live}, true
	}
	return Wait{Kind: Adaptive, Min: r.Duration, Delay: max(r.Max, r.Duration), Quiet: r.Quiet, Allow: r.Allow, Requests: r.Requests, Live: r.Live}, true
}

// Request is w as nap reads it (nap.Request): its arguments, but for Live.
func (w Wait) Request() nap.Request {
	if !w.IsAdaptive() {
		return nap.Request{Duration: w.Delay, Allow: w.Allow}
	}
	return nap.Request{Duration: w.Min, Adaptive: true, Quiet: w.Quiet, Max: w.Delay, Allow: w.Allow, Requests: w.Requests}
}

// LiveLine is w as the live wait's line (nap.LiveLine) that the controller keeps for a
// workload: its ALLOW is the hook's own, not the line's.
func (w Wait) LiveLine() (string, bool) { return nap.LiveLine(w.Request()) }

// Arg writes d in nap's syntax, in the largest unit that holds it whole: 60s, 1500ms.
func Arg(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	case d%time.Millisecond == 0:
		return fmt.Sprintf("%dms", d/time.Millisecond)
	}
	return fmt.Sprintf("%dns", d)
}

// ParseDuration reads one duration in nap's syntax (10s, 1.5, 500ms) as a preStop
// wait takes it: finite and not negative. name is what errors call it (a flag, an
// annotation).
func ParseDuration(name, s string) (time.Duration, error) {
	r, err := nap.Parse([]string{s})
	if err == nil && r.Infinite {
		return 0, fmt.Errorf("%s %q: nap reads it as forever, which a preStop hook must not be (the kubelet kills it at the grace period, and the pod takes that long to go); want a duration, such as 10s", name, s)
	}
	if err != nil || r.Adaptive || strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%s %q: want a duration nap reads, such as 10s, 1.5 or 500ms", name, s)
	}
	if r.Duration > MaxDelay {
		return 0, fmt.Errorf("%s %q: longer than a preStop wait may be (%v): every pod would take that long to go", name, s, MaxDelay)
	}
	return r.Duration, nil
}

// ParseKind reads a kind's name; name is what errors call it.
func ParseKind(name, s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("%s %q: want %s", name, s, strings.Join(KindNames(), " or "))
}

// CELCommand is Command written as a CEL list for the MutatingAdmissionPolicy, where
// the pod decides part of the wait: an adaptive wait's MAX and ALLOW are the CEL
// expressions maxExpr and allowExpr (a string and an int), a fixed wait's delay is
// delayExpr (a string) and its ALLOW allowExpr too (counted in FixedQuiet: the caller's
// expression for that window); the rest is w's.
func (w Wait) CELCommand(delayExpr, maxExpr, allowExpr string) string {
	cmd := w.Command()
	if !w.IsAdaptive() {
		// The delay, then --allow N only where N is not 0, as Args writes it.
		return "[" + strconv.Quote(cmd[0]) + ", " + delayExpr + "] + (" + allowExpr + " > 0 ? [" +
			strconv.Quote(nap.FlagAllow) + ", string(" + allowExpr + ")] : [])"
	}
	var items []string
	for i, a := range cmd {
		switch {
		case i > 0 && cmd[i-1] == nap.FlagMax:
			items = append(items, maxExpr)
		case i > 0 && cmd[i-1] == nap.FlagAllow:
			items = append(items, "string("+allowExpr+")")
		default:
			items = append(items, strconv.Quote(a))
		}
	}
	return "[" + strings.Join(items, ", ") + "]"
}
