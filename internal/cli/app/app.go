package app

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

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
	// kubectl's -v: the Kubernetes client's log level (6 shows every request), so that
	// kubectl's habit works and is not read as --version.
	var verbosity int
	root.PersistentFlags().IntVarP(&verbosity, "v", "v", 0, "the Kubernetes client's log level, as kubectl's -v (6: every request, on stderr)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if verbosity <= 0 {
			return nil
		}
		var fs flag.FlagSet
		klog.InitFlags(&fs)
		return fs.Set("v", strconv.Itoa(verbosity))
	}
	root.AddCommand(versionCommand(), binary.NewCommand(streams), calibratecmd.NewCommand(streams), configmap.NewCommand(streams), ctrlcmd.NewCommand(streams), imagecmd.NewCommand(streams), inject.NewCommand(streams), install.NewCommand(streams), lint.NewCommand(streams), probe.NewCommand(streams), servecmd.NewCommand(streams), status.NewCommand(streams))
	completeVocabulary(root)
	completeCluster(root)
	return root
}

// versionCommand is `napctl version`: what --version says, as a command too, as kubectl
// and helm have it.
func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s version %s\n", cmd.Root().DisplayName(), version.Version)
			return err
		},
	}
}

// Run runs napctl with args (without the program name) and returns the exit status
// (docs/cli.md): 0 on success; the status an ExitError asks for (1: the verdict of lint,
// status or probe, cli.VerdictAnnotation); 2 for every error (a usage error, a bad value
// or input, the cluster, a write).
func Run(streams cli.IOStreams, args []string) int { return RunAs("napctl", streams, args) }

// RunAs is Run under another name: "kubectl nap" for the kubectl plugin, so that help,
// errors, the version and the hints in reports show the command the user typed.
func RunAs(name string, streams cli.IOStreams, args []string) int {
	root := NewRootCommand(streams)
	root.Use = name[strings.LastIndex(name, " ")+1:]
	root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	root.SetVersionTemplate(name + " version {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	if strings.Contains(name, " ") {
		pluginCompletion(root)
	}
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
	// Whatever kept a command from doing what was asked (a bad value or input, the
	// cluster, a write): 2, in every command; 1 is a verdict's alone (lint, status,
	// probe: cli.VerdictAnnotation), which says so with an ExitError.
	fmt.Fprintln(streams.ErrOut, name+":", err)
	return 2
}

// pluginCompletion is the kubectl plugin's completion command: kubectl completes its
// plugins itself (1.26+, through kubectl_complete-nap, which runs kubectl-nap
// __complete), and a script cobra wrote would register a command named "nap" (the name
// of nap's sleeper, which make puts beside the plugin), so it says how instead.
func pluginCompletion(root *cobra.Command) {
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(&cobra.Command{
		Use:   "completion",
		Short: "How the shell completes kubectl nap",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return &cli.ExitError{Code: 2, Err: errors.New("kubectl completes its plugins itself (kubectl 1.26+): put kubectl_complete-nap, " +
				"which make build writes beside kubectl-nap, on your PATH (it runs kubectl-nap __complete); " +
				"napctl completion bash|zsh|fish|powershell writes a script for napctl")}
		},
	})
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
