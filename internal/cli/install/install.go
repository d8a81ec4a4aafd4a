// Package install is "napctl install": the manifests that run nap's controller.
package install

import (
	"github.com/spf13/cobra"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/internal/cli"
)

// NewCommand returns the install command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	o := controller.InstallOptions{}
	cmd := &cobra.Command{
		Use:   "install [--namespace nap-system] [--image REF] [--cert-manager]",
		Short: "Print the manifests that run nap's controller (pipe them to kubectl apply -f -)",
		Long: "Print every object nap's controller needs: Namespace, ServiceAccount, least-privilege\n" +
			"RBAC, Service, Deployment (2 replicas, non-root, read-only root filesystem),\n" +
			"PodDisruptionBudget and the MutatingWebhookConfiguration. The controller makes its own\n" +
			"webhook certificate unless --cert-manager asks cert-manager for one.\n\n" +
			"  napctl install | kubectl apply -f -",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := controller.InstallYAML(o)
			if err != nil {
				return err
			}
			_, err = streams.Out.Write(b)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.Namespace, "namespace", "n", controller.DefaultNamespace, "the controller's namespace")
	fl.StringVar(&o.Image, "image", controller.DefaultImage, "the controller's image (napctl)")
	fl.BoolVar(&o.CertManager, "cert-manager", false, "let cert-manager issue the webhook's certificate and inject its CA")
	fl.StringVar(&o.Delay, "delay", "10s", "the webhook's default preStop delay")
	fl.StringVar(&o.NamespaceSelector, "namespace-selector", "", "publish the nap ConfigMap only into namespaces with these labels (default all)")
	fl.StringSliceVar(&o.ExcludeNamespaces, "exclude-namespaces", nil, "namespaces never to publish into")
	return cmd
}
