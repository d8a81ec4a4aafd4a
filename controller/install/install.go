package install

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/version"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

// Options shape `napctl install`.
type Options struct {
	Namespace string // default nap-system
	Image     string // the napctl image
	// CertManager: cert-manager issues the webhook's certificate (a self-signed Issuer
	// and a Certificate) and its CA injector fills the caBundle; otherwise the
	// controller bootstraps and rotates its own (Certs).
	CertManager bool
	Waits       wait.Input // the webhook's and the policy's default preStop waits
	// Scope is which pods get the delay without an explicit opt-in (default opt-in);
	// scope.Label on a namespace overrides it there.
	Scope scope.Scope
	// NamespaceSelector and ExcludeNamespaces choose where the ConfigMap is published
	// (default every namespace); see napctl controller.
	NamespaceSelector string
	ExcludeNamespaces []string
	// RollMissed lets the controller evict the pods its webhook missed (see napctl
	// controller --roll-missed), and grants it pods/eviction.
	RollMissed bool
	// Learn runs the controller with the waits learned from production (napctl
	// controller --learn), and grants it the ConfigMap that keeps them.
	Learn bool
	// LiveWait has the webhook give hooks that read the live wait (napctl controller
	// --live-wait).
	LiveWait bool
	// Admission is how pods get the delay: AdmissionWebhook (default), or
	// AdmissionPolicy, a MutatingAdmissionPolicy the API server runs (Kubernetes 1.36,
	// or 1.34+ with the beta API enabled); PolicyAPIVersion is its API version
	// (controller.PolicyAPIV1 by default, or controller.PolicyAPIV1beta).
	Admission        Admission
	PolicyAPIVersion string
	// Delivery and NapImage: how nap reaches the pods (default the ConfigMap): an image
	// volume of NapImage (napctl image), or auto (the webhook alone: the image where
	// every node mounts image volumes, at each admission).
	Delivery inject.Delivery
	NapImage string
	// Replicas of the controller (default 2), and its Resources (default Resources()).
	Replicas  int32
	Resources *corev1.ResourceRequirements
	// Where the controller's pods may run (none set: any Linux node, spread over nodes by
	// a preferred anti-affinity): NodeSelector, Tolerations, PriorityClassName and
	// TopologySpreadConstraints, as in a pod spec. NodeSelector always has
	// kubernetes.io/os: linux (the image is Linux's) unless it names an OS itself;
	// PriorityClassName is DefaultPriorityClassName unless set (NoPriorityClass: none).
	NodeSelector              map[string]string
	Tolerations               []corev1.Toleration
	PriorityClassName         string
	TopologySpreadConstraints []corev1.TopologySpreadConstraint
	// How the controller's image is pulled: ImagePullPolicy (default the kubelet's:
	// IfNotPresent for a tag, Always for :latest), ImagePullSecrets (the names of
	// Secrets of the controller's namespace, for a private registry).
	ImagePullPolicy  corev1.PullPolicy
	ImagePullSecrets []string
	// PodAnnotations go on the controller's pods (a mesh's opt-out, a cost tag), and
	// PodLabels beside the labels that select them (which they may not name).
	PodAnnotations map[string]string
	PodLabels      map[string]string
	// Affinity replaces the default one: the replicas prefer different nodes.
	Affinity *corev1.Affinity
	// HostNetwork runs the controller in its nodes' network namespace, for a cluster whose
	// API server cannot reach pod addresses (a custom CNI on a managed control plane):
	// its ports are then its nodes' ports, WebhookPort, MetricsPort and HealthPort
	// (default controller.WebhookPort, MetricsPort, HealthPort), and two replicas never
	// share a node (the scheduler keeps host ports apart).
	HostNetwork                          bool
	WebhookPort, MetricsPort, HealthPort int32
	// WebhookTimeout is how long the API server waits for the webhook, in seconds (1 to
	// 30; default 5); past it, the pod is admitted without a delay (the webhook fails
	// open).
	WebhookTimeout int32
	// CertManagerIssuer, with CertManager: an issuer of the cluster's signs the webhook's
	// certificate, instead of the self-signed Issuer nap makes.
	CertManagerIssuer *IssuerRef
	// NetworkPolicy adds one that lets into the controller's pods only the API server's
	// calls to the webhook, the kubelet's probes and scrapes of the metrics from pods
	// of the cluster (NetworkPolicyObject).
	NetworkPolicy bool
}

