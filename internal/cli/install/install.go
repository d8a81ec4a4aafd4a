package install

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/controller/install"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
)

// NewCommand returns the install command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	o := install.Options{}
	var admission, tolerations, spread, affinity, priorityClass string
	var issuer install.IssuerRef
	var cluster cli.Cluster
	cmd := &cobra.Command{
		Use:   "install [--namespace nap-system] [--image REF] [--cert-manager]",
		Short: "Print the manifests that run nap's controller (pipe them to kubectl apply -f -)",
		Long: "Print every object nap's controller needs: Namespace, ServiceAccount, least-privilege\n" +
			"RBAC, Service, Deployment (2 replicas, non-root, read-only root filesystem, of the\n" +
			"critical priority class a kubelet under node pressure never evicts, with the\n" +
			"ResourceQuota that admits that class where a cluster limits it),\n" +
			"PodDisruptionBudget (with 2 replicas or more), the ValidatingAdmissionPolicy that lets\n" +
			"only the controller write the nap ConfigMaps, and the MutatingWebhookConfiguration.\n" +
			"The controller makes its own\n" +
			"webhook certificate unless --cert-manager asks cert-manager for one.\n\n" +
			"  napctl install | kubectl apply -f -",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, f := range []struct {
				flag, value string
				into        any
				what        string
			}{{"tolerations", tolerations, &o.Tolerations, "a JSON list"}, {"topology-spread-constraints", spread, &o.TopologySpreadConstraints, "a JSON list"},
				{"affinity", affinity, &o.Affinity, "a JSON object"}} {
				if f.value == "" {
					continue
				}
				dec := json.NewDecoder(strings.NewReader(f.value))
				dec.DisallowUnknownFields()
				if err := dec.Decode(f.into); err != nil {
					return fmt.Errorf("--%s %q: want %s, as in a pod spec: %w", f.flag, f.value, f.what, err)
				}
			}
			if issuer != (install.IssuerRef{}) {
				if issuer.Name == "" {
					return fmt.Errorf("--cert-manager-issuer-kind and -group name the kind of --cert-manager-issuer, which is missing")
				}
				o.CertManagerIssuer = &issuer
			}
			// "" is none here, as in the chart; the library's zero is the default.
			o.PriorityClassName = cmp.Or(priorityClass, install.NoPriorityClass)
			if o.Replicas < 1 { // 0 is the library's "default"; typed, it is refused, as the chart refuses it
				return fmt.Errorf("--replicas %d: want at least 1", o.Replicas)
			}
			if err := chooseAdmission(cmd, streams, &o, admission, cluster); err != nil {
				return err
			}
			b, err := install.YAML(o)
			if err != nil {
				return err
			}
			if _, err = streams.Out.Write(b); err != nil {
				return err
			}
			if o.Admission == install.AdmissionPolicy {
				cli.Warn(cmd, streams, "the MutatingAdmissionPolicy (%s) does what the webhook does, except:", cmp.Or(o.PolicyAPIVersion, controller.PolicyAPIV1))
				for _, c := range controller.PolicyCannot {
					fmt.Fprintf(streams.ErrOut, "  - %s\n", c)
				}
			}
			if !cmd.Flags().Changed("image") {
				// Said on stderr, so that `napctl install | kubectl apply -f -` still works.
				cli.Warn(cmd, streams, "note: %s is not published yet. %s", install.DefaultImage, cli.ImageHint("--image"))
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.Namespace, "namespace", "n", controller.DefaultNamespace, "the controller's namespace")
	fl.StringVar(&o.Image, "image", install.DefaultImage, "the controller's image (napctl)")
	fl.StringVar((*string)(&o.ImagePullPolicy), "image-pull-policy", "", "the controller's image pull policy: Always, IfNotPresent or Never (default the kubelet's)")
	cli.Complete(cmd, "image-pull-policy", "Always", "IfNotPresent", "Never")
	fl.StringSliceVar(&o.ImagePullSecrets, "image-pull-secrets", nil, "Secrets of the controller's namespace to pull its image with (a private registry)")
	fl.StringToStringVar(&o.PodAnnotations, "pod-annotations", nil, "annotations of the controller's pods (key=value,...)")
	fl.StringToStringVar(&o.PodLabels, "pod-labels", nil, "labels of the controller's pods, beside those that select them (key=value,...)")
	fl.Int32Var(&o.Replicas, "replicas", 2, "the controller's replicas")
	fl.BoolVar(&o.CertManager, "cert-manager", false, "let cert-manager issue the webhook's certificate and inject its CA")
	fl.StringVar(&issuer.Name, "cert-manager-issuer", "", "with --cert-manager: the issuer of the cluster's to sign it (default a self-signed Issuer of the controller's namespace)")
	fl.StringVar(&issuer.Kind, "cert-manager-issuer-kind", "", "the kind of --cert-manager-issuer: Issuer (cert-manager's default), ClusterIssuer, or an external issuer's")
	fl.StringVar(&issuer.Group, "cert-manager-issuer-group", "", "the API group of --cert-manager-issuer (default cert-manager.io)")
	fl.Int32Var(&o.WebhookTimeout, "webhook-timeout-seconds", install.DefaultWebhookTimeout, "how long the API server waits for the webhook (1 to 30 s); past it the pod is admitted without a delay")
	fl.Int32Var(&o.WebhookPort, "webhook-port", controller.WebhookPort, "the webhook's port in the controller's pods (the node's, with --host-network)")
	fl.Int32Var(&o.MetricsPort, "metrics-port", controller.MetricsPort, "the controller's metrics port")
	fl.Int32Var(&o.HealthPort, "health-port", controller.HealthPort, "the controller's probes' port")
	fl.BoolVar(&o.HostNetwork, "host-network", false, "run the controller in its nodes' network, for an API server that cannot reach pod addresses (a custom CNI on a managed control plane): its ports are the nodes'")
	cli.WaitFlags(fl, &o.Waits)
	fl.StringVar((*string)(&o.Scope), scope.Flag, string(scope.OptIn), "which pods get the delay without an explicit opt-in: "+scope.Help())
	fl.StringVar(&admission, "admission", string(install.AdmissionWebhook), "how pods get the delay: webhook (the controller's), policy (a MutatingAdmissionPolicy the API server runs; Kubernetes 1.36, or 1.34+ with the beta API), or auto (policy where the cluster serves it, asked through --kubeconfig)")
	cli.Complete(cmd, "admission", string(install.AdmissionWebhook), string(install.AdmissionPolicy), "auto")
	fl.StringVar(&o.PolicyAPIVersion, "policy-api", controller.PolicyAPIV1, "with --admission policy: the MutatingAdmissionPolicy API to write ("+controller.PolicyAPIV1+", or "+controller.PolicyAPIV1beta+" where a 1.34 or 1.35 cluster enabled it)")
	fl.StringVar((*string)(&o.Delivery), "delivery", string(inject.DeliveryConfigMap), "how nap reaches the pods: configmap, image (an image volume of --nap-image; Kubernetes 1.35+, containerd 2.1+ or CRI-O 1.31+), or auto (the webhook: the image where every node mounts image volumes)")
	fl.StringVar(&o.NapImage, "nap-image", "", "nap's image (napctl image writes it), for --delivery image or auto")
	cluster.Flags(fl) // with --admission auto: the cluster to ask
	fl.BoolVar(&o.Learn, "learn", false, "let the controller learn each route's wait from its pods' terminations (napctl controller --learn); grants the ConfigMap "+kube.LearnedConfigMap)
	fl.BoolVar(&o.LiveWait, cli.LiveWaitFlag, false, "run the controller with --"+cli.LiveWaitFlag+": the webhook's "+cli.LiveWaitHelp)
	fl.BoolVar(&o.RollMissed, "roll-missed", false, "let the controller evict the pods its webhook missed (admitted while it was down), one a minute through the Eviction API, so that they are recreated with a delay; grants pods/eviction")
	fl.StringVar(&o.NamespaceSelector, "namespace-selector", "", "publish the nap ConfigMap only into namespaces with these labels (default all)")
	fl.StringSliceVar(&o.ExcludeNamespaces, "exclude-namespaces", nil, "namespaces never to publish into")
	fl.StringToStringVar(&o.NodeSelector, "node-selector", nil, "run the controller only on nodes with these labels (key=value,...), and kubernetes.io/os=linux unless they name an OS")
	fl.StringVar(&tolerations, "tolerations", "", `the controller's tolerations, a JSON list as in a pod spec ('[{"key":"dedicated","operator":"Exists"}]')`)
	fl.StringVar(&priorityClass, "priority-class-name", install.DefaultPriorityClassName, "the controller's PriorityClass (\"\" for none): a critical one by default, which a kubelet under node pressure never evicts; with one, a ResourceQuota admits its pods where a cluster allows that class only under a quota")
	fl.StringVar(&spread, "topology-spread-constraints", "", "the controller's topology spread constraints, a JSON list as in a pod spec")
	fl.StringVar(&affinity, "affinity", "", `the controller's affinity, a JSON object as in a pod spec (default: the replicas prefer different nodes)`)
	fl.BoolVar(&o.NetworkPolicy, "network-policy", false, "add a NetworkPolicy that lets into the controller's pods only the webhook's calls, the kubelet's probes and metrics scrapes from pods of the cluster")
	return cmd
}

// chooseAdmission resolves --admission into o: auto asks the cluster, and falls back to
// the webhook where the policy cannot do what was asked (--policy default or audit).
func chooseAdmission(cmd *cobra.Command, streams cli.IOStreams, o *install.Options, admission string, cluster cli.Cluster) error {
	if admission != "auto" {
		o.Admission = install.Admission(admission)
		return nil
	}
	cfg, err := cli.RESTConfig(cluster)
	if err != nil {
		return fmt.Errorf("--admission auto asks the cluster: %w", err)
	}
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	a, gv, why, err := install.DetectAdmission(d)
	if err != nil {
		return fmt.Errorf("--admission auto: %w", err)
	}
	if need := install.NeedsWebhook(*o); a == install.AdmissionPolicy && need != "" {
		a, why = install.AdmissionWebhook, why+", but "+need
	}
	o.Admission, o.PolicyAPIVersion = a, gv
	cli.Warn(cmd, streams, "--admission auto: %s: %s", why, a)
	return nil
}
