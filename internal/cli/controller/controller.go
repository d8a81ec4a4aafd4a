package controller

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/version"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

type flags struct {
	kubeconfig        string
	napImage          string
	delivery          string
	configMap         string
	namespaceSelector string
	exclude           []string
	owner             string
	leaderElect       bool
	leaderNamespace   string
	metricsAddr       string
	probeAddr         string
	pprofAddr         string
	namespace         string
	webhook           bool
	webhookCertDir    string
	webhookSecret     string
	webhookService    string
	webhookConfig     string
	webhookPort       int
	waits             wait.Input
	policy            string
	report            bool
	rollMissed        bool
	learn             bool
	liveWait          bool
	routeOutEvicted   bool
	policyReports     bool
	rollInterval      time.Duration
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
	fl.StringVar(&f.owner, "owner-cluster-role", "", "the installation's ClusterRole, made the owner of every ConfigMap published: deleting it (uninstalling nap) removes them from every namespace")
	fl.BoolVar(&f.leaderElect, "leader-elect", true, "elect a leader (Lease), so that replicas can run side by side")
	fl.StringVar(&f.leaderNamespace, "leader-election-namespace", "", "the Lease's namespace (default: the pod's)")
	fl.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "Prometheus metrics; 0 disables")
	fl.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "/healthz and /readyz")
	fl.StringVar(&f.pprofAddr, "pprof-bind-address", "", "Go's /debug/pprof (heap and CPU profiles) on this address, such as 127.0.0.1:6060; default off")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "the controller's namespace: its Lease and TLS Secret (default $POD_NAMESPACE or the pod's)")
	fl.BoolVar(&f.webhook, "webhook", true, "serve the preStop-injecting webhook")
	fl.StringVar(&f.webhookCertDir, "webhook-cert-dir", "", "serve the webhook with tls.crt and tls.key from this folder (such as a cert-manager Secret) instead of its own")
	fl.StringVar(&f.webhookSecret, "webhook-tls-secret", controller.TLSSecretName, "the Secret in --namespace where the webhook keeps its CA and certificate")
	fl.StringVar(&f.webhookService, "webhook-service", controller.Name, "the webhook's Service in --namespace (the certificate's names)")
	fl.StringVar(&f.webhookConfig, "webhook-configuration", controller.Name, "the MutatingWebhookConfiguration whose caBundle to keep; empty: none")
	fl.IntVar(&f.webhookPort, "webhook-port", 9443, "the webhook's port")
	fl.StringVar(&f.policy, scope.Flag, string(scope.OptIn), "which pods get the delay without an explicit opt-in: "+scope.Help())
	fl.BoolVar(&f.report, "report", true, "report what fails silently: pods the webhook missed, hooks that cannot work, FailedPreStopHook events (Warning events on workloads, metrics)")
	fl.BoolVar(&f.policyReports, "policy-reports", true, "with --report: also keep a policy report per namespace of what is unprotected (OpenReports' Report, or the wg-policy PolicyReport, whichever the cluster serves)")
	fl.BoolVar(&f.routeOutEvicted, "route-out-evicted", true, "delete a pod its kubelet evicts (node pressure), or stops because its node shuts down (graceful node shutdown), at once, with its own grace period, when its preStop holds it: a kubelet keeps such a pod ready until it has stopped, so its Services would send to it through the whole preStop")
	fl.BoolVar(&f.learn, "learn", false, fmt.Sprintf("learn each route's wait (the paths that reach a pod) from its pods' terminations, nap's verdict: a late one raises it at once (to %d times the wait that ended plus %v when traffic still arrived at its end, else to its last traffic plus %[2]v), %d quiet ones set it to their longest tail plus %[2]v, not below what the last late one proved until %[5]d quiet ones came after it, never below a stored calibration; kept in the ConfigMap %[4]s of --namespace, and given to each pod the webhook admits",
		traffic.LearnRaise, traffic.LearnMargin, traffic.LearnSettle, kube.LearnedConfigMap, traffic.LearnKeep))
	fl.BoolVar(&f.liveWait, cli.LiveWaitFlag, false, "the webhook's "+cli.LiveWaitHelp+" (the Reporter keeps it; needs --report)")
	fl.BoolVar(&f.rollMissed, "roll-missed", false, "evict the pods the webhook missed, one at a time through the Eviction API (PodDisruptionBudgets hold), so that they are recreated with a delay")
	fl.DurationVar(&f.rollInterval, "roll-interval", time.Minute, "with --roll-missed: at most one eviction per this interval")
	fl.StringVar(&f.delivery, "delivery", string(inject.DeliveryConfigMap), "how the webhook delivers nap: configmap, image (an image volume of --nap-image; Kubernetes 1.35+, containerd 2.1+ or CRI-O 1.31+), or auto (the image where every node can mount it, at each admission)")
	fl.StringVar(&f.napImage, "nap-image", "", "nap's image (napctl image), for --delivery image or auto")
	cli.WaitFlags(fl, &f.waits)
	return cmd
}

