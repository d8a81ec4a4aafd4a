package install

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/internal/testutil/golden"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

// charts/nap is what Chart generates (go test -update rewrites it), and nothing else.
func TestChartGolden(t *testing.T) {
	files, err := Chart()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", ChartDir)
	var want []string
	for name, b := range files {
		want = append(want, name)
		golden.Check(t, filepath.Join(dir, name), b)
	}
	var have []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			have = append(have, rel)
		}
		return nil
	})
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(want, have) {
		t.Errorf("%s holds %v, the generator writes %v", dir, have, want)
	}
}

// The chart and napctl install render the same objects for the same values (the chart
// leaves the Namespace to helm install --create-namespace), and the chart refuses
// what napctl install refuses, with its words: the real helm, helm template.
func TestChartMatchesInstall(t *testing.T) {
	helm := testenv.Tool(t, "helm")
	// helm merges maps of values into the defaults: requests name both.
	custom := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}}
	const mapV1 = "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy"
	for _, tc := range []struct {
		name, values string
		apiVersions  []string // what the API server serves, for auto
		namespace    string
		opts         Options
		refused      string      // in helm's error
		monitoring   *Monitoring // and the monitoring objects
	}{
		{name: "defaults", opts: Options{}},
		{name: "cert-manager", values: "certManager: {enabled: true}", opts: Options{CertManager: true}},
		{name: "monitoring", namespace: "ops", values: "metrics: {serviceMonitor: {enabled: true}, prometheusRule: {enabled: true}, dashboard: {enabled: true}}",
			opts: Options{Namespace: "ops"}, monitoring: &Monitoring{}},
		{name: "monitoring for a Prometheus that selects by label", namespace: "ops",
			values: "metrics: {serviceMonitor: {enabled: true, labels: {release: kube-prometheus-stack}, interval: 1m}, prometheusRule: {enabled: true, labels: {release: kube-prometheus-stack, role: alert-rules}}, dashboard: {enabled: true}}",
			opts:   Options{Namespace: "ops"}, monitoring: &Monitoring{ServiceMonitorLabels: map[string]string{"release": "kube-prometheus-stack"}, Interval: "1m",
				RuleLabels: map[string]string{"release": "kube-prometheus-stack", "role": "alert-rules"}}},
		{name: "pod labels; affinity", values: `podLabels: {team: platform, cost-center: "42"}
affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: node-role.kubernetes.io/infra, operator: Exists}]}]}}}`,
			opts: Options{PodLabels: map[string]string{"team": "platform", "cost-center": "42"}, Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "node-role.kubernetes.io/infra", Operator: corev1.NodeSelectorOpExists}}}}}}}}},
		{name: "host network; ports; webhook timeout", values: "hostNetwork: true\nwebhook: {port: 10250, timeoutSeconds: 10}\nmetrics: {port: 10251}\nhealth: {port: 10252}",
			opts: Options{HostNetwork: true, WebhookPort: 10250, MetricsPort: 10251, HealthPort: 10252, WebhookTimeout: 10}},
		{name: "host network; admission policy", values: "hostNetwork: true\nadmission: {mode: policy}\nmetrics: {port: 9090}",
			opts: Options{HostNetwork: true, MetricsPort: 9090, Admission: AdmissionPolicy}},
		{name: "cert-manager; a cluster issuer", values: "certManager: {enabled: true, issuerRef: {name: corp-ca, kind: ClusterIssuer}}",
			opts: Options{CertManager: true, CertManagerIssuer: &IssuerRef{Name: "corp-ca", Kind: "ClusterIssuer"}}},
		{name: "cert-manager; an external issuer", values: "certManager: {enabled: true, issuerRef: {name: pca, kind: AWSPCAClusterIssuer, group: awspca.cert-manager.io}}",
			opts: Options{CertManager: true, CertManagerIssuer: &IssuerRef{Name: "pca", Kind: "AWSPCAClusterIssuer", Group: "awspca.cert-manager.io"}}},
		{name: "refused: an issuer without cert-manager", values: "certManager: {issuerRef: {name: corp-ca}}", refused: "/certManager"},
		{name: "refused: a pod label that selects the pods", values: "podLabels: {app.kubernetes.io/name: mine}", refused: "invalid propertyName 'app.kubernetes.io/name'"},
		{name: "refused: a webhook timeout past the API server's", values: "webhook: {timeoutSeconds: 31}", refused: "/webhook/timeoutSeconds"},
		{name: "refused: a port twice", values: "metrics: {port: 9443}", refused: "want three different ones"},
		{name: "refused: a scrape interval", values: "metrics: {serviceMonitor: {interval: 30 seconds}}", refused: "/metrics/serviceMonitor/interval"},
		{name: "custom", namespace: "platform-nap",
			values: `image: {repository: registry.example/napctl, digest: "sha256:0123"}
wait: {delay: 15s}
namespaceSelector: team in (shop,search)
excludeNamespaces: [kube-public, sandbox]
rollMissed: true
replicas: 3
resources: {requests: {cpu: 50m, memory: 128Mi}, limits: {memory: 512Mi}}`,
			opts: Options{Namespace: "platform-nap", Image: "registry.example/napctl@sha256:0123", Waits: wait.Input{Delay: "15s"},
				NamespaceSelector: "team in (shop,search)", ExcludeNamespaces: []string{"kube-public", "sandbox"}, RollMissed: true,
				Replicas: 3, Resources: &custom}},
		{name: "policy default", values: "policy: default", opts: Options{Scope: scope.Default}},
		{name: "no priority class: no ResourceQuota", values: `priorityClassName: ""`, opts: Options{PriorityClassName: NoPriorityClass}},
		{name: "a priority class of the cluster's", values: "priorityClassName: platform-high", opts: Options{PriorityClassName: "platform-high"}},
		{name: "one replica: no PodDisruptionBudget", values: "replicas: 1", opts: Options{Replicas: 1}},
		{name: "network policy", values: "networkPolicy: {enabled: true}", opts: Options{NetworkPolicy: true}},
		{name: "network policy; admission policy", values: "networkPolicy: {enabled: true}\nadmission: {mode: policy}", opts: Options{NetworkPolicy: true, Admission: AdmissionPolicy}},
		{name: "scheduling", values: `nodeSelector: {node-role.kubernetes.io/infra: ""}
tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]
priorityClassName: system-cluster-critical
topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app.kubernetes.io/name: nap}}}]`,
			opts: Options{NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
				Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "infra", Effect: corev1.TaintEffectNoSchedule}},
				PriorityClassName: "system-cluster-critical",
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "nap"}}}}}},
		{name: "policy audit; tag", values: "policy: audit\nimage: {tag: v9}", opts: Options{Scope: scope.Audit, Image: "ghcr.io/nap-k8s/napctl:v9"}},
		{name: "admission policy", values: "admission: {mode: policy}", opts: Options{Admission: AdmissionPolicy}},
		{name: "admission policy beta", values: "admission: {mode: policy, policyAPIVersion: admissionregistration.k8s.io/v1beta1}\nwait: {delay: \"4.5\"}",
			opts: Options{Admission: AdmissionPolicy, PolicyAPIVersion: controller.PolicyAPIV1beta, Waits: wait.Input{Delay: "4.5"}}},
		{name: "delivery auto", values: "delivery: {mode: auto, napImage: registry.example/nap:1}", opts: Options{Delivery: inject.DeliveryAuto, NapImage: "registry.example/nap:1"}},
		{name: "policy; delivery image", values: "admission: {mode: policy}\ndelivery: {mode: image, napImage: registry.example/nap:1}",
			opts: Options{Admission: AdmissionPolicy, Delivery: inject.DeliveryImage, NapImage: "registry.example/nap:1"}},
		{name: "adaptive", values: "wait: {mode: adaptive, max: 90s, min: 5s, quiet: 3s}",
			opts: Options{Waits: wait.Input{Kind: "adaptive", Max: "90s", Min: "5s", Quiet: "3s"}}},
		{name: "policy adaptive", values: "admission: {mode: policy}\nwait: {mode: adaptive, max: 1500ms}",
			opts: Options{Admission: AdmissionPolicy, Waits: wait.Input{Kind: "adaptive", Max: "1500ms"}}},
		{name: "policy adaptive; min and quiet", values: "admission: {mode: policy}\nwait: {mode: adaptive, max: 90s, min: 2500ms, quiet: 3000ms}",
			opts: Options{Admission: AdmissionPolicy, Waits: wait.Input{Kind: "adaptive", Max: "90s", Min: "2500ms", Quiet: "3000ms"}}},
		{name: "adaptive; requests", values: "wait: {mode: adaptive, requests: 1s}",
			opts: Options{Waits: wait.Input{Kind: "adaptive", Requests: "1s"}}},
		{name: "policy adaptive; min and requests", values: "admission: {mode: policy}\nwait: {mode: adaptive, min: 5s, requests: 1500ms}",
			opts: Options{Admission: AdmissionPolicy, Waits: wait.Input{Kind: "adaptive", Min: "5s", Requests: "1500ms"}}},
		// helm's --set wait.delay=10 types a number, not a string.
		{name: "a delay as --set types it", values: "wait: {delay: 10}", opts: Options{Waits: wait.Input{Delay: "10"}}},
		{name: "policy; a delay as --set types it", values: "admission: {mode: policy}\nwait: {delay: 4.5}",
			opts: Options{Admission: AdmissionPolicy, Waits: wait.Input{Delay: "4.5"}}},
		{name: "a private registry; pod annotations", values: "image: {pullPolicy: Always}\nimagePullSecrets: [{name: regcred}, {name: mirror}]\npodAnnotations: {sidecar.istio.io/inject: \"false\", team: platform}",
			opts: Options{ImagePullPolicy: corev1.PullAlways, ImagePullSecrets: []string{"regcred", "mirror"},
				PodAnnotations: map[string]string{"sidecar.istio.io/inject": "false", "team": "platform"}}},
		{name: "a private registry; admission policy", values: "image: {pullPolicy: IfNotPresent}\nimagePullSecrets: [{name: regcred}]\nadmission: {mode: policy}",
			opts: Options{ImagePullPolicy: corev1.PullIfNotPresent, ImagePullSecrets: []string{"regcred"}, Admission: AdmissionPolicy}},
		{name: "refused: a pull policy of no kind", values: "image: {pullPolicy: Sometimes}", refused: "/image/pullPolicy"},
		{name: "refused: a pull secret without a name", values: "imagePullSecrets: [{secret: regcred}]", refused: "/imagePullSecrets/0"},
		{name: "refused: a negative delay", values: "wait: {delay: -1}", refused: "/wait/delay"},
		{name: "refused: a quiet in ns", values: "wait: {quiet: 2000000000ns}", refused: "/wait/quiet"},
		{name: "refused: requests in m", values: "wait: {requests: 1m}", refused: "/wait/requests"},
		{name: "auto; served", values: "admission: {mode: auto}", apiVersions: []string{mapV1}, opts: Options{Admission: AdmissionPolicy}},
		{name: "auto; default needs the webhook", values: "admission: {mode: auto}\npolicy: default", apiVersions: []string{mapV1},
			opts: Options{Scope: scope.Default}},
		{name: "auto; delivery auto needs the webhook", values: "admission: {mode: auto}\ndelivery: {mode: auto, napImage: registry.example/nap:1}", apiVersions: []string{mapV1},
			opts: Options{Delivery: inject.DeliveryAuto, NapImage: "registry.example/nap:1"}},
		{name: "auto; cert-manager needs the webhook", values: "admission: {mode: auto}\ncertManager: {enabled: true}", apiVersions: []string{mapV1},
			opts: Options{CertManager: true}},
		{name: "refused: policy and cert-manager", values: "admission: {mode: policy}\ncertManager: {enabled: true}",
			refused: "--cert-manager issues the webhook's certificate"},
		{name: "refused: policy audit", values: "admission: {mode: policy}\npolicy: audit", refused: "--policy audit needs the webhook"},
		{name: "refused: policy; delivery auto", values: "admission: {mode: policy}\ndelivery: {mode: auto, napImage: r/nap:1}",
			refused: "--delivery auto needs the webhook"},
		{name: "refused: a delay", values: "wait: {delay: ten seconds}", refused: "/wait/delay"},
		{name: "refused: a scope", values: "policy: everything", refused: "/policy"},
		{name: "refused: a selector that carries an argument", values: `namespaceSelector: "team=shop\n- --roll-missed"`, refused: "/namespaceSelector"},
		{name: "refused: a selector napctl install refuses", values: "namespaceSelector: team in shop", refused: "/namespaceSelector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := cmp.Or(tc.namespace, controller.DefaultNamespace)
			values := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(values, []byte(tc.values+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"template", "nap", filepath.Join("..", "..", ChartDir), "--namespace", ns, "-f", values}
			for _, a := range tc.apiVersions {
				args = append(args, "--api-versions", a)
			}
			out, err := exec.Command(helm, args...).Output()
			if tc.refused != "" {
				var ee *exec.ExitError
				if !errors.As(err, &ee) || !strings.Contains(string(ee.Stderr), tc.refused) {
					t.Fatalf("helm template: want a refusal naming %q, got %v: %s", tc.refused, err, stderrOf(err))
				}
				return
			}
			if err != nil {
				t.Fatalf("helm template: %v: %s", err, stderrOf(err))
			}
			got := docs(t, out)
			want, err := YAML(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			wantDocs := docs(t, want)
			if tc.monitoring != nil {
				mon, err := MonitoringObjects(ns, *tc.monitoring)
				if err != nil {
					t.Fatal(err)
				}
				for _, u := range mon {
					b, err := objectYAML(u.Object)
					if err != nil {
						t.Fatal(err)
					}
					wantDocs = append(wantDocs, docs(t, b)...)
				}
			}
			wantDocs = slices.DeleteFunc(wantDocs, func(d map[string]any) bool { return d["kind"] == "Namespace" })
			key := func(d map[string]any) string { return fmt.Sprint(d["kind"]) }
			slices.SortFunc(got, func(a, b map[string]any) int { return strings.Compare(key(a), key(b)) })
			slices.SortFunc(wantDocs, func(a, b map[string]any) int { return strings.Compare(key(a), key(b)) })
			if len(got) != len(wantDocs) {
				t.Fatalf("helm template renders %d objects, napctl install %d (besides the Namespace):\n%s", len(got), len(wantDocs), out)
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], wantDocs[i]) {
					g, _ := yaml.Marshal(got[i])
					w, _ := yaml.Marshal(wantDocs[i])
					t.Errorf("%s differs:\nhelm template:\n%s\nnapctl install:\n%s", key(got[i]), g, w)
				}
			}
		})
	}
}