// IssuerRef names a cert-manager issuer: Kind (default Issuer, of the controller's
// namespace; ClusterIssuer, or an external issuer's kind) and Group (default
// cert-manager.io), as a Certificate's spec.issuerRef.
type IssuerRef struct {
	Name  string `json:"name"`
	Kind  string `json:"kind,omitempty"`
	Group string `json:"group,omitempty"`
}

// DefaultWebhookTimeout is the API server's wait for the webhook, in seconds, unless
// Options say otherwise.
const DefaultWebhookTimeout = 5

// routeDelay is how long the controller's routes take to follow a replica, both ways:
// its preStop keeps a stopping replica serving that long, and a new one counts as
// available that long after it is ready (the lab's in-cluster routes follow within
// about 2 s: docs/downtime.md).
const routeDelay = 5 * time.Second

// Admission is the way pods get their delay at admission.
type Admission string

// The ways.
const (
	AdmissionWebhook Admission = "webhook" // the controller's mutating webhook
	AdmissionPolicy  Admission = "policy"  // a MutatingAdmissionPolicy: CEL in the API server, no webhook
)

// The Pod Security level the controller's namespace enforces: the controller meets
// "restricted". napctl install labels the Namespace it writes; helm cannot label the
// one --create-namespace makes, so the chart's notes say how where it is missing.
const (
	PodSecurityLabel = "pod-security.kubernetes.io/enforce"
	PodSecurityLevel = "restricted"
)

// DefaultPriorityClassName is the controller's pods' PriorityClass unless the user names
// another (napctl install --priority-class-name, the chart's priorityClassName; "" there
// for none): a critical one, which a kubelet under node pressure never evicts and always
// admits (kubelettypes.IsCriticalPod). Without it the kubelet evicted the leader among
// the first pods of a node short of disk, and no replica routed pods out until the other
// took the lease (docs/testing.md, run 19) — the moment a node's own evictions need it.
// Kubernetes allows it in any namespace since 1.17; where a cluster admits critical pods
// only under a quota (ResourceQuota's limitedResources), the CriticalPodsQuota lets them in.
const DefaultPriorityClassName = "system-cluster-critical"

// CriticalPodsQuota is the name of the ResourceQuota written beside a priority class:
// it lets the controller's pods of that class into its namespace where the API server
// admits such pods only under a quota that names their class. Its cap, criticalPods, is
// no limit the controller meets (its replicas, one surge, the ones still stopping).
const (
	CriticalPodsQuota = controller.Name + "-critical-pods"
	criticalPods      = 100
)

// NoPriorityClass in Options.PriorityClassName gives the controller's pods none (and no
// ResourceQuota): not a name Kubernetes allows, so no class's.
const NoPriorityClass = "-"

// DefaultImage is the controller image of this version: napctl, FROM scratch.
var DefaultImage = version.Image(version.ControllerImage, version.Version)