// memoryLimit is the Go memory limit the controller sets itself (false: none): 90% of
// its container's memory limit (the Deployment hands it down in MemoryLimitEnv, from
// resources.limits.memory), so that the collector works harder before the kernel kills
// the process, not after. GOMEMLIMIT, when set, decides; so does a container without
// a limit (the API gives the node's memory then, which is no limit of ours: it is read
// only when below 1 TiB).
func memoryLimit(gomemlimit, container string) (int64, bool) {
	if gomemlimit != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(container, 10, 64)
	if err != nil || n <= 0 || n >= 1<<40 {
		return 0, false
	}
	return n / 10 * 9, true
}

func run(_ *cobra.Command, streams cli.IOStreams, f *flags) error {
	sel, err := labels.Parse(f.namespaceSelector)
	if err != nil {
		return fmt.Errorf("--namespace-selector: %w", err)
	}
	installed, err := scope.Parse(f.policy)
	if err != nil {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("--%s: %w", scope.Flag, err)}
	}
	waits, err := f.waits.Defaults()
	if err != nil {
		return err
	}
	if err := controller.CheckWaits(waits, inject.Options{Delivery: inject.Delivery(f.delivery), Image: f.napImage}); err != nil {
		return err
	}
	if f.namespace == "" {
		f.namespace = podNamespace()
	}
	if f.leaderNamespace == "" {
		f.leaderNamespace = f.namespace
	}
	if f.learn && (f.namespace == "" || !f.report) {
		return &cli.ExitError{Code: 2, Err: fmt.Errorf("--learn needs --namespace (where the waits learned are kept) and --report (which counts the terminations)")}
	}
	if f.webhook && f.webhookCertDir == "" && f.namespace == "" {
		return fmt.Errorf("the webhook's own TLS needs --namespace (or --webhook-cert-dir, or --webhook=false)")
	}
	if os.Getenv("GOGC") == "" {
		// The controller holds every pod and namespace in its caches and is mostly at
		// rest: half Go's default heap headroom costs little GC time and keeps its
		// memory near what the caches hold. GOGC, when set, decides.
		debug.SetGCPercent(50)
	}
	log := quietReleasedLease(zap.New(zap.WriteTo(streams.ErrOut), zap.JSONEncoder()))
	ctrl.SetLogger(log)
	if limit, ok := memoryLimit(os.Getenv("GOMEMLIMIT"), os.Getenv(controller.MemoryLimitEnv)); ok {
		debug.SetMemoryLimit(limit)
		log.Info("memory limit", "container", os.Getenv(controller.MemoryLimitEnv), "GOMEMLIMIT", limit)
	}
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
	o := controller.ManagerOptions{
		ConfigMap: f.configMap, NamespaceSelector: sel, Exclude: f.exclude, Owner: f.owner, Version: version.Version,
		LeaderElect: f.leaderElect, LeaderNamespace: f.leaderNamespace, MetricsAddr: f.metricsAddr, ProbeAddr: f.probeAddr, PprofAddr: f.pprofAddr,
		Webhook: f.webhook, Waits: waits, Scope: installed, Delivery: inject.Delivery(f.delivery), NapImage: f.napImage, Namespace: f.namespace, SecretName: f.webhookSecret,
		Service: f.webhookService, Configuration: f.webhookConfig, CertDir: f.webhookCertDir, Port: f.webhookPort,
		Report: f.report, RollMissed: f.rollMissed, RollInterval: f.rollInterval, RouteOutEvicted: f.routeOutEvicted, Learn: f.learn, LiveWait: f.liveWait, PolicyReports: f.policyReports, Log: log,
	}
	if f.webhook {
		if o.Kube, err = cli.ServerVersion(cfg); err != nil {
			return err
		}
	}
	mgr, err := controller.NewManager(cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
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
