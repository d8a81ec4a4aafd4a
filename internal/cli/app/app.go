package app

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/cli/binary"
	calibratecmd "github.com/nap-k8s/nap/internal/cli/calibrate"
	"github.com/nap-k8s/nap/internal/cli/configmap"
	ctrlcmd "github.com/nap-k8s/nap/internal/cli/controller"
	imagecmd "github.com/nap-k8s/nap/internal/cli/image"
	"github.com/nap-k8s/nap/internal/cli/inject"
	"github.com/nap-k8s/nap/internal/cli/install"
	"github.com/nap-k8s/nap/internal/cli/lint"
	"github.com/nap-k8s/nap/internal/cli/probe"
	servecmd "github.com/nap-k8s/nap/internal/cli/serve"
	"github.com/nap-k8s/nap/internal/cli/status"
	"github.com/nap-k8s/nap/internal/version"
)

// NewRootCommand returns napctl with all its commands.
func NewRootCommand(streams cli.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:           "napctl",
		Short:         "nap ends dropped requests when Kubernetes replaces pods",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.AddCommand(binary.NewCommand(streams), calibratecmd.NewCommand(streams), configmap.NewCommand(streams), ctrlcmd.NewCommand(streams), imagecmd.NewCommand(streams), inject.NewCommand(streams), install.NewCommand(streams), lint.NewCommand(streams), probe.NewCommand(streams), servecmd.NewCommand(streams), status.NewCommand(streams))
	return root
}

// Run runs napctl with args (without the program name) and returns the exit status:
// 0 on success, the status an ExitError asks for, 1 for other errors.
func Run(streams cli.IOStreams, args []string) int { return RunAs("napctl", streams, args) }

// RunAs is Run under another name: "kubectl nap" for the kubectl plugin, so that help
// and errors show the command the user typed.
func RunAs(name string, streams cli.IOStreams, args []string) int {
	root := NewRootCommand(streams)
	root.Use = name
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var exit *cli.ExitError
	if errors.As(err, &exit) {
		if exit.Err != nil {
			fmt.Fprintln(streams.ErrOut, name+":", exit.Err)
		}
		return exit.Code
	}
	fmt.Fprintln(streams.ErrOut, name+":", err)
	return 1
}
