package configmap

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/nap-k8s/nap/configmap"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/version"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/nap"
)

type flags struct {
	name, namespace, output string
	arches                  []string
}

// NewCommand returns the configmap command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "configmap [--name nap] [--namespace NS] [--arch amd64,arm64] [-o yaml|json]",
		Short: "Print the ConfigMap that carries nap into a namespace",
		Long: "Print a ConfigMap whose binaryData holds the nap sleeper for each architecture\n" +
			"(keys nap-amd64, nap-arm64), labelled with nap's version and annotated with each\n" +
			"binary's sha256. Apply it in every namespace whose pods run nap:\n\n" +
			"  napctl configmap --namespace shop | kubectl apply -f -",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.CheckOutput(cmd, f.output, "yaml", "json"); err != nil {
				return err
			}
			return run(streams, f)
		},
	}
	cmd.Flags().StringVar(&f.name, "name", kube.ConfigMapName, "the ConfigMap's name")
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "the ConfigMap's namespace (default: none, kubectl's current)")
	cmd.Flags().StringSliceVar(&f.arches, "arch", nap.Arches, "architectures to include: "+strings.Join(nap.Arches, ", "))
	cli.OutputFlag(cmd, &f.output, "yaml", "json")
	return cmd
}

func run(streams cli.IOStreams, f *flags) error {
	cm, err := configmap.New(configmap.Options{Name: f.name, Namespace: f.namespace, Arches: f.arches, Version: version.Version})
	if err != nil {
		return err
	}
	b, err := configmap.Manifest(cm, f.output)
	if err != nil {
		return err
	}
	_, err = streams.Out.Write(b)
	return err
}
