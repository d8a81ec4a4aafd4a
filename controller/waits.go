package controller

import (
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/wait"
)

// WaitAnnotation on a pod chooses its preStop wait, as napctl inject --wait does:
// "fixed" (hold for the delay) or "adaptive" (nap's adaptive wait: until the pod's new
// connections stop, within the delay); default the controller's --wait.
const WaitAnnotation = wait.KindAnnotation

// The controller's flags for its default waits (wait.Input's; napctl install writes
// them into the controller's Deployment).
const (
	FlagWait  = wait.FlagKind
	FlagDelay = wait.FlagDelay
	FlagMax   = wait.FlagMax
	FlagMin   = wait.FlagMin
	FlagQuiet = wait.FlagQuiet
)

// CheckWaits tells whether both default waits can be planned as the webhook will plan
// them, with opts (its delivery).
func CheckWaits(d wait.Defaults, opts inject.Options) error {
	for _, w := range []wait.Wait{d.Fixed, d.Adaptive} {
		opts.Wait = w
		if _, err := inject.NewPlan(opts); err != nil {
			return err
		}
	}
	return nil
}
