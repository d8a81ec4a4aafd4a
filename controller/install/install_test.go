package install

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/internal/testutil/golden"
	"github.com/nap-k8s/nap/lint"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

// The install manifests are golden files; deploy/nap.yaml is the default one.
func TestInstallGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		opts Options
	}{
		{"../../deploy/nap.yaml", Options{}},
		{"testdata/cert-manager.yaml", Options{CertManager: true}},
		{"testdata/custom.yaml", Options{Namespace: "platform-nap", Image: "registry.example/napctl@sha256:0123", Waits: wait.Input{Delay: "15s"},
			NamespaceSelector: "team in (shop,search)", ExcludeNamespaces: []string{"kube-public", "sandbox"}, RollMissed: true}},
		{"testdata/policy-default.yaml", Options{Scope: scope.Default}},
		{"testdata/admission-policy.yaml", Options{Admission: AdmissionPolicy}},
		{"testdata/admission-policy-beta.yaml", Options{Admission: AdmissionPolicy, PolicyAPIVersion: controller.PolicyAPIV1beta, Waits: wait.Input{Delay: "4.5"}}},
		{"testdata/nap-image.yaml", Options{Delivery: inject.DeliveryAuto, NapImage: "registry.example/nap:1"}},
		{"testdata/admission-policy-nap-image.yaml", Options{Admission: AdmissionPolicy, Delivery: inject.DeliveryImage, NapImage: "registry.example/nap:1"}},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			got, err := YAML(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tc.file, got)
			// nap's own checks find nothing to say about nap's own installation.
			objs, err := manifest.Read(tc.file, got)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range lint.Lint(objs, lint.Options{}) {
				t.Errorf("napctl lint: %+v", f)
			}
		})
	}
}

func TestInstallBadOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Namespace: "Nap_System"}, `namespace "Nap_System"`},
		{Options{Waits: wait.Input{Delay: "soon"}}, `"soon"`},
		{Options{Waits: wait.Input{Kind: "eventually"}}, `"eventually"`},
		{Options{Waits: wait.Input{Min: "90s"}}, `--min 1m30s is longer than --max 1m0s`},
		{Options{NamespaceSelector: "team in ("}, `namespace selector "team in ("`},
		{Options{ExcludeNamespaces: []string{"ok", "Not_OK"}}, `excluded namespace "Not_OK"`},
		{Options{Scope: "everything"}, `policy "everything"`},
		{Options{Admission: "cel"}, `admission "cel"`},
		{Options{Delivery: inject.DeliveryImage, NapImage: "registry example/nap"}, `needs --nap-image`},
		{Options{Delivery: inject.DeliveryImage}, `needs --nap-image`},
		{Options{Delivery: "oci", NapImage: "r/nap:1"}, `--delivery "oci"`},
		{Options{Admission: AdmissionPolicy, Delivery: inject.DeliveryAuto, NapImage: "r/nap:1"}, `--delivery auto needs the webhook`},
		{Options{Admission: AdmissionPolicy, CertManager: true}, `--admission policy has no webhook`},
		{Options{Admission: AdmissionPolicy, Scope: scope.Default}, `--policy default needs the webhook`},
		{Options{Admission: AdmissionPolicy, PolicyAPIVersion: "admissionregistration.k8s.io/v1alpha1"}, `v1alpha1`},
		{Options{PodLabels: map[string]string{"app.kubernetes.io/name": "mine"}}, `pod label app.kubernetes.io/name: the controller's own`},
		{Options{PodLabels: map[string]string{"team": "a b"}}, `pod label team=a b`},
		{Options{WebhookTimeout: 31}, `webhook timeout 31s: want 1 to 30`},
		{Options{WebhookPort: 70000}, `webhook port 70000`},
		{Options{MetricsPort: 8081}, `metrics 8081, health 8081: want three different ones`},
		{Options{CertManagerIssuer: &IssuerRef{Name: "corp-ca"}}, `--cert-manager-issuer corp-ca: the issuer of cert-manager's certificate needs --cert-manager`},
		{Options{CertManager: true, CertManagerIssuer: &IssuerRef{Name: "Corp CA"}}, `cert-manager issuer "Corp CA"`},
	} {
		if _, err := Objects(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %s", tc.opts, err, tc.want)
		}
	}
}

