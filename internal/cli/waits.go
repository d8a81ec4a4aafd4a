package cli

import (
	"github.com/spf13/pflag"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/wait"
)

// WaitFlags adds the flags of the webhook's and the policy's default preStop waits
// (napctl controller, napctl install) to fl.
func WaitFlags(fl *pflag.FlagSet, w *wait.Input) {
	d := wait.DefaultInput
	fl.StringVar(&w.Kind, wait.FlagKind, d.Kind, "the default preStop wait: fixed (the hook holds for --delay) or adaptive (nap's adaptive wait: until the pod's new connections stop, from --min to --max); the pod annotation "+wait.KindAnnotation+" chooses its own")
	fl.StringVar(&w.Delay, wait.FlagDelay, d.Delay, "the fixed wait's default delay (the pod annotation "+wait.DelayAnnotation+" overrides it)")
	fl.StringVar(&w.Max, wait.FlagMax, d.Max, "the adaptive wait's default MAX, the longest it holds (the pod annotation "+wait.DelayAnnotation+" overrides it)")
	fl.StringVar(&w.Min, wait.FlagMin, d.Min, "the adaptive wait's MIN: it holds at least this long")
	fl.StringVar(&w.Quiet, wait.FlagQuiet, d.Quiet, "the adaptive wait's QUIET: it ends once no new connection beyond the pod's probes has reached the pod for this long")
	fl.StringVar(&w.Requests, wait.FlagRequests, d.Requests, RequestsHelp)
}

// RequestsHelp is the help of the adaptive wait's --requests, wherever it is a flag.
const RequestsHelp = "the adaptive wait's WITHIN for requests on open connections: a request on a connection the pod accepted before, this recent, holds the wait too (1s is the usual; 0, off). For pods behind clients that pool connections (an ingress, an L7 load balancer with the pods as targets: nap's webhook gives those 1s); not behind clients that pin theirs (kube-proxy, an L4 load balancer): the wait would last --max"

// LiveWaitFlag gives nap's hooks the live wait (inject.Options.Live), wherever it is a
// flag: napctl inject, controller and install.
const LiveWaitFlag = "live-wait"

// LiveWaitHelp is LiveWaitFlag's help.
const LiveWaitHelp = "hooks that run nap from the ConfigMap read, when they start, the wait nap's controller keeps for the pod's workload now (nap --live; the ConfigMap " + kube.LiveWaitsName + "), never less than their own: the nap volume projects it beside the binary"
