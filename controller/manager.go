package controller

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/nap-k8s/nap/controller/certs"
	"github.com/nap-k8s/nap/controller/evicted"
	"github.com/nap-k8s/nap/controller/report"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/live"
	"github.com/nap-k8s/nap/policyreport/writer"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

// ManagerOptions are the controller's settings (napctl controller's flags).
type ManagerOptions struct {
	ConfigMap         string          // the nap ConfigMap's name
	NamespaceSelector labels.Selector // the namespaces to publish into; nil: all
	Exclude           []string        // namespaces never to publish into
	Version           string          // the binaries' version, on the ConfigMap
	// Owner is the installation's ClusterRole: it owns every ConfigMap published, so
	// that uninstalling nap removes them from every namespace (the garbage collector).
	Owner string

	LeaderElect     bool
	LeaderNamespace string
	MetricsAddr     string
	ProbeAddr       string
	PprofAddr       string // Go's /debug/pprof; "" or "0": off

	// Webhook: serve the injecting webhook, for an API server of version Kube.
	Webhook bool
	Kube    kube.Version
	Waits   wait.Defaults // the default preStop waits
	Scope   scope.Scope   // for pods not opted in explicitly (default opt-in); see scope.Decide
	// Delivery and NapImage: how the webhook delivers nap (inject.Delivery; default the
	// ConfigMap): an image volume of NapImage (napctl image), or auto: the image where
	// every node's kubelet and runtime mount image volumes, as the nodes are at each
	// admission.
	Delivery inject.Delivery
	NapImage string
	// Namespace, SecretName, Service and Configuration locate the webhook's TLS (see
	// certs.Rotator); CertDir serves a certificate from a folder instead (cert-manager).
	Namespace, SecretName, Service, Configuration, CertDir string
	Port                                                   int

	// Report runs the Reporter: pods the webhook missed, hooks that cannot work,
	// FailedPreStopHook events, as events on workloads and metrics. RollMissed lets it
	// evict the pods the webhook missed, one every RollInterval (PDBs hold).
	Report       bool
	RollMissed   bool
	RollInterval time.Duration
	// PolicyReports: the Reporter also keeps a policy report per namespace, in the
	// format the API server serves (writer.Detect); none where it serves neither.
	PolicyReports bool
	// RouteOutEvicted runs evicted.Router: a pod a kubelet evicts, or stops because its
	// node shuts down, whose preStop holds it, is deleted at once (its own grace period),
	// so that it leaves its Services' routes while its preStop holds, as in any deletion.
	RouteOutEvicted bool
	// Learn: the waits learned from production (traffic.Learned). The leader's
	// Reporter hands each termination to a Learner, which keeps what they taught in the
	// ConfigMap kube.LearnedConfigMap; the webhook gives each pod what its route learned
	// beside the stored calibration, and the Reporter judges running pods by it. Its
	// fixed delays are nap's binary, never the native sleep, which says nothing. Needs
	// Namespace.
	Learn bool
	// LiveWait: the webhook's hooks that run nap from the ConfigMap read the live wait
	// (inject.Options.Live), which the Reporter keeps for each workload (nap-waits).
	// The MutatingAdmissionPolicy gives none.
	LiveWait bool

	Log logr.Logger
}