// Least privilege, read from the objects: nothing on Secrets cluster-wide, no
// wildcards, names wherever a rule can carry them.
func TestInstallRBAC(t *testing.T) {
	for _, opts := range []Options{{}, {CertManager: true}, {Admission: AdmissionPolicy}} {
		cm := opts.CertManager
		objs, err := Objects(opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			var rules []rbacv1.PolicyRule
			clusterWide := false
			switch r := o.(type) {
			case *rbacv1.ClusterRole:
				rules, clusterWide = r.Rules, true
			case *rbacv1.Role:
				rules = r.Rules
			}
			for _, rule := range rules {
				for _, s := range slices.Concat(rule.Verbs, rule.Resources, rule.APIGroups) {
					if s == "*" {
						t.Errorf("a wildcard: %+v", rule)
					}
				}
				secrets := slices.Contains(rule.Resources, "secrets")
				if secrets && (clusterWide || cm || opts.Admission == AdmissionPolicy) {
					t.Errorf("Secrets in %T (%+v): %+v", o, opts, rule)
				}
				if opts.Admission == AdmissionPolicy && slices.Contains(rule.Resources, "mutatingwebhookconfigurations") {
					t.Errorf("webhook configurations with no webhook: %+v", rule)
				}
				named := slices.Contains(rule.Resources, "mutatingwebhookconfigurations") || secrets || slices.Contains(rule.Resources, "leases")
				if named && !slices.Equal(rule.Verbs, []string{"create"}) && len(rule.ResourceNames) != 1 {
					t.Errorf("a rule without a resource name: %+v", rule)
				}
			}
		}
	}
}

// DetectAdmission on API servers that serve the beta API only, or neither (as the
// discovery documents of 1.34 with the beta enabled, and of 1.33, list them).
func TestDetectAdmission(t *testing.T) {
	list := func(gv string, names ...string) *metav1.APIResourceList {
		l := &metav1.APIResourceList{GroupVersion: gv}
		for _, n := range names {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: n})
		}
		return l
	}
	for _, tc := range []struct {
		resources []*metav1.APIResourceList
		want      Admission
		gv        string
	}{
		{[]*metav1.APIResourceList{list(controller.PolicyAPIV1, "mutatingwebhookconfigurations", "validatingadmissionpolicies"),
			list(controller.PolicyAPIV1beta, "mutatingadmissionpolicies", "mutatingadmissionpolicybindings")}, AdmissionPolicy, controller.PolicyAPIV1beta},
		{[]*metav1.APIResourceList{list(controller.PolicyAPIV1, "mutatingwebhookconfigurations", "validatingadmissionpolicies")}, AdmissionWebhook, ""},
	} {
		a, gv, why, err := DetectAdmission(&fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{Resources: tc.resources}})
		if err != nil || a != tc.want || gv != tc.gv || why == "" {
			t.Errorf("%v: %s %s (%s) %v, want %s %s", tc.resources, a, gv, why, err, tc.want, tc.gv)
		}
	}
}

