package app

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

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

// completeCluster registers, on c and its subcommands, kubectl's completions of what
// names a part of the cluster: --context, --cluster and --user from the kubeconfig, and
// -n/--namespace from the cluster's namespaces (through the command's own --kubeconfig
// and --context, where it has them; nothing where the cluster cannot be read).
func completeCluster(c *cobra.Command) {
	fl := c.Flags()
	config := func(cmd *cobra.Command) clientcmd.ClientConfig {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		over := &clientcmd.ConfigOverrides{}
		if f := cmd.Flags().Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
			rules.ExplicitPath = f.Value.String()
		}
		if f := cmd.Flags().Lookup("context"); f != nil {
			over.CurrentContext = f.Value.String()
		}
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, over)
	}
	names := func(pick func(api clientcmdapi.Config) []string) cobra.CompletionFunc {
		return func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			raw, err := config(cmd).RawConfig()
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return slices.Sorted(slices.Values(pick(raw))), cobra.ShellCompDirectiveNoFileComp
		}
	}
	for flag, pick := range map[string]func(clientcmdapi.Config) []string{
		"context": func(c clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.Contexts)) },
		"cluster": func(c clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.Clusters)) },
		"user":    func(c clientcmdapi.Config) []string { return slices.Collect(maps.Keys(c.AuthInfos)) },
	} {
		if fl.Lookup(flag) != nil {
			c.RegisterFlagCompletionFunc(flag, names(pick))
		}
	}
	if fl.Lookup("namespace") != nil {
		c.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			rc, err := config(cmd).ClientConfig()
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			rc.Timeout = 5 * time.Second
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, ns := range list.Items {
				out = append(out, ns.Name)
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		})
	}
	for _, sub := range c.Commands() {
		completeCluster(sub)
	}
}

// flagError is the usage error of a flag cobra could not parse; for an unknown one, with
// the flags of c whose names are nearest to it (an edit or two away, or that begin with
// it), as cobra suggests commands.
func flagError(c *cobra.Command, err error) error {
	typed, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return cli.UsageError(c, err)
	}
	var near []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && (editDistance(typed, f.Name) <= 2 || len(typed) >= 3 && strings.HasPrefix(f.Name, typed)) {
			near = append(near, "--"+f.Name)
		}
	})
	if len(near) > 0 {
		err = fmt.Errorf("%w (did you mean %s?)", err, cli.Either(near))
	}
	return cli.UsageError(c, err)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
