package app

import (
	"errors"
	"fmt"
	"strings"

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
	completeVocabulary(root)
	return root
}

// Run runs napctl with args (without the program name) and returns the exit status
// (docs/cli.md): 0 on success; 2 for a usage error (an unknown flag or command, a bad
// argument) and for any error of a command whose 1 is a verdict (cli.VerdictAnnotation:
// lint, status, probe); the status an ExitError asks for; 1 for other errors.
func Run(streams cli.IOStreams, args []string) int { return RunAs("napctl", streams, args) }

// RunAs is Run under another name: "kubectl nap" for the kubectl plugin, so that help,
// errors, the version and the hints in reports show the command the user typed.
func RunAs(name string, streams cli.IOStreams, args []string) int {
	root := NewRootCommand(streams)
	root.Use = name[strings.LastIndex(name, " ")+1:]
	root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	root.SetVersionTemplate(name + " version {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return cli.UsageError(c, err) })
	usageArgs(root)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var exit *cli.ExitError
	switch {
	case errors.As(err, &exit):
		if exit.Err != nil {
			fmt.Fprintln(streams.ErrOut, name+":", exit.Err)
		}
		return exit.Code
	case strings.HasPrefix(err.Error(), "unknown command"):
		fmt.Fprintln(streams.ErrOut, name+":", cli.UsageError(cmd, err))
		return 2
	}
	fmt.Fprintln(streams.ErrOut, name+":", err)
	if cmd != nil && cmd.Annotations[cli.VerdictAnnotation] != "" {
		return 2
	}
	return 1
}

// usageArgs makes every command's argument check a usage error.
func usageArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return cli.UsageError(cmd, err)
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}