// Objects returns every object of an installation, in the order to apply them:
// Namespace, ServiceAccount, RBAC, Service, the ResourceQuota that admits the pods' priority
// class (CriticalPodsQuota, with a PriorityClassName), Deployment, PodDisruptionBudget
// (with 2 replicas or more), the ValidatingAdmissionPolicy that lets only the controller write
// the nap ConfigMaps (controller.ConfigMapGuard) and its binding,
// MutatingWebhookConfiguration (and cert-manager's Issuer and Certificate when asked);
// with AdmissionPolicy, the MutatingAdmissionPolicy and its binding instead of the
// webhook's configuration, and the controller runs without its webhook (it still
// publishes the ConfigMap and reports).
//
// The RBAC is the least the controller needs: cluster-wide, namespaces, nodes, Services
// and pods (read), ConfigMaps (it publishes into every namespace: create, and every
// other verb on its own name alone, which its cache lists by; its own ClusterRole owns
// them, read by name), Events (write; read FailedPreStopHook), pods/eviction only with
// RollMissed, and its own MutatingWebhookConfiguration by name; in its namespace only,
// its TLS Secret and its Lease. It cannot read any other Secret.
func Objects(o Options) ([]runtime.Object, error) {
	o, waits, err := o.resolved()
	if err != nil {
		return nil, err
	}
	webhook := o.Admission == AdmissionWebhook
	ns := o.Namespace
	appLabels := controllerLabels()
	meta := func(name string, namespaced bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name, Labels: appLabels}
		if namespaced {
			m.Namespace = ns
		}
		return m
	}
	tm := typeMeta

	namespace := &corev1.Namespace{TypeMeta: tm("v1", "Namespace"), ObjectMeta: meta(ns, false)}
	namespace.Labels = map[string]string{
		"app.kubernetes.io/name": controller.Name,
		PodSecurityLabel:         PodSecurityLevel,
	}
	sa := &corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: meta(controller.Name, true)}

	clusterRole, clusterBinding, role, roleBinding := rbac(o, meta, webhook)
	svc := service(meta, appLabels, webhook)
	installed := cmp.Or(o.Scope, scope.OptIn)
	args, volumes, mounts := controllerArgs(o, installed, webhook)
	quota := criticalQuota(o, meta)
	deploy := deployment(o, meta, appLabels, webhook, args, volumes, mounts)
	// The PodDisruptionBudget keeps a replica serving through drains; with one replica it
	// would keep any node from draining, so there is none.
	var pdb *policyv1.PodDisruptionBudget
	if cmp.Or(o.Replicas, 2) >= 2 {
		pdb = &policyv1.PodDisruptionBudget{TypeMeta: tm("policy/v1", "PodDisruptionBudget"), ObjectMeta: meta(controller.Name, true), Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: appLabels}}}
	}
	var netpol *networkingv1.NetworkPolicy
	if o.NetworkPolicy {
		netpol = NetworkPolicyObject(ns)
	}
	guard, guardBinding := controller.ConfigMapGuard(controller.Name+"-configmap", kube.ConfigMapName, controller.ServiceAccountUser(ns, controller.Name), o.ExcludeNamespaces)
	guard.Labels, guardBinding.Labels = appLabels, appLabels

	if !webhook {
		// The API server injects: whole seconds as the native sleep, which every
		// kubelet the skew policy allows beside an API server with this API has (1.31+
		// beside 1.34); a sleep of 0 seconds needs 1.33 kubelets, allowed beside 1.36.
		mp, mpb, err := controller.AdmissionPolicy(controller.Name, controller.AdmissionPolicyOptions{
			APIVersion: o.PolicyAPIVersion, Waits: waits, Native: true, NativeZero: o.PolicyAPIVersion != controller.PolicyAPIV1beta, Image: policyImage(o),
			Exclude: []string{ns, "kube-system"}})
		if err != nil {
			return nil, err
		}
		mp.Labels, mpb.Labels = appLabels, appLabels
		return withoutNil(namespace, sa, clusterRole, clusterBinding, role, roleBinding, svc, quota, deploy, pdb, netpol, guard, guardBinding, mp, mpb), nil
	}
	mwc := controller.WebhookConfiguration(controller.Name, ns, controller.Name, nil, installed)
	mwc.Labels = appLabels
	for i := range mwc.Webhooks {
		mwc.Webhooks[i].TimeoutSeconds = ptr.To(o.WebhookTimeout)
	}
	objs := withoutNil(namespace, sa, clusterRole, clusterBinding, role, roleBinding, svc, quota, deploy, pdb, netpol, guard, guardBinding, mwc)
	if o.CertManager {
		mwc.Annotations = map[string]string{"cert-manager.io/inject-ca-from": ns + "/" + controller.Name}
		issuer := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
			"metadata": map[string]any{"name": controller.Name, "namespace": ns},
			"spec":     map[string]any{"selfSigned": map[string]any{}},
		}}
		cert := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
			"metadata": map[string]any{"name": controller.Name, "namespace": ns},
			"spec": map[string]any{
				"secretName": controller.TLSSecretName,
				"dnsNames":   []any{controller.Name + "." + ns + ".svc", controller.Name + "." + ns + ".svc.cluster.local"},
				"issuerRef":  map[string]any{"kind": "Issuer", "name": controller.Name},
			},
		}}
		objs = objs[:len(objs)-1]
		if o.CertManagerIssuer != nil {
			ref, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.CertManagerIssuer)
			if err != nil {
				return nil, err
			}
			cert.Object["spec"].(map[string]any)["issuerRef"] = ref
		} else {
			objs = append(objs, issuer)
		}
		objs = append(objs, cert, mwc)
	}
	return objs, nil
}

// controllerLabels are the labels of the controller's objects, and the selector of its
// pods.
func controllerLabels() map[string]string {
	return map[string]string{"app.kubernetes.io/name": controller.Name, "app.kubernetes.io/component": "controller"}
}

