package controller

import (
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/wait"
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
