package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	nlint "github.com/nap-k8s/nap/lint"
)

// findingKeys are a lint run's findings as "id Kind/name" (no namespace: fixtures have
// none, live objects have the one they were applied to), sorted.
func findingKeys(t *testing.T, stdout string) []string {
	t.Helper()
	var rep nlint.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.APIVersion != nlint.ReportAPIVersion {
		t.Fatalf("lint -o json: %v, version %q\n%s", err, rep.APIVersion, stdout)
	}
	keys := make([]string, 0, len(rep.Findings))
	for _, f := range rep.Findings {
		parts := strings.Split(f.Object, "/")
		keys = append(keys, f.ID+" "+parts[0]+"/"+parts[len(parts)-1]+" "+f.Container)
	}
	slices.Sort(keys)
	return keys
}

// TestLintCluster: lint --live finds on live objects what lint finds in the files
// they were applied from (a real API server defaults and stores them), per check
// fixture, each in its own namespace; and it takes the kubelets from the cluster's
// nodes: a native sleep on a pool of 1.29 kubelets is reported, the same Deployment
// elsewhere is not.
func TestLintCluster(t *testing.T) {
	cs, kubeconfig, kubectl := envtestCluster(t)
	ctx := context.Background()
	apply := func(t *testing.T, ns, file string) { applyIn(t, cs, kubectl, kubeconfig, ns, nil, file) }
	// The Prometheus operator's monitors, which a fixture holds (lint no longer takes a
	// scraped port for a metrics-only one): their kinds must be served to be applied.
	for _, kind := range []string{"ServiceMonitor", "PodMonitor"} {
		crd := fmt.Sprintf(monitorCRD, strings.ToLower(kind)+"s", kind)
		if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "--wait", "-f", writeTemp(t, crd)).CombinedOutput(); err != nil {
			t.Fatalf("installing the %s CRD: %v\n%s", kind, err, out)
		}
	}
	if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "wait", "--for=condition=Established", "crd/servicemonitors.monitoring.coreos.com", "crd/podmonitors.monitoring.coreos.com").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	server, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	kubeVersion := server.Major + "." + server.Minor
	for _, fixture := range []string{"no-readiness-probe", "no-prestop-delay", "single-replica", "recreate-strategy",
		"no-pdb", "pdb-blocks-drain", "grace-period-too-short", "rollout-all-at-once", "prestop-needs-shell", "liveness-equals-readiness"} {
		t.Run(fixture, func(t *testing.T) {
			file := "../../../lint/testdata/checks/" + fixture + ".yaml"
			ns := "lint-" + fixture
			apply(t, ns, withSelectors(t, file))
			fileCode, fromFile, _ := runNapctl("lint", "-f", file, "--kube-version", kubeVersion, "-o", "json")
			code, fromCluster, stderr := runNapctl("lint", "--kubeconfig", kubeconfig, "-n", ns, "-o", "json")
			want, got := findingKeys(t, fromFile), findingKeys(t, fromCluster)
			if len(want) == 0 {
				t.Fatalf("the fixture has no finding")
			}
			if !slices.Equal(got, want) {
				t.Errorf("live objects: %q\nfrom the file: %q", got, want)
			}
			if code != fileCode {
				t.Errorf("exit %d, from the file %d (%s)", code, fileCode, stderr)
			}
			if !strings.Contains(fromCluster, `"file": "live:`) {
				t.Errorf("findings do not name live objects:\n%s", fromCluster)
			}
		})
	}

	// Front doors read live as lint reads them in files: the projects' own CRDs (Istio's,
	// Traefik's, Contour's), a VirtualService and an IngressRoute beside delay-below-path's
	// workloads; each workload's findings from the cluster are the file's.
	t.Run("front doors", func(t *testing.T) {
		for _, crds := range []string{
			filepath.Join(kubeenv.ModuleDir(t, "istio.io/api@v1.32.0"), "kubernetes/customresourcedefinitions.gen.yaml"),
			filepath.Join(kubeenv.ModuleDir(t, "github.com/traefik/traefik/v3@"+kubeenv.HackVersion(t, "ingress-version")),
				"docs/content/reference/dynamic-configuration/kubernetes-crd-definition-v1.yml"),
		} {
			// create, not apply: Istio's CRDs outgrow the annotation apply keeps.
			if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "create", "-f", crds).CombinedOutput(); err != nil {
				t.Fatalf("installing %s: %v\n%s", crds, err, out)
			}
		}
		if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "wait", "--for=condition=Established",
			"crd/virtualservices.networking.istio.io", "crd/ingressroutes.traefik.io").CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		file, cal := "../../../lint/testdata/checks/delay-below-path.yaml", "../../../lint/testdata/calibration.json"
		apply(t, "lint-front-doors", withSelectors(t, file))
		_, fromFile, _ := runNapctl("lint", "-f", file, "--kube-version", kubeVersion, "--calibration", cal, "-o", "json")
		_, fromCluster, stderr := runNapctl("lint", "--kubeconfig", kubeconfig, "-n", "lint-front-doors", "--calibration", cal, "-o", "json")
		want, got := findingKeys(t, fromFile), findingKeys(t, fromCluster)
		for _, w := range []string{"delay-below-path Deployment/bad-behind-mesh app", "delay-below-path Deployment/bad-behind-ingressroute app"} {
			if !slices.Contains(want, w) {
				t.Fatalf("the file has no %q: %q", w, want)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("live objects: %q\nfrom the file: %q\n%s", got, want, stderr)
		}

		// A team allowed to list its namespace's objects and Traefik's routes, not
		// Istio's: lint says which front doors it could not see, and goes on.
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "lint", Namespace: "lint-front-doors"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"", "apps", "policy", "autoscaling", "networking.k8s.io", "traefik.io"}, Resources: []string{"*"}, Verbs: []string{"list"}}}}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "lint", Namespace: "lint-front-doors"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "lint"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "jane"}}}
		if _, err := cs.RbacV1().Roles("lint-front-doors").Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.RbacV1().RoleBindings("lint-front-doors").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// And the nodes, whose kubelets lint --live reads.
		nodes := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "lint-nodes"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}}}
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, nodes, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "lint-nodes"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "lint-nodes"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "jane"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		admin, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		jane := kubeenv.KubeconfigAs(t, admin, "jane")
		code, out, stderr := runNapctl("lint", "--kubeconfig", jane, "-n", "lint-front-doors", "--calibration", cal, "-o", "json")
		if out == "" {
			t.Fatalf("as jane: exit %d, %s", code, stderr)
		}
		keys := findingKeys(t, out)
		if !strings.Contains(stderr, "virtualservices.networking.istio.io: the routes to the pods those objects open or decide are not seen") ||
			slices.Contains(keys, "delay-below-path Deployment/bad-behind-mesh app") || !slices.Contains(keys, "delay-below-path Deployment/bad-behind-ingressroute app") {
			t.Errorf("without list on VirtualServices: %q\n%s", keys, stderr)
		}
	})

	// An Ingress's class decides: the IngressClassParams' targetType (a stand-in CRD of
	// its group, kind and scope: the AWS Load Balancer Controller's is on no module the
	// proxy serves), read live, cluster objects, as lint reads them in the file.
	t.Run("ingress class", func(t *testing.T) {
		if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-f", writeTemp(t, ingressClassParamsCRD)).CombinedOutput(); err != nil {
			t.Fatalf("installing the IngressClassParams CRD: %v\n%s", err, out)
		}
		if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "wait", "--for=condition=Established", "crd/ingressclassparams.elbv2.k8s.aws").CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		file := "../../../lint/testdata/checks/adaptive-misses-pool.yaml"
		apply(t, "lint-ingress-class", withSelectors(t, file))
		_, fromFile, _ := runNapctl("lint", "-f", file, "--kube-version", kubeVersion, "-o", "json")
		_, fromCluster, stderr := runNapctl("lint", "--kubeconfig", kubeconfig, "-n", "lint-ingress-class", "-o", "json")
		want, got := findingKeys(t, fromFile), findingKeys(t, fromCluster)
		if !slices.Contains(want, "adaptive-misses-pool Deployment/bad-behind-alb-class app") || !slices.Equal(got, want) {
			t.Errorf("live objects: %q\nfrom the file: %q\n%s", got, want, stderr)
		}
		if !strings.Contains(fromCluster, "lb-pods via Service bad-behind-alb-class") {
			t.Errorf("live: the class's IngressClassParams did not make the ALB send to the pods:\n%s", fromCluster)
		}
	})

	// Kubelets: a pool of 1.29 nodes cannot run the native sleep.
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lint-old", Labels: map[string]string{"pool": "lint-old"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.NodeInfo.KubeletVersion = "v1.29.15"
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	const native = `apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      nodeSelector: {pool: POOL}
      containers:
      - name: api
        image: registry.example/api:1
        readinessProbe: {httpGet: {path: /readyz, port: 8080}}
        lifecycle: {preStop: {sleep: {seconds: 5}}}
`
	for _, tc := range []struct {
		pool string
		want bool
	}{{pool: "lint-old", want: true}, {pool: "elsewhere", want: false}} {
		ns := "lint-native-" + tc.pool
		apply(t, ns, writeTemp(t, strings.Replace(native, "POOL", tc.pool, 1)))
		_, out, stderr := runNapctl("lint", "--kubeconfig", kubeconfig, "-n", ns, "-o", "json")
		got := slices.ContainsFunc(findingKeys(t, out), func(k string) bool { return strings.HasPrefix(k, "native-sleep-unsupported ") })
		if got != tc.want {
			t.Errorf("pool %s: native-sleep-unsupported %v, want %v (%s)\n%s", tc.pool, got, tc.want, stderr, out)
		}
	}

	// Flags that do not go together.
	for _, args := range [][]string{{"--kubeconfig", kubeconfig, "-f", "x.yaml"}, {"--kubeconfig", kubeconfig, "--kube-version", "1.30"}, {"-n", "prod"}} {
		if code, _, stderr := runNapctl(append([]string{"lint"}, args...)...); code != 2 || stderr == "" {
			t.Errorf("lint %q: exit %d, stderr %q; want 2 and a reason", args, code, stderr)
		}
	}
}

