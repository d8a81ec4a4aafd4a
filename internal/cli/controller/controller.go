// Package controller is "napctl controller": nap's in-cluster controller. It keeps the
// nap ConfigMap in every selected namespace (package controller's Publisher).
package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/version"
	"github.com/nap-k8s/nap/kube"
)

type flags struct {
	kubeconfig        string
	configMap         string
	namespaceSelector string
	exclude           []string
	leaderElect       bool
	leaderNamespace   string
	metricsAddr       string
	probeAddr         string
	namespace         string
	webhook           bool
	webhookCertDir    string
	webhookSecret     string
	webhookService    string
	webhookConfig     string
	webhookPort       int
	delay             string
}

// NewCommand returns the controller command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "controller [--namespace-selector SEL] [--exclude-namespaces a,b]",
		Short: "Run nap's controller: the nap ConfigMap in every namespace, preStop hooks at admission",
		Long: "Run in the cluster (napctl install prints its manifests): keep the nap ConfigMap with\n" +
			"this version's binaries in every namespace that --namespace-selector selects (default\n" +
			"all), recreate deleted copies, put back edited ones, never touch a ConfigMap it does not\n" +
			"own; and serve the webhook that adds preStop hooks to opted-in pods, with a certificate\n" +
			"it makes, keeps in --webhook-tls-secret and rotates (or from --webhook-cert-dir).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, streams, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "a kubeconfig; default in-cluster (or $KUBECONFIG)")
	fl.StringVar(&f.configMap, "configmap", kube.ConfigMapName, "the ConfigMap's name")
	fl.StringVar(&f.namespaceSelector, "namespace-selector", "", "a label selector of the namespaces to publish into (default all)")
	fl.StringSliceVar(&f.exclude, "exclude-namespaces", nil, "namespaces never to publish into")
	fl.BoolVar(&f.leaderElect, "leader-elect", true, "elect a leader (Lease), so that replicas can run side by side")
	fl.StringVar(&f.leaderNamespace, "leader-election-namespace", "", "the Lease's namespace (default: the pod's)")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "Prometheus metrics; 0 disables")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "/healthz and /readyz")
	fl.StringVar(&f.namespace, "namespace", "", "the controller's namespace: its Lease and TLS Secret (default $POD_NAMESPACE or the pod's)")
	fl.BoolVar(&f.webhook, "webhook", true, "serve the preStop-injecting webhook")
	fl.StringVar(&f.webhookCertDir, "webhook-cert-dir", "", "serve the webhook with tls.crt and tls.key from this folder (such as a cert-manager Secret) instead of its own")
	fl.StringVar(&f.webhookSecret, "webhook-tls-secret", controller.TLSSecretName, "the Secret in --namespace where the webhook keeps its CA and certificate")
	fl.StringVar(&f.webhookService, "webhook-service", controller.Name, "the webhook's Service in --namespace (the certificate's names)")
	fl.StringVar(&f.webhookConfig, "webhook-configuration", controller.Name, "the MutatingWebhookConfiguration whose caBundle to keep; empty: none")
	fl.IntVar(&f.webhookPort, "webhook-port", 9443, "the webhook's port")
	fl.StringVar(&f.delay, "delay", kube.DefaultDelay, "the webhook's default preStop delay (the pod annotation "+controller.DelayAnnotation+" overrides it)")
	return cmd
}

func run(_ *cobra.Command, streams cli.IOStreams, f *flags) error {
	sel, err := labels.Parse(f.namespaceSelector)
	if err != nil {
		return fmt.Errorf("--namespace-selector: %w", err)
	}
	if _, err := kube.NewPlan(kube.InjectOptions{Delay: f.delay}); err != nil {
		return err
	}
	if f.namespace == "" {
		f.namespace = podNamespace()
	}
	if f.leaderNamespace == "" {
		f.leaderNamespace = f.namespace
	}
	if f.webhook && f.webhookCertDir == "" && f.namespace == "" {
		return fmt.Errorf("the webhook's own TLS needs --namespace (or --webhook-cert-dir, or --webhook=false)")
	}
	log := quietReleasedLease(zap.New(zap.WriteTo(streams.ErrOut), zap.JSONEncoder()))
	ctrl.SetLogger(log)
	var cfg *rest.Config
	if f.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return err
	}
	if cfg.QPS == 0 {
		// As ctrl.GetConfig does: no client-side limit (client-go's default is 5 per
		// second), the API server's priority and fairness paces us.
		cfg.QPS = -1
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                   controller.CacheOptions(f.configMap),
		Metrics:                 metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:  f.probeAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        controller.LeaseName,
		LeaderElectionNamespace: f.leaderNamespace,
		// The process ends when the manager does, so the Lease can be handed over at once.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return err
	}
	p, err := controller.NewPublisher(mgr.GetClient(), mgr.GetEventRecorderFor("nap-controller"), f.configMap, version.Version)
	if err != nil {
		return err
	}
	p.Selector = sel
	for _, ns := range f.exclude {
		p.Exclude[strings.TrimSpace(ns)] = true
	}
	if err := p.SetupWithManager(mgr); err != nil {
		return err
	}
	if f.webhook {
		if err := addWebhook(mgr, cfg, f, log); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}

// addWebhook adds the webhook server and, unless certificates come from a folder, the
// Certs runnable that makes and rotates them.
func addWebhook(mgr ctrl.Manager, cfg *rest.Config, f *flags, log logr.Logger) error {
	v, err := cli.ServerVersion(cfg)
	if err != nil {
		return err
	}
	opts := webhook.Options{Port: f.webhookPort, CertDir: f.webhookCertDir}
	if f.webhookCertDir == "" {
		// Not the manager's cached client: that would list and watch every Secret.
		c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
		if err != nil {
			return err
		}
		certs := &controller.Certs{Client: c, Namespace: f.namespace, SecretName: f.webhookSecret,
			Service: f.webhookService, WebhookConfiguration: f.webhookConfig, Log: log.WithName("certs")}
		if err := mgr.Add(certs); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("webhook-certificate", certs.Ready); err != nil {
			return err
		}
		opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.GetCertificate = certs.GetCertificate }}
	}
	srv := webhook.NewServer(opts)
	// The nodes' informer starts with the manager, not at the first admission.
	if _, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Node{}); err != nil {
		return err
	}
	srv.Register(controller.WebhookPath, (&controller.Injector{
		Options:  kube.InjectOptions{Kube: &v, Delay: f.delay, ConfigMap: f.configMap},
		Nodes:    controller.NodesFrom(mgr.GetCache()),
		Recorder: mgr.GetEventRecorderFor("nap-webhook"),
	}).Handler())
	if err := mgr.Add(srv); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("webhook", srv.StartedChecker())
}

// podNamespace is $POD_NAMESPACE, else the service account's namespace, else "".
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
