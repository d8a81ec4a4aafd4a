package app

import (
	"github.com/spf13/cobra"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/wait"
)

// vocabulary are the flags whose values come from a vocabulary package, completed by
// the shell wherever a command has them. A command's own enumerations (-o, --fail-on)
// are completed where they are defined (cli.OutputFlag, cli.Complete).
func vocabulary() map[string][]string {
	return map[string][]string{
		"mode":     {string(inject.ModeAuto), string(inject.ModeNative), string(inject.ModeBinary)},
		"delivery": inject.DeliveryNames(),
		"wait":     wait.KindNames(),
		"arch":     nap.Arches,
		scope.Flag: scope.Names(),
	}
}

// completeVocabulary registers vocabulary's completions on c and its subcommands.
func completeVocabulary(c *cobra.Command) {
	for flag, values := range vocabulary() {
		if c.Flags().Lookup(flag) != nil {
			cli.Complete(c, flag, values...)
		}
	}
	for _, sub := range c.Commands() {
		completeVocabulary(sub)
	}
}