// helm lint --strict finds nothing in the chart, with its defaults and with every
// option set.
func TestChartLint(t *testing.T) {
	helm := testenv.Tool(t, "helm")
	chart := filepath.Join("..", "..", ChartDir)
	for _, set := range []string{"", "certManager.enabled=true,rollMissed=true,policy=default,wait.mode=adaptive,delivery.mode=auto,delivery.napImage=r/nap:1," +
		"metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true," +
		"hostNetwork=true,webhook.timeoutSeconds=10,podLabels.team=a,metrics.serviceMonitor.labels.release=p,certManager.issuerRef.name=corp,certManager.issuerRef.kind=ClusterIssuer"} {
		args := []string{"lint", "--strict", chart}
		if set != "" {
			args = append(args, "--set", set)
		}
		if out, err := exec.Command(helm, args...).CombinedOutput(); err != nil {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// docs are the objects of a YAML stream, as JSON would decode them.
func docs(t *testing.T, stream []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, d := range strings.Split("\n"+string(stream), "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("%v in\n%s", err, d)
		}
		if len(m) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// SelectorPattern accepts what labels.Parse accepts, written with spaces, and nothing
// with another blank.
func TestSelectorPattern(t *testing.T) {
	re := regexp.MustCompile(SelectorPattern)
	for _, sel := range []string{
		"", "team=shop", "team==shop", "team!=shop", "team", "!team", "team=", "team in (shop,search)", "team notin (a, b)",
		"example.com/team=shop, env in (prod), !legacy", "team in ()", "a.b_c-d=e_f.g-h", " team = shop ",
		"team=shop\n- --roll-missed", "team=shop\t", "team in shop", "team=a=b", "team=\"shop\"", "-team=x", "team=shop,", ",team",
		"Example.com/team=x", "team=a b", "team in (a,b", "team>3", "team < 10", "team>x", "team>-1",
	} {
		_, err := labels.Parse(sel)
		valid := err == nil && !strings.ContainsAny(sel, "\t\n\r")
		if re.MatchString(sel) != valid {
			t.Errorf("%q: the pattern says %v, labels.Parse %v", sel, re.MatchString(sel), err)
		}
	}
}
