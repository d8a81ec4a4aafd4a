package wait

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// The flags of a wait (napctl inject, napctl controller and napctl install), as Input
// names them in errors ("--" and the name).
const (
	FlagKind  = "wait"
	FlagDelay = "delay"
	FlagMax   = "max"
	FlagMin   = "min"
	FlagQuiet = "quiet"
	// FlagRequests is the adaptive wait's request signal (Wait.Requests).
	FlagRequests = "requests"
)

// Input is a wait as a user writes it in flags: nap's duration syntax, "" for what is
// not given.
type Input struct {
	Kind  string // fixed or adaptive
	Delay string // the fixed wait's delay
	Max   string // the adaptive wait's MAX
	Min   string // the adaptive wait's MIN
	Quiet string // the adaptive wait's QUIET
	// Requests is the adaptive wait's WITHIN for requests on open connections; "0", off
	Requests string
	// MaxFlag is the flag Max came from, for errors: FlagMax, or FlagDelay where one flag
	// is the delay of either wait (napctl inject). Default FlagMax.
	MaxFlag string
}

// DefaultInput is what an Input that gives nothing means: the flags' defaults.
var DefaultInput = Input{Kind: string(Fixed), Delay: kube.DefaultDelay, Max: Arg(nap.DefaultMax), Min: "0", Quiet: Arg(nap.DefaultQuiet), Requests: "0"}

// Filled is in, trimmed, with DefaultInput where it gives nothing.
func (in Input) Filled() Input {
	t := strings.TrimSpace
	return Input{
		Kind: cmp.Or(t(in.Kind), DefaultInput.Kind), Delay: cmp.Or(t(in.Delay), DefaultInput.Delay),
		Max: cmp.Or(t(in.Max), DefaultInput.Max), Min: cmp.Or(t(in.Min), DefaultInput.Min),
		Quiet: cmp.Or(t(in.Quiet), DefaultInput.Quiet), Requests: cmp.Or(t(in.Requests), DefaultInput.Requests),
		MaxFlag: cmp.Or(in.MaxFlag, FlagMax),
	}
}

// Wait is the wait in chooses, read and checked; only the chosen kind's flags are read.
func (in Input) Wait() (Wait, error) {
	in = in.Filled()
	k, err := ParseKind("--"+FlagKind, in.Kind)
	if err != nil {
		return Wait{}, err
	}
	if k == Adaptive {
		return in.adaptive()
	}
	return in.fixed()
}

// Defaults reads in as the defaults of both waits, each checked.
func (in Input) Defaults() (Defaults, error) {
	in = in.Filled()
	k, err := ParseKind("--"+FlagKind, in.Kind)
	if err != nil {
		return Defaults{}, err
	}
	f, err := in.fixed()
	if err != nil {
		return Defaults{}, err
	}
	a, err := in.adaptive()
	if err != nil {
		return Defaults{}, err
	}
	return Defaults{Kind: k, Fixed: f, Adaptive: a}, nil
}

// Args are the flags that give in (filled), as napctl controller reads them.
func (in Input) Args() []string {
	in = in.Filled()
	args := []string{"--" + FlagKind + "=" + in.Kind, "--" + FlagDelay + "=" + in.Delay,
		"--" + FlagMax + "=" + in.Max, "--" + FlagMin + "=" + in.Min, "--" + FlagQuiet + "=" + in.Quiet}
	if in.Requests != DefaultInput.Requests {
		args = append(args, "--"+FlagRequests+"="+in.Requests)
	}
	return args
}

func (in Input) fixed() (Wait, error) {
	d, err := ParseDuration("--"+FlagDelay, in.Delay)
	if err != nil {
		return Wait{}, err
	}
	return Wait{Kind: Fixed, Delay: d, DelayText: in.Delay}, nil
}

func (in Input) adaptive() (Wait, error) {
	w := Wait{Kind: Adaptive}
	var err error
	if w.Delay, err = ParseDuration("--"+in.MaxFlag, in.Max); err != nil {
		return Wait{}, err
	}
	if w.Min, err = ParseDuration("--"+FlagMin, in.Min); err != nil {
		return Wait{}, err
	}
	if w.Quiet, err = ParseDuration("--"+FlagQuiet, in.Quiet); err != nil {
		return Wait{}, err
	}
	if w.Requests, err = ParseDuration("--"+FlagRequests, in.Requests); err != nil {
		return Wait{}, err
	}
	if w.Min > w.Delay {
		return Wait{}, fmt.Errorf("--%s %v is longer than --%s %v, the longest the adaptive wait may hold", FlagMin, w.Min, in.MaxFlag, w.Delay)
	}
	return w, nil
}

// The annotations by which a pod chooses its own wait at admission (the webhook and
// the MutatingAdmissionPolicy).
const (
	// KindAnnotation chooses the kind: fixed or adaptive.
	KindAnnotation = "nap.dev/wait"
	// DelayAnnotation sets how long the hook may hold, in nap's syntax: the fixed delay,
	// or the adaptive wait's MAX.
	DelayAnnotation = "nap.dev/delay"
	// ReasonAnnotation is where nap's webhook says, on a pod, why it holds for its wait:
	// the path that decided it and its measured tail (a calibration kept in the
	// cluster), for kubectl describe.
	ReasonAnnotation = "nap.dev/delay-reason"
)

// Defaults are the waits given to a pod that does not choose its own: the kind, and a
// wait of each kind.
type Defaults struct {
	Kind     Kind
	Fixed    Wait
	Adaptive Wait
}

// Wait is d's wait of kind k. The zero Defaults are DefaultInput's.
func (d Defaults) Wait(k Kind) Wait {
	if d == (Defaults{}) {
		d = builtIn
	}
	if k == Adaptive {
		return d.Adaptive
	}
	return d.Fixed
}

// builtIn are DefaultInput's Defaults.
var builtIn = func() Defaults {
	d, err := Input{}.Defaults()
	if err != nil {
		panic(err)
	}
	return d
}()

// OwnDelay is the delay a pod with these annotations sets itself (DelayAnnotation, as
// written); own false where it sets none. A pod's own delay wins: over the fleet's wait
// (ForPod), and over the wait its paths would give it (the webhook).
func OwnDelay(annotations map[string]string) (s string, own bool) {
	s = strings.TrimSpace(annotations[DelayAnnotation])
	return s, s != ""
}

// ForPod is the wait for a pod with these annotations: KindAnnotation chooses the kind,
// DelayAnnotation its delay (the fixed delay or the adaptive MAX), over d.
func (d Defaults) ForPod(annotations map[string]string) (Wait, error) {
	w := d.Wait(cmp.Or(d.Kind, Fixed))
	if s := strings.TrimSpace(annotations[KindAnnotation]); s != "" {
		k, err := ParseKind(KindAnnotation, s)
		if err != nil {
			return Wait{}, err
		}
		w = d.Wait(k)
	}
	if s, own := OwnDelay(annotations); own {
		delay, err := ParseDuration(DelayAnnotation, s)
		if err != nil {
			return Wait{}, err
		}
		w.Delay, w.DelayText = delay, ""
		if !w.IsAdaptive() {
			w.DelayText = s
		}
	}
	if w.IsAdaptive() && w.Min > w.Delay {
		return Wait{}, fmt.Errorf("%s %v is shorter than the adaptive wait's MIN %v", DelayAnnotation, w.Delay, w.Min)
	}
	return w, nil
}
