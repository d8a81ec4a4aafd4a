package serve

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/serve"
)

// NewCommand returns the serve command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	var addr, pod, node string
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "serve [--addr :8080] [--pod NAME] [--node NAME]",
		Short: "Serve HTTP that names the pod that answered and how long ago its termination began",
		Long: "A tiny HTTP server for measuring the traffic tail of a terminating pod: how long after\n" +
			"its termination began requests still reach it. Every path answers 200 with the pod's\n" +
			"name; the headers " + serve.PodHeader + "\n" +
			"and " + serve.NodeHeader + " name the pod and its node, and " + serve.TerminatingHeader + " says how\n" +
			"many seconds ago termination began. Termination begins when the pod's preStop hook\n" +
			"calls it:\n\n" +
			"  lifecycle: {preStop: {httpGet: {path: \"" + serve.PreStopPath + "?hold=60s\", port: 8080}}}\n\n" +
			"which it holds for hold (the pod keeps serving meanwhile). SIGTERM shuts it down.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if pod == "" {
				pod, _ = os.Hostname()
			}
			s := serve.New(pod, node)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cli.Warn(cmd, streams, "pod %s on %s", pod, addr)
			return s.ListenAndServe(ctx, addr, grace)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&addr, "addr", ":8080", "listen address")
	fl.StringVar(&pod, "pod", os.Getenv("POD_NAME"), "the pod's name (default $POD_NAME, else the hostname)")
	fl.StringVar(&node, "node", os.Getenv("NODE_NAME"), "the node's name (default $NODE_NAME)")
	fl.DurationVar(&grace, "grace", 5*time.Second, "at SIGTERM, how long in-flight requests may take")
	return cmd
}