// NetworkPolicyObject is the controller's NetworkPolicy in namespace ns: into its pods,
// the webhook's port from anywhere (the API server calls it from addresses no selector
// names), the health port from anywhere (the kubelet probes it from its node), the
// metrics port from any pod of the cluster (Prometheus), nothing else. Egress is left
// open: the controller talks to the API server, whose address is the cluster's own.
func NetworkPolicyObject(ns string) *networkingv1.NetworkPolicy {
	labels := controllerLabels()
	port := func(name string) []networkingv1.NetworkPolicyPort {
		p := intstr.FromString(name)
		return []networkingv1.NetworkPolicyPort{{Port: &p}}
	}
	return &networkingv1.NetworkPolicy{TypeMeta: typeMeta("networking.k8s.io/v1", "NetworkPolicy"),
		ObjectMeta: metav1.ObjectMeta{Name: controller.Name, Namespace: ns, Labels: labels},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: labels},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: port("webhook")},
				{Ports: port("health")},
				{Ports: port("metrics"), From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}},
			},
		}}
}

// withoutNil are objs but the nil ones (the objects an installation does not have).
func withoutNil(objs ...runtime.Object) []runtime.Object {
	out := objs[:0]
	for _, o := range objs {
		if o != nil && !reflect.ValueOf(o).IsNil() {
			out = append(out, o)
		}
	}
	return out
}

// typeMeta is an object's apiVersion and kind.
func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// resolved is o with its defaults, checked, and its default waits read.
func (o Options) resolved() (Options, wait.Defaults, error) {
	if o.Namespace == "" {
		o.Namespace = controller.DefaultNamespace
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return Options{}, wait.Defaults{}, fmt.Errorf("namespace %q: %s", o.Namespace, errs[0])
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	switch o.PriorityClassName {
	case "":
		o.PriorityClassName = DefaultPriorityClassName
	case NoPriorityClass:
		o.PriorityClassName = ""
	}
	if o.Delivery == "" {
		o.Delivery = inject.DeliveryConfigMap
	}
	if o.Delivery != inject.DeliveryConfigMap && (o.NapImage == "" || strings.ContainsAny(o.NapImage, " \t\n\"'")) {
		return Options{}, wait.Defaults{}, fmt.Errorf("--delivery %s needs --nap-image, nap's image reference (napctl image writes it), not %q", o.Delivery, o.NapImage)
	}
	waits, err := o.Waits.Defaults()
	if err != nil {
		return Options{}, wait.Defaults{}, err
	}
	if err := controller.CheckWaits(waits, inject.Options{Delivery: o.Delivery, Image: o.NapImage}); err != nil {
		return Options{}, wait.Defaults{}, err
	}
	if _, err := labels.Parse(o.NamespaceSelector); err != nil {
		return Options{}, wait.Defaults{}, fmt.Errorf("namespace selector %q: %w", o.NamespaceSelector, err)
	}
	for _, ns := range o.ExcludeNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return Options{}, wait.Defaults{}, fmt.Errorf("excluded namespace %q: %s", ns, errs[0])
		}
	}
	if o.Admission == "" {
		o.Admission = AdmissionWebhook
	}
	webhook := o.Admission == AdmissionWebhook
	if _, err := scope.Parse(string(cmp.Or(o.Scope, scope.OptIn))); err != nil {
		return Options{}, wait.Defaults{}, err
	}
	if cmp.Or(o.Replicas, 2) < 1 {
		return Options{}, wait.Defaults{}, fmt.Errorf("replicas %d: want at least 1", o.Replicas)
	}
	switch o.ImagePullPolicy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return Options{}, wait.Defaults{}, fmt.Errorf("image pull policy %q: want Always, IfNotPresent or Never", o.ImagePullPolicy)
	}
	for _, s := range o.ImagePullSecrets {
		if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
			return Options{}, wait.Defaults{}, fmt.Errorf("image pull secret %q: %s", s, errs[0])
		}
	}
	for k := range o.PodAnnotations {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return Options{}, wait.Defaults{}, fmt.Errorf("pod annotation %q: %s", k, errs[0])
		}
	}
	for k, v := range o.PodLabels {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			return Options{}, wait.Defaults{}, fmt.Errorf("pod label %s=%s: %s", k, v, errs[0])
		}
		if _, ok := controllerLabels()[k]; ok {
			return Options{}, wait.Defaults{}, fmt.Errorf("pod label %s: the controller's own, which selects its pods", k)
		}
	}
	o.WebhookPort, o.MetricsPort, o.HealthPort = cmp.Or(o.WebhookPort, controller.WebhookPort), cmp.Or(o.MetricsPort, controller.MetricsPort), cmp.Or(o.HealthPort, controller.HealthPort)
	for _, p := range []struct {
		name string
		port int32
	}{{"webhook", o.WebhookPort}, {"metrics", o.MetricsPort}, {"health", o.HealthPort}} {
		if p.port < 1 || p.port > 65535 {
			return Options{}, wait.Defaults{}, fmt.Errorf("%s port %d: want 1 to 65535", p.name, p.port)
		}
	}
	if o.WebhookPort == o.MetricsPort || o.WebhookPort == o.HealthPort || o.MetricsPort == o.HealthPort {
		return Options{}, wait.Defaults{}, fmt.Errorf("ports webhook %d, metrics %d, health %d: want three different ones", o.WebhookPort, o.MetricsPort, o.HealthPort)
	}
	o.WebhookTimeout = cmp.Or(o.WebhookTimeout, DefaultWebhookTimeout)
	if o.WebhookTimeout < 1 || o.WebhookTimeout > 30 {
		return Options{}, wait.Defaults{}, fmt.Errorf("webhook timeout %ds: want 1 to 30 (the API server's bounds)", o.WebhookTimeout)
	}
	if r := o.CertManagerIssuer; r != nil {
		if !o.CertManager {
			return Options{}, wait.Defaults{}, fmt.Errorf("--cert-manager-issuer %s: the issuer of cert-manager's certificate needs --cert-manager", r.Name)
		}
		if errs := validation.IsDNS1123Subdomain(r.Name); len(errs) > 0 {
			return Options{}, wait.Defaults{}, fmt.Errorf("cert-manager issuer %q: %s", r.Name, errs[0])
		}
	}
	switch {
	case o.Admission != AdmissionWebhook && o.Admission != AdmissionPolicy:
		return Options{}, wait.Defaults{}, fmt.Errorf("admission %q: want webhook or policy", o.Admission)
	case !webhook && o.CertManager:
		return Options{}, wait.Defaults{}, fmt.Errorf("--cert-manager issues the webhook's certificate; --admission policy has no webhook")
	case !webhook && o.Scope.ByService():
		return Options{}, wait.Defaults{}, fmt.Errorf("--%s %s needs the webhook: %s", scope.Flag, o.Scope, controller.PolicyCannot[0])
	case !webhook && o.Delivery == inject.DeliveryAuto:
		return Options{}, wait.Defaults{}, fmt.Errorf("--delivery auto needs the webhook: whether the nodes mount image volumes is not for CEL to see (--delivery image or configmap)")
	}
	return o, waits, nil
}

