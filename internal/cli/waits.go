package cli

import (
	"github.com/spf13/pflag"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/kube"
	nap "github.com/nap-k8s/nap/sleeper/spec"
)

// WaitFlags adds the flags of the webhook's and the policy's default preStop waits
// (napctl controller, napctl install) to fl.
func WaitFlags(fl *pflag.FlagSet, w *controller.Waits) {
	fl.StringVar((*string)(&w.Wait), controller.FlagWait, string(inject.WaitFixed), "the default preStop wait: fixed (the hook holds for --delay) or adaptive (nap's adaptive wait: until the pod's new connections stop, from --min to --max); the pod annotation "+controller.WaitAnnotation+" chooses its own")
	fl.StringVar(&w.Delay, controller.FlagDelay, kube.DefaultDelay, "the fixed wait's default delay (the pod annotation "+controller.DelayAnnotation+" overrides it)")
	fl.StringVar(&w.Max, controller.FlagMax, hook.Arg(nap.DefaultMax), "the adaptive wait's default MAX, the longest it holds (the pod annotation "+controller.DelayAnnotation+" overrides it)")
	fl.StringVar(&w.Min, controller.FlagMin, "0", "the adaptive wait's MIN: it holds at least this long")
	fl.StringVar(&w.Quiet, controller.FlagQuiet, hook.Arg(nap.DefaultQuiet), "the adaptive wait's QUIET: it ends once no new connection beyond the pod's probes has reached the pod for this long")
}