// NewManager wires nap's controller: a manager whose cache holds only what nap reads,
// the Publisher, and with Webhook the webhook server, its certificates (certs.Rotator, run by
// every replica) and the nodes' informer the Injector reads. Start it to run.
func NewManager(cfg *rest.Config, o ManagerOptions) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache:                   CacheOptions(o.ConfigMap),
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        LeaseName,
		LeaderElectionNamespace: o.LeaderNamespace,
		// The process ends when the manager does, so the Lease can be handed over at once.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, err
	}
	p, err := NewPublisher(mgr.GetClient(), mgr.GetEventRecorderFor("nap-controller"), o.ConfigMap, o.Version)
	if err != nil {
		return nil, err
	}
	if o.NamespaceSelector != nil {
		p.Selector = o.NamespaceSelector
	}
	for _, ns := range o.Exclude {
		p.Exclude[strings.TrimSpace(ns)] = true
	}
	var owners []metav1.OwnerReference
	if o.Owner != "" {
		var cr rbacv1.ClusterRole
		// The API reader: the cache does not hold ClusterRoles, nor need to.
		if err := mgr.GetAPIReader().Get(context.Background(), client.ObjectKey{Name: o.Owner}, &cr); err != nil {
			return nil, fmt.Errorf("the owner of the published ConfigMaps, ClusterRole %s: %w", o.Owner, err)
		}
		owners = []metav1.OwnerReference{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: cr.Name, UID: cr.UID}}
		p.OwnedBy(owners[0])
	}
	if err := p.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	// The webhook's decisions, which the Reporter asks too (Refusal); without the
	// webhook, those of the MutatingAdmissionPolicy, which match them
	// (TestPolicyMatchesWebhook) but mount whatever ConfigMap is there.
	v := o.Kube
	injector := &Injector{Options: inject.Options{Kube: &v, ConfigMap: o.ConfigMap, Delivery: o.Delivery, Image: o.NapImage, Live: o.LiveWait}, Waits: o.Waits}
	// The calibration kept in the cluster: each pod's wait by its own paths.
	var calibration *CalibrationSource
	var learned *LearnedSource
	var synced []toolscache.InformerSynced // what a replica's webhook reads beside the manager's cache
	var fronts []client.Object             // the kinds of the front doors: an Ingress, the served Gateway API routes
	if o.Namespace != "" && (o.Webhook || o.Report) {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		calibration = &CalibrationSource{Client: cs, Namespace: o.Namespace, Recorder: mgr.GetEventRecorderFor("nap-controller"), Log: o.Log.WithName("calibration")}
		if err := mgr.Add(calibration); err != nil {
			return nil, err
		}
		d, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return nil, err
		}
		doors, err := live.ServedDoors(d)
		if err != nil {
			return nil, fmt.Errorf("the front doors the API server serves: %w", err)
		}
		var params *schema.GroupVersionKind // the IngressClassParams, where served
		if v, err := live.ServedClassParams(d); err != nil {
			return nil, fmt.Errorf("the IngressClassParams the API server serves: %w", err)
		} else if v != "" {
			params = &schema.GroupVersionKind{Group: kube.IngressClassParamsGroup, Version: v, Kind: kube.IngressClassParamsKind}
		}
		fronts = FrontKinds(doors, params)
		injector.Calibration = calibration.Load
		synced = append(synced, calibration.Informer().HasSynced)
		if o.Learn {
			learned = &LearnedSource{Client: cs, Namespace: o.Namespace, Log: o.Log.WithName("learned")}
			if err := mgr.Add(learned); err != nil {
				return nil, err
			}
			injector.Calibration = Calibrations(calibration.Load, learned.Load)
			// Only nap's binary says what a termination saw: no native sleep while learning.
			injector.Options.Mode = inject.ModeBinary
			synced = append(synced, learned.Informer().HasSynced)
		}
		if o.LiveWait {
			// Only nap's binary reads the live wait: no native sleep.
			injector.Options.Mode = inject.ModeBinary
		}
		injector.Services = ServicesFrom(mgr.GetCache())
		injector.Fronts = FrontendsFrom(mgr.GetCache(), doors, params)
	}
	if o.Webhook {
		if err := addWebhook(mgr, cfg, o, owners, injector, p.Mountable, synced, fronts); err != nil {
			return nil, err
		}
	}
	if o.Report {
		installed := o.Scope
		if !o.Webhook {
			installed = scope.OptIn
		}
		r := &report.Reporter{Client: mgr.GetClient(), Informers: mgr.GetCache(), Recorder: mgr.GetEventRecorderFor("nap-reporter"), Scope: installed, Kube: o.Kube,
			Exclude: map[string]bool{o.Namespace: true, "kube-system": true}, Roll: o.RollMissed, RollInterval: o.RollInterval,
			Log:     o.Log.WithName("reporter"),
			Refusal: RefusalOf(mgr.GetAPIReader(), injector),
			// Protection first: the pod list waits until every namespace has the ConfigMap.
			Before:      func(ctx context.Context) error { return p.Published(ctx, 2*time.Minute) },
			AfterSynced: settle}
		if calibration != nil {
			r.Calibration, r.Fronts, r.FrontKinds, r.Waits = injector.Calibration, injector.Fronts, fronts, o.Waits
			calibration.OnChange = r.Recalibrated
			// The live waits of the pods whose hooks read them (nap --live).
			r.Live, r.LiveReader, r.Owner = true, mgr.GetAPIReader(), owners
		}
		if learned != nil {
			learner := &Learner{Client: learned.Client, Namespace: o.Namespace, Log: o.Log.WithName("learner")}
			if err := mgr.Add(learner); err != nil {
				return nil, err
			}
			r.Learn, learned.OnChange = learner.Observe, r.Recalibrated
		}
		if o.PolicyReports {
			d, err := discovery.NewDiscoveryClientForConfig(cfg)
			if err != nil {
				return nil, err
			}
			f, ok, err := writer.Detect(d)
			if err != nil {
				return nil, err
			}
			if ok {
				r.Reports = &writer.Writer{Client: mgr.GetClient(), Format: f, Owners: owners}
				o.Log.Info("policy reports", "format", f.GroupVersion.WithKind(f.Kind).String())
			} else {
				o.Log.Info("policy reports: the API server serves neither OpenReports nor the wg-policy PolicyReport; none written")
			}
		}
		if err := mgr.Add(r); err != nil {
			return nil, err
		}
	}
	if o.RouteOutEvicted {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		exclude := map[string]bool{metav1.NamespaceSystem: true}
		if o.Namespace != "" {
			exclude[o.Namespace] = true
		}
		if err := mgr.Add(&evicted.Router{Client: cs, Recorder: mgr.GetEventRecorderFor("nap-controller"), Log: o.Log.WithName("evicted"), Exclude: exclude}); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// addWebhook adds the webhook server and, unless certificates come from a folder, the
// certs.Rotator runnable that makes and rotates them.
func addWebhook(mgr ctrl.Manager, cfg *rest.Config, o ManagerOptions, owners []metav1.OwnerReference, explicit *Injector, mountable func(context.Context, string) (string, error), synced []toolscache.InformerSynced, fronts []client.Object) error {
	opts := webhook.Options{Port: o.Port, CertDir: o.CertDir}
	if o.CertDir == "" {
		// Not the manager's cached client: that would list and watch every Secret.
		c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
		if err != nil {
			return err
		}
		rotator := &certs.Rotator{Client: c, Namespace: o.Namespace, SecretName: o.SecretName,
			Service: o.Service, WebhookConfiguration: o.Configuration, Log: o.Log.WithName("certs"), Owners: owners}
		if err := mgr.Add(rotator); err != nil {
			return err
		}
		if err := mgr.AddReadyzCheck("webhook-certificate", rotator.Ready); err != nil {
			return err
		}
		opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) { c.GetCertificate = rotator.GetCertificate }}
	}
	// HTTP/1.1 alone: the API server calls webhooks over it, and a server that speaks
	// HTTP/2 is open to rapid-reset floods (CVE-2023-44487), as controller-runtime's
	// scaffold says.
	opts.TLSOpts = append(opts.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	srv := webhook.NewServer(opts)
	// The nodes' informer starts with the manager, not at the first admission.
	nodes, err := WatchNodes(context.Background(), mgr.GetCache())
	if err != nil {
		return err
	}
	explicit.Nodes, explicit.Recorder, explicit.Mountable = nodes.Nodes, mgr.GetEventRecorderFor("nap-webhook"), mountable
	srv.Register(WebhookPath, explicit.Handler())
	// The webhooks read namespaces, nap's ConfigMaps (Mountable) and Services from
	// informers that start with the manager, and a replica is ready only once they have
	// synced: an informer started by the first admission that asks (on a replica that
	// does not lead, the Publisher starts none) held that admission past the API
	// server's timeout during a rollout, and the pod went without a delay.
	for _, o := range append([]client.Object{&corev1.Namespace{}, &corev1.ConfigMap{}, &corev1.Service{}}, fronts...) {
		inf, err := mgr.GetCache().GetInformer(context.Background(), o, cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		synced = append(synced, inf.HasSynced)
	}
	if err := mgr.AddReadyzCheck("webhook-caches", func(*http.Request) error {
		for _, s := range synced {
			if !s() {
				return errors.New("the webhook's caches have not synced yet")
			}
		}
		return nil
	}); err != nil {
		return err
	}
	policy := *explicit
	policy.Scope = cmp.Or(o.Scope, scope.OptIn)
	policy.NamespaceLabels = NamespaceLabelsFrom(mgr.GetCache())
	policy.Services = ServicesFrom(mgr.GetCache()) // and the explicit webhook's, with a calibration
	srv.Register(PolicyWebhookPath, policy.Handler())
	if err := mgr.Add(srv); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("webhook", srv.StartedChecker())
}

// settle is called once the caches are full and the first report is done. Filling the
// pod cache decodes pages of full pods: several times what the summarized cache then
// holds. Go gives freed memory back to the system only slowly; at rest the controller
// should hold what its caches hold, so give it back at once.
func settle() { debug.FreeOSMemory() }
