package controller

import (
	"cmp"
	"strings"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/kube"
	nap "github.com/nap-k8s/nap/sleeper/spec"
)

// WaitAnnotation on a pod chooses its preStop wait, as napctl inject --wait does:
// "fixed" (hold for the delay) or "adaptive" (nap's adaptive wait: until the pod's new
// connections stop, within the delay); default the controller's --wait.
const WaitAnnotation = "nap.dev/wait"

// Waits are the preStop waits the webhook and the MutatingAdmissionPolicy give a pod
// that does not choose its own: the wait, the fixed wait's delay and the adaptive wait's
// bounds. A pod's WaitAnnotation chooses the wait; its DelayAnnotation sets how long the
// hook may hold: the fixed delay, or the adaptive wait's MAX.
type Waits struct {
	Wait  inject.Wait // fixed (default) or adaptive
	Delay string      // the fixed wait's delay, nap's syntax; default kube.DefaultDelay
	Max   string      // the adaptive wait's MAX; default sleeper/spec's DefaultMax
	Min   string      // the adaptive wait's MIN; default 0
	Quiet string      // the adaptive wait's QUIET; default sleeper/spec's DefaultQuiet
}

// The controller's flags for Waits (napctl controller; napctl install writes them into
// the controller's Deployment).
const (
	FlagWait  = "wait"
	FlagDelay = "delay"
	FlagMax   = "max"
	FlagMin   = "min"
	FlagQuiet = "quiet"
)

// Defaults is w with what it leaves unset filled in.
func (w Waits) Defaults() Waits {
	w.Wait = cmp.Or(w.Wait, inject.WaitFixed)
	w.Delay = cmp.Or(strings.TrimSpace(w.Delay), kube.DefaultDelay)
	w.Max = cmp.Or(strings.TrimSpace(w.Max), hook.Arg(nap.DefaultMax))
	w.Min = cmp.Or(strings.TrimSpace(w.Min), "0")
	w.Quiet = cmp.Or(strings.TrimSpace(w.Quiet), hook.Arg(nap.DefaultQuiet))
	return w
}

// Options are opts with w's defaults.
func (w Waits) Options(opts inject.Options) inject.Options {
	w = w.Defaults()
	opts.Wait, opts.Delay, opts.MaxDelay, opts.MinDelay, opts.Quiet = w.Wait, w.Delay, w.Max, w.Min, w.Quiet
	return opts
}

// Check tells whether both waits are valid, as the webhook will plan them: the wait,
// the delay and the adaptive bounds (MIN no longer than MAX).
func (w Waits) Check(opts inject.Options) error {
	o := w.Options(opts)
	if _, err := inject.NewPlan(o); err != nil {
		return err
	}
	o.Wait = inject.WaitAdaptive
	_, err := inject.NewPlan(o)
	return err
}

// Args are the controller's flags that give it w.
func (w Waits) Args() []string {
	w = w.Defaults()
	return []string{"--" + FlagWait + "=" + string(w.Wait), "--" + FlagDelay + "=" + w.Delay,
		"--" + FlagMax + "=" + w.Max, "--" + FlagMin + "=" + w.Min, "--" + FlagQuiet + "=" + w.Quiet}
}

// ForPod is opts for one pod: its annotations over the defaults opts holds (Waits.Options).
func ForPod(opts inject.Options, annotations map[string]string) inject.Options {
	if w := strings.TrimSpace(annotations[WaitAnnotation]); w != "" {
		opts.Wait = inject.Wait(w)
	}
	if d := strings.TrimSpace(annotations[DelayAnnotation]); d != "" {
		opts.Delay, opts.MaxDelay = d, d
	}
	return opts
}