// rbac is the controller's RBAC: cluster-wide, then in its namespace (see Objects).
func rbac(o Options, meta func(string, bool) metav1.ObjectMeta, webhook bool) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.Role, *rbacv1.RoleBinding) {
	ns := o.Namespace
	tm := typeMeta
	clusterRole := &rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: meta(controller.Name, false),
		Rules: slices.Concat([]rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
			// The kubelets' versions: the native sleep only where every kubelet has it.
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"}},
			// The Services Ingresses and the other front doors name (kube.Doors): more
			// paths to their pods (each pod's wait by its paths).
			// and their classes, whose parameters may decide where their load balancers send
			// (kube.ClassTargets: the IngressClassParams, with the doors' group below).
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingressclasses", "ingresses"}, Verbs: []string{"get", "list", "watch"}},
		}, doorRules(), []rbacv1.PolicyRule{
			// The Reporter: pods the webhook missed, hooks that cannot work.
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}},
			// evicted.Router: a pod its kubelet evicts, or stops because its node shuts
			// down, whose preStop holds it, deleted at once (its own grace period, its UID
			// a precondition) so that it leaves its Services while the preStop holds; it
			// reads the kubelets' Evicted Events (the list and watch of events below) and
			// the nodes' Ready condition (above).
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}},
			// The ConfigMaps it publishes, by name: list and watch too, as its cache asks
			// for them (metadata.name=nap). Create cannot be limited to a name (the object
			// does not exist yet).
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{kube.ConfigMapName}, Verbs: []string{"get", "list", "watch", "update", "delete"}},
			// The live waits of the pods whose hooks read them (nap --live), kept by the
			// Reporter, read once per namespace by name.
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{kube.LiveWaitsName}, Verbs: []string{"get", "update", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			// The Reporter reads FailedPreStopHook events (its cache lists only those).
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list", "watch"}},
			// Its own ClusterRole, the owner of the ConfigMaps it publishes: uninstalling
			// nap removes them.
			{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{controller.Name}, Verbs: []string{"get"}},
			// The Reporter's policy reports, in whichever format the cluster serves.
			{APIGroups: []string{policyreport.OpenReports.GroupVersion.Group, policyreport.WGPolicy.GroupVersion.Group},
				Resources: []string{policyreport.OpenReports.Resource, policyreport.WGPolicy.Resource}, Verbs: []string{"get", "list", "create", "update", "delete"}},
		})}
	if o.RollMissed {
		clusterRole.Rules = append(clusterRole.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}})
	}
	if webhook && !o.CertManager { // with cert-manager, its CA injector writes the caBundle instead
		clusterRole.Rules = append(clusterRole.Rules, rbacv1.PolicyRule{APIGroups: []string{"admissionregistration.k8s.io"},
			Resources: []string{"mutatingwebhookconfigurations"}, ResourceNames: []string{controller.Name}, Verbs: []string{"get", "update"}})
	}
	subjects := []rbacv1.Subject{{Kind: "ServiceAccount", Name: controller.Name, Namespace: ns}}
	clusterBinding := &rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: meta(controller.Name, false),
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: controller.Name}, Subjects: subjects}
	role := &rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: meta(controller.Name, true),
		Rules: []rbacv1.PolicyRule{
			// create cannot be limited to a name (the object does not exist yet).
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{controller.LeaseName}, Verbs: []string{"get", "update"}},
			// The calibration kept in the cluster (napctl calibrate --store), read by name.
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{kube.CalibrationConfigMap}, Verbs: []string{"get", "list", "watch"}},
		}}
	if o.Learn {
		// The waits learned from production: kept, and read back, by name (created
		// through the ClusterRole's create).
		role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{kube.LearnedConfigMap}, Verbs: []string{"get", "list", "watch", "update"}})
	}
	if webhook && !o.CertManager {
		role.Rules = append(role.Rules,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{controller.TLSSecretName}, Verbs: []string{"get", "update"}})
	}
	roleBinding := &rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta(controller.Name, true),
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: controller.Name}, Subjects: subjects}

	return clusterRole, clusterBinding, role, roleBinding
}