// envtestCluster is the package's API server: a client, a kubeconfig and kubectl.
func envtestCluster(t *testing.T) (cs kubernetes.Interface, kubeconfig, kubectl string) {
	t.Helper()
	cfg := kubeenv.APIServer(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, kubeenv.Kubeconfig(t, cfg), kubeenv.Kubectl(t)
}

// applyIn creates namespace ns with labels and applies file in it with kubectl.
func applyIn(t *testing.T, cs kubernetes.Interface, kubectl, kubeconfig, ns string, labels map[string]string, file string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-n", ns, "-f", file).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -n %s -f %s: %v\n%s", ns, file, err, out)
	}
}

// withSelectors writes a copy of the lint fixture file whose workloads have the
// spec.selector the API server requires (their template's labels); the fixtures leave
// it out, as lint does not need it.
func withSelectors(t *testing.T, file string) string {
	t.Helper()
	nodes, err := kio.FromBytes(must(os.ReadFile(file)))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		switch n.GetKind() {
		case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet":
		default:
			continue
		}
		if sel, _ := n.Pipe(yaml.Lookup("spec", "selector")); sel != nil {
			continue
		}
		labels, err := n.Pipe(yaml.Lookup("spec", "template", "metadata", "labels"))
		if err != nil || labels == nil {
			t.Fatalf("%s: %s %s has no template labels", file, n.GetKind(), n.GetName())
		}
		if err := n.PipeE(yaml.LookupCreate(yaml.MappingNode, "spec", "selector"), yaml.SetField("matchLabels", labels)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := kio.StringAll(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return writeTemp(t, out)
}

// writeTemp writes s to a new file and returns its path.
func writeTemp(t *testing.T, s string) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.yaml")
	if err == nil {
		_, err = f.WriteString(s)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// monitorCRD is a minimal CustomResourceDefinition of a Prometheus operator monitor
// (plural, kind): any fields.
const ingressClassParamsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ingressclassparams.elbv2.k8s.aws}
spec:
  group: elbv2.k8s.aws
  scope: Cluster
  names: {plural: ingressclassparams, singular: ingressclassparams, kind: IngressClassParams, listKind: IngressClassParamsList}
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
            properties:
              targetType: {type: string, enum: [instance, ip]}
`

const monitorCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[1]s.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {plural: %[1]s, kind: %[2]s}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