// TestInstallAppliesPolicy: --admission auto picks the policy on a real API server
// (v1.37, which serves the v1 API), and with --admission policy every object is
// accepted there (it type-checks the policy's CEL).
func TestInstallAppliesPolicy(t *testing.T) {
	cfg := kubeenv.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// --admission auto on this API server (v1.37): the policy, v1.
	a, gv, why, err := DetectAdmission(discovery.NewDiscoveryClientForConfigOrDie(cfg))
	if err != nil || a != AdmissionPolicy || gv != controller.PolicyAPIV1 {
		t.Errorf("DetectAdmission: %s %s (%s) %v, want policy %s", a, gv, why, err, controller.PolicyAPIV1)
	}
	objs, err := Objects(Options{Admission: AdmissionPolicy})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: u}
		if err := c.Create(context.Background(), obj); err != nil {
			t.Errorf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// TestInstallApplies: every object is accepted by a real API server, and
// `kubectl kustomize deploy` builds the same objects as napctl install.
func TestInstallApplies(t *testing.T) {
	cfg := kubeenv.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The optional NetworkPolicy too.
	for _, o := range append(slices.Clone(objs), NetworkPolicyObject(controller.DefaultNamespace)) {
		if err := c.Create(context.Background(), o.(client.Object)); err != nil {
			t.Errorf("%T: %v", o, err)
		}
	}

	out, err := exec.Command(kubeenv.Kubectl(t), "kustomize", filepath.Join(kubeenv.RepoRoot(), "deploy")).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize deploy: %v\n%s", err, out)
	}
	want, err := YAML(Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := func(u map[string]any) string {
		m := u["metadata"].(map[string]any)
		ns, _ := m["namespace"].(string)
		return u["kind"].(string) + "/" + ns + "/" + m["name"].(string)
	}
	parse := func(name string, b []byte) map[string]map[string]any {
		docs, err := manifest.Read(name, b)
		if err != nil {
			t.Fatal(err)
		}
		byKey := map[string]map[string]any{}
		for _, d := range docs {
			var u unstructured.Unstructured
			if err := d.Decode(&u.Object); err != nil {
				t.Fatal(err)
			}
			byKey[key(u.Object)] = u.Object
		}
		return byKey
	}
	built, installed := parse("kustomize", out), parse("install", want)
	if len(built) != len(installed) || len(built) != len(objs) {
		t.Fatalf("kustomize built %d objects, install prints %d", len(built), len(installed))
	}
	for k, w := range installed {
		if !reflect.DeepEqual(built[k], w) {
			a, _ := yaml.Marshal(built[k])
			b, _ := yaml.Marshal(w)
			t.Errorf("%s differs:\nkustomize:\n%s\ninstall:\n%s", k, a, b)
		}
	}
}

// A PodDisruptionBudget of minAvailable 1 over one replica would block every drain of
// its node: there is one only with 2 replicas or more.
func TestInstallPDBWithReplicas(t *testing.T) {
	for _, c := range []struct {
		replicas int32
		want     bool
	}{{0, true}, {1, false}, {2, true}, {3, true}} {
		objs, err := Objects(Options{Replicas: c.replicas})
		if err != nil {
			t.Fatal(err)
		}
		has := slices.ContainsFunc(objs, func(o runtime.Object) bool { _, ok := o.(*policyv1.PodDisruptionBudget); return ok })
		if has != c.want {
			t.Errorf("replicas %d: a PodDisruptionBudget %v, want %v", c.replicas, has, c.want)
		}
	}
}

// TestLinuxNodes: the controller's pods go to Linux nodes, with the user's selector,
// unless it names an OS.
func TestLinuxNodes(t *testing.T) {
	for _, tc := range []struct {
		sel  map[string]string
		want string
	}{
		{nil, "map[kubernetes.io/os:linux]"},
		{map[string]string{"pool": "infra"}, "map[kubernetes.io/os:linux pool:infra]"},
		{map[string]string{"kubernetes.io/os": "linux", "pool": "infra"}, "map[kubernetes.io/os:linux pool:infra]"},
		{map[string]string{"kubernetes.io/os": "plan9"}, "map[kubernetes.io/os:plan9]"},
	} {
		if got := fmt.Sprint(linuxNodes(tc.sel)); got != tc.want {
			t.Errorf("linuxNodes(%v) = %s, want %s", tc.sel, got, tc.want)
		}
	}
}

// limitedCritical is the API server's ResourceQuota configuration of a cluster that
// admits critical pods only under a quota naming their class (Kubernetes' docs, "Limit
// Priority Class consumption by default"; managed clusters ship it).
const limitedCritical = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ResourceQuotaConfiguration
    limitedResources:
    - resource: pods
      matchScopes:
      - scopeName: PriorityClass
        operator: In
        values: [system-cluster-critical, system-node-critical]
`

// The controller's pods are critical by default (a kubelet under node pressure never
// evicts them), and the ResourceQuota beside them admits them on an API server that
// allows critical pods only under a quota: its pod is refused in a namespace without it.
func TestCriticalPodsQuota(t *testing.T) {
	config := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(config, []byte(limitedCritical), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := kubeenv.APIServerWithFlags(t, map[string]string{"admission-control-config-file": config})
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	objs, err := Objects(Options{})
	if err != nil {
		t.Fatal(err)
	}
	var template corev1.PodTemplateSpec
	var quota *corev1.ResourceQuota
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			template = o.Spec.Template
		case *corev1.ResourceQuota:
			quota = o
		}
		if err := c.Create(ctx, o.(client.Object)); err != nil {
			t.Fatalf("%T: %v", o, err)
		}
	}
	if quota == nil || template.Spec.PriorityClassName != DefaultPriorityClassName {
		t.Fatalf("napctl install's defaults: ResourceQuota %v, priority class %q; want both", quota != nil, template.Spec.PriorityClassName)
	}
	// What the quota controller does first (envtest runs none): the quota's status.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	if err := c.Status().Update(ctx, quota); err != nil {
		t.Fatal(err)
	}
	// A replica as the ReplicaSet controller makes it, in nap's namespace and in one
	// without the quota.
	create := func(ns string) (*corev1.Pod, error) {
		if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: controller.Name, Namespace: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "replica", Namespace: ns, Labels: template.Labels}, Spec: *template.Spec.DeepCopy()}
		return p, c.Create(ctx, p)
	}
	p, err := create(controller.DefaultNamespace)
	if err != nil {
		t.Fatalf("the controller's pod beside its ResourceQuota: %v", err)
	}
	if p.Spec.Priority == nil || *p.Spec.Priority < 2_000_000_000 {
		t.Errorf("the controller's pod: priority %v, want a critical one (at least 2,000,000,000)", p.Spec.Priority)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "no-quota"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := create("no-quota"); err == nil || !strings.Contains(err.Error(), "insufficient quota to match these scopes") {
		t.Errorf("the same pod where no quota names its class: %v, want refused (insufficient quota)", err)
	}
}