// doorRules let the controller read the front doors of kube.Doors, a rule per group in
// the order Doors first names it, each rule's resources sorted, and the
// IngressClassParams in its group's: nothing is asked of a group the cluster does not
// serve.
func doorRules() []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	at := map[string]int{}
	for _, d := range kube.Doors {
		i, ok := at[d.Group]
		if !ok {
			i = len(out)
			at[d.Group] = i
			out = append(out, rbacv1.PolicyRule{APIGroups: []string{d.Group}, Verbs: []string{"get", "list", "watch"}})
		}
		out[i].Resources = append(out[i].Resources, d.Resource)
	}
	if i, ok := at[kube.IngressClassParamsGroup]; ok {
		out[i].Resources = append(out[i].Resources, kube.IngressClassParamsResource)
	} else {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{kube.IngressClassParamsGroup}, Resources: []string{kube.IngressClassParamsResource}, Verbs: []string{"get", "list", "watch"}})
	}
	for i := range out {
		slices.Sort(out[i].Resources)
	}
	return out
}

// service is the controller's Service: its webhook (when it serves one) and its metrics.
func service(meta func(string, bool) metav1.ObjectMeta, labels map[string]string, webhook bool) *corev1.Service {
	var ports []corev1.ServicePort
	if webhook {
		ports = append(ports, corev1.ServicePort{Name: "webhook", Port: 443, TargetPort: intstr.FromString("webhook")})
	}
	ports = append(ports, corev1.ServicePort{Name: "metrics", Port: controller.MetricsPort, TargetPort: intstr.FromString("metrics")})
	return &corev1.Service{TypeMeta: typeMeta("v1", "Service"), ObjectMeta: meta(controller.Name, true), Spec: corev1.ServiceSpec{
		Selector: labels, Ports: ports}}
}

