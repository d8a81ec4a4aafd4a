// Package controller is "napctl controller": nap's in-cluster controller. It keeps the
// nap ConfigMap in every selected namespace (package controller's Publisher).
package controller

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
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
	webhookCertDir    string
	webhookPort       int
	delay             string
}

// NewCommand returns the controller command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "controller [--namespace-selector SEL] [--exclude-namespaces a,b]",
		Short: "Run nap's controller: the nap ConfigMap in every namespace",
		Long: "Run in the cluster (see napctl install later): keep the nap ConfigMap with this\n" +
			"version's binaries in every namespace that --namespace-selector selects (default all),\n" +
			"recreate deleted copies, put back edited ones, never touch a ConfigMap it does not own.",
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
	fl.StringVar(&f.webhookCertDir, "webhook-cert-dir", "", "serve the preStop-injecting webhook with tls.crt and tls.key from this folder (such as a cert-manager Secret); empty: no webhook")
	fl.IntVar(&f.webhookPort, "webhook-port", 9443, "the webhook's port")
	fl.StringVar(&f.delay, "delay", "10s", "the webhook's default preStop delay (the pod annotation "+controller.DelayAnnotation+" overrides it)")
	return cmd
}

func run(_ *cobra.Command, streams cli.IOStreams, f *flags) error {
	sel, err := labels.Parse(f.namespaceSelector)
	if err != nil {
		return fmt.Errorf("--namespace-selector: %w", err)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(streams.ErrOut), zap.JSONEncoder()))
	cfg, err := ctrl.GetConfig()
	if f.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	}
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                   controller.CacheOptions(f.configMap),
		Metrics:                 metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:  f.probeAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        "nap-controller",
		LeaderElectionNamespace: f.leaderNamespace,
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
	if f.webhookCertDir != "" {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return err
		}
		info, err := dc.ServerVersion()
		if err != nil {
			return fmt.Errorf("the API server's version: %w", err)
		}
		v, err := kube.ParseVersion(info.GitVersion)
		if err != nil {
			return err
		}
		srv := webhook.NewServer(webhook.Options{Port: f.webhookPort, CertDir: f.webhookCertDir})
		srv.Register(controller.WebhookPath, (&controller.Injector{Options: kube.InjectOptions{Kube: &v, Delay: f.delay, ConfigMap: f.configMap}}).Handler())
		if err := mgr.Add(srv); err != nil {
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