// controllerArgs are the controller's flags, and the volumes and mounts they name.
func controllerArgs(o Options, installed scope.Scope, webhook bool) ([]string, []corev1.Volume, []corev1.VolumeMount) {
	ns := o.Namespace
	args := []string{"controller",
		"--namespace=" + ns,
		"--owner-cluster-role=" + controller.Name,
	}
	args = append(args, o.Waits.Args()...)
	args = append(args,
		"--"+scope.Flag+"="+string(installed),
		fmt.Sprintf("--webhook-port=%d", o.WebhookPort),
		fmt.Sprintf("--metrics-bind-address=:%d", o.MetricsPort),
		fmt.Sprintf("--health-probe-bind-address=:%d", o.HealthPort),
	)
	if o.NamespaceSelector != "" {
		args = append(args, "--namespace-selector="+o.NamespaceSelector)
	}
	if len(o.ExcludeNamespaces) > 0 {
		args = append(args, "--exclude-namespaces="+strings.Join(o.ExcludeNamespaces, ","))
	}
	if o.RollMissed {
		args = append(args, "--roll-missed")
	}
	if o.Learn {
		args = append(args, "--learn")
	}
	if o.LiveWait {
		args = append(args, "--live-wait")
	}
	if o.Delivery != inject.DeliveryConfigMap {
		args = append(args, "--delivery="+string(o.Delivery), "--nap-image="+o.NapImage)
	}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	switch {
	case !webhook:
		args = append(args, "--webhook=false")
	case o.CertManager:
		args = append(args, "--webhook-cert-dir=/tls")
		volumes = []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: controller.TLSSecretName}}}}
		mounts = []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}}
	default:
		args = append(args, "--webhook-tls-secret="+controller.TLSSecretName, "--webhook-configuration="+controller.Name)
	}
	return args, volumes, mounts
}

// deployment is the controller's Deployment, running args.
func deployment(o Options, meta func(string, bool) metav1.ObjectMeta, labels map[string]string, webhook bool, args []string, volumes []corev1.Volume, mounts []corev1.VolumeMount) *appsv1.Deployment {
	appLabels, tm := labels, typeMeta
	var ports []corev1.ContainerPort
	if webhook {
		ports = append(ports, corev1.ContainerPort{Name: "webhook", ContainerPort: o.WebhookPort})
	}
	ports = append(ports, corev1.ContainerPort{Name: "metrics", ContainerPort: o.MetricsPort},
		corev1.ContainerPort{Name: "health", ContainerPort: o.HealthPort})
	yes, no := true, false
	uid := int64(65532)
	replicas := cmp.Or(o.Replicas, 2)
	resources := Resources()
	if o.Resources != nil {
		resources = *o.Resources
	}
	affinity := o.Affinity
	if affinity == nil {
		affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100,
				PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: appLabels}}}}}}
	}
	podLabels := maps.Clone(o.PodLabels)
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	maps.Copy(podLabels, appLabels)
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("health")}}, PeriodSeconds: 5}
	}
	deploy := &appsv1.Deployment{TypeMeta: tm("apps/v1", "Deployment"), ObjectMeta: meta(controller.Name, true), Spec: appsv1.DeploymentSpec{
		Replicas: &replicas,
		// A replica counts as available (helm install --wait, kubectl rollout status,
		// the rolling update's next step) routeDelay after it is ready: by then its
		// endpoint has reached the kube-proxies and the API server's calls through the
		// Service reach it. Without it, helm install --wait returned while the Service
		// still refused, and a pod admitted right after was not injected.
		MinReadySeconds: int32(routeDelay / time.Second),
		Selector:        &metav1.LabelSelector{MatchLabels: appLabels},
		Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))}},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: o.PodAnnotations},
			Spec: corev1.PodSpec{
				ServiceAccountName: controller.Name,
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid,
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Affinity:    affinity,
				HostNetwork: o.HostNetwork,
				Containers: []corev1.Container{{
					Name:            "controller",
					Image:           o.Image,
					ImagePullPolicy: o.ImagePullPolicy,
					Args:            args,
					Ports:           ports,
					// The API server calls the webhook through the Service: keep serving
					// until a stopping replica is out of its endpoints (nap's own lint
					// asks for this). The image carries nap for it.
					Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
						Command: []string{kube.ControllerImageNapPath, routeDelay.String()}}}},
					// Its memory limit, from which it sets its Go memory limit.
					Env: []corev1.EnvVar{{Name: controller.MemoryLimitEnv, ValueFrom: &corev1.EnvVarSource{
						ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "controller", Resource: "limits.memory"}}}},
					ReadinessProbe: probe("/readyz"),
					LivenessProbe:  probe("/healthz"),
					Resources:      resources,
					SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
						Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					VolumeMounts: mounts,
				}},
				Volumes:                   volumes,
				ImagePullSecrets:          pullSecrets(o.ImagePullSecrets),
				NodeSelector:              linuxNodes(o.NodeSelector),
				Tolerations:               o.Tolerations,
				PriorityClassName:         o.PriorityClassName,
				TopologySpreadConstraints: o.TopologySpreadConstraints,
			},
		},
	}}
	return deploy
}

// criticalQuota is the ResourceQuota that admits the controller's pods of o's priority
// class into its namespace (nil without one), as kube-system's add-ons are: a cluster
// may admit critical pods only under a quota whose scope names their class.
func criticalQuota(o Options, meta func(string, bool) metav1.ObjectMeta) *corev1.ResourceQuota {
	if o.PriorityClassName == "" {
		return nil
	}
	return &corev1.ResourceQuota{TypeMeta: typeMeta("v1", "ResourceQuota"), ObjectMeta: meta(CriticalPodsQuota, true), Spec: corev1.ResourceQuotaSpec{
		Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(criticalPods, resource.DecimalSI)},
		ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
			ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{o.PriorityClassName}}}},
	}}
}

// linuxNodes is sel with kubernetes.io/os: linux, unless it names an OS itself.
func linuxNodes(sel map[string]string) map[string]string {
	if _, ok := sel[corev1.LabelOSStable]; ok {
		return sel
	}
	out := map[string]string{corev1.LabelOSStable: "linux"}
	maps.Copy(out, sel)
	return out
}

// pullSecrets are the references to the Secrets names.
func pullSecrets(names []string) []corev1.LocalObjectReference {
	var out []corev1.LocalObjectReference
	for _, n := range names {
		out = append(out, corev1.LocalObjectReference{Name: n})
	}
	return out
}

// YAML is Objects as one YAML stream, the form `napctl install` prints and
// deploy/ holds: no null fields, no empty status.
func YAML(o Options) ([]byte, error) {
	objs, err := Objects(o)
	if err != nil {
		return nil, err
	}
	var out []byte
	for i, obj := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		b, err := objectYAML(u)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, b...)
	}
	return out, nil
}

// objectYAML is one object as YAML: no null fields, no empty status or spec.
func objectYAML(u map[string]any) ([]byte, error) {
	delete(u, "status") // nothing to say before the objects exist
	if spec, ok := u["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(u, "spec")
	}
	dropNulls(u)
	return yaml.Marshal(u)
}

// dropNulls removes null values (such as creationTimestamp) from v, recursively.
func dropNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range v {
			dropNulls(e)
		}
	}
}

// DetectAdmission is --admission auto: the MutatingAdmissionPolicy where the API server
// serves it (v1, else the beta API a cluster enabled), the webhook otherwise. why says
// what decided, for the user.
func DetectAdmission(d discovery.DiscoveryInterface) (a Admission, apiVersion, why string, err error) {
	for _, gv := range []string{controller.PolicyAPIV1, controller.PolicyAPIV1beta} {
		l, err := d.ServerResourcesForGroupVersion(gv)
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return "", "", "", fmt.Errorf("asking the API server for %s: %w", gv, err)
		}
		for _, r := range l.APIResources {
			if r.Name == "mutatingadmissionpolicies" {
				return AdmissionPolicy, gv, "the API server serves " + gv + " MutatingAdmissionPolicy", nil
			}
		}
	}
	return AdmissionWebhook, "", "the API server serves no MutatingAdmissionPolicy API (Kubernetes 1.36+, or the beta API enabled on 1.34+)", nil
}

// NeedsWebhook says why o cannot be done by the MutatingAdmissionPolicy ("" when it
// can): --admission auto then chooses the webhook, as the chart's nap.admission does.
func NeedsWebhook(o Options) string {
	switch {
	case o.Scope.ByService():
		return "--" + scope.Flag + " " + string(o.Scope) + " needs the webhook"
	case o.Delivery == inject.DeliveryAuto:
		return "--delivery auto needs the webhook"
	case o.CertManager:
		return "--cert-manager is for the webhook's certificate"
	}
	return ""
}

// policyImage is the image the policy delivers: NapImage with --delivery image, none
// (the ConfigMap) otherwise.
func policyImage(o Options) string {
	if o.Delivery == inject.DeliveryImage {
		return o.NapImage
	}
	return ""
}
