package dryrun

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	. "github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/internal/testutil/kept"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/lint"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/wait"
)

// corpusSources are public manifests read from Go modules, pinned (the module proxy
// is their source), as their authors wrote them — kubectl-ready YAML, Lists, JSON,
// comments, flow style:
//   - Kubernetes (the version of hack/kube-version): its cluster add-ons and the
//     manifests of its own e2e tests (databases among them: Cassandra, CockroachDB,
//     etcd, MySQL, Redis, ZooKeeper StatefulSets);
//   - Argo Rollouts' examples: Rollouts, a pod-template CRD nap injects;
//   - the Prometheus operator's examples: Deployments behind Services that
//     ServiceMonitors scrape;
//   - the descheduler's: a CronJob (skipped: it runs to completion) and a Deployment;
//   - the Prometheus windows_exporter's: a DaemonSet for Windows nodes (nodeSelector
//     kubernetes.io/os: windows, a HostProcess pod), which gets the native sleep.
var corpusSources = []struct {
	module string // module@version; "" version: Kubernetes'
	dirs   []string
}{
	{"k8s.io/kubernetes", []string{"cluster/addons", "test/e2e/testing-manifests", "test/e2e_node/testing-manifests"}},
	{"github.com/argoproj/argo-rollouts@v1.8.3", []string{"examples"}},
	{"github.com/prometheus-operator/prometheus-operator@v0.85.0", []string{"example/user-guides", "example/shards", "example/thanos"}},
	{"sigs.k8s.io/descheduler@v0.36.0", []string{"kubernetes"}},
	{"github.com/prometheus-community/windows_exporter@v0.27.2", []string{"kubernetes"}},
}

// corpusCRDs are the CRDs of the corpus's custom kinds, installed before the dry-runs
// so that the API server validates them too.
var corpusCRDs = []struct{ module, file string }{
	{"github.com/argoproj/argo-rollouts@v1.8.3", "manifests/crds/rollout-crd.yaml"},
	{"github.com/prometheus-operator/prometheus-operator@v0.85.0", "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"},
	{"github.com/prometheus-operator/prometheus-operator@v0.85.0", "example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml"},
}

// corpus returns the files of corpusSources that read as manifests with a pod template.
func corpus(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, src := range corpusSources {
		modVersion := src.module
		if !strings.Contains(modVersion, "@") {
			modVersion += "@" + kubeenv.KubeVersion()
		}
		dir := kubeenv.ModuleDir(t, modVersion)
		for _, d := range src.dirs {
			corpusDir(dir, d, modVersion, files)
		}
	}
	// The same manifests as kustomize output: the real kustomize, with an overlay as a
	// platform team writes one, re-emits every object in its own layout.
	for name, data := range maps.Clone(files) {
		if out, err := kustomized(data); err == nil {
			files["kustomize:"+name] = out
		}
	}
	// More public manifests (Helm output of third-party charts) may be put beside the
	// repository by the people steering it, in shared/corpus; each file's source is its
	// name's README line there.
	shared := filepath.Join(kubeenv.RepoRoot(), "..", "shared", "corpus")
	filepath.WalkDir(shared, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		if ext := filepath.Ext(path); ext == ".yaml" || ext == ".yml" || ext == ".json" {
			if data, err := os.ReadFile(path); err == nil {
				files["shared/corpus/"+strings.TrimPrefix(path, shared+"/")] = data
			}
		}
		return nil
	})
	return files
}

// corpusDir adds to files the manifests under dir/d (of module modVersion) with a pod
// template.
func corpusDir(dir, d, modVersion string, files map[string][]byte) {
	root := filepath.Join(dir, d)
	filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		objs, err := manifest.Read(path, data)
		if err != nil {
			return nil // a template with placeholders, not a manifest
		}
		for _, o := range objs {
			var v any
			if o.Decode(&v) != nil {
				return nil // {{ placeholders }} that YAML reads as maps, not a manifest
			}
		}
		for _, o := range objs {
			if o.IsWorkload() || o.RunsToCompletion() {
				rel, _ := filepath.Rel(dir, path)
				files[modVersion+"/"+rel] = data
				break
			}
		}
		return nil
	})
}

// overlay is a kustomization as a platform team writes one over a base: a name prefix,
// labels down to selectors and templates, a namespace, an annotation.
const overlay = `resources:
- base.yaml
namePrefix: shop-
namespace: shop
labels:
- pairs:
    app.kubernetes.io/part-of: shop
  includeSelectors: true
commonAnnotations:
  team: platform
`

// kustomized is kustomize build of overlay over base.
func kustomized(base []byte) ([]byte, error) {
	mem := filesys.MakeFsInMemory()
	if err := errors.Join(mem.WriteFile("/k/base.yaml", base), mem.WriteFile("/k/kustomization.yaml", []byte(overlay))); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/k")
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

// TestCorpus runs napctl inject and lint over real public manifests, as published and as
// kustomize output: every input byte is kept, a second run changes nothing, lint reads
// the output, and every workload the API server accepted before injection it accepts
// after (server-side dry-run).
func TestCorpus(t *testing.T) {
	files := corpus(t)
	kustomize := 0
	for name := range files {
		if strings.HasPrefix(name, "kustomize:") {
			kustomize++
		}
	}
	if len(files)-kustomize < 30 || kustomize < 30 {
		t.Fatalf("%d manifests with workloads and %d kustomize builds of them in the corpus, want at least 30 of each", len(files)-kustomize, kustomize)
	}
	cfg := kubeenv.APIServer(t)
	var crds []string
	for _, c := range corpusCRDs {
		crds = append(crds, filepath.Join(kubeenv.ModuleDir(t, c.module), c.file))
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: crds}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	dryRun := func(o *manifest.Object) error {
		u := &unstructured.Unstructured{}
		if err := o.Decode(&u.Object); err != nil {
			return err
		}
		ns := u.GetNamespace()
		if ns == "" {
			ns = "default"
			u.SetNamespace(ns)
		}
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); err != nil {
			c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
		return c.Create(ctx, u, client.DryRunAll)
	}
	v := kube.Version{Major: 1, Minor: 34}
	templates, checked, windows := 0, 0, 0
	checkedKinds, skipped := map[string]int{}, map[string]int{}
	for name, src := range files {
		for _, mode := range []Mode{ModeBinary, ModeAuto} {
			p, err := NewPlan(Options{Mode: mode, Kube: &v, Wait: wait.Wait{Kind: wait.Fixed, Delay: 5 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := Inject(name, src, p)
			if err != nil {
				t.Errorf("%s (%s): %v", name, mode, err)
				continue
			}
			if !kept.Bytes(src, out) {
				t.Errorf("%s (%s): an input byte was changed or removed", name, mode)
			}
			again, _, err := Inject(name, out, p)
			if err != nil || !bytes.Equal(again, out) {
				t.Errorf("%s (%s): not idempotent: %v", name, mode, err)
			}
			outObjs, err := manifest.Read(name, out)
			if err != nil {
				t.Fatalf("%s (%s): %v", name, mode, err)
			}
			lint.Lint(outObjs, lint.Options{KubeVersion: &v})
			inObjs, _ := manifest.Read(name, src)
			for i, o := range outObjs {
				if o.RunsToCompletion() {
					if mode == ModeBinary && bytes.Contains(src, []byte("kind: "+o.Kind)) {
						skipped[o.Kind]++
					}
					continue
				}
				if !o.IsWorkload() {
					continue
				}
				if mode == ModeBinary {
					templates++
				}
				if IsWindows(o.PodSpecNode().YNode()) {
					// nap's binary is a Linux executable: a Windows pod gets the native
					// sleep (the plan's 1.34 has it), and lint finds no nap binary on it.
					windows++
					spec, _ := o.PodSpecNode().MarshalJSON()
					if !strings.Contains(string(spec), `"sleep":{"seconds":5}`) || strings.Contains(string(spec), "/nap/nap") {
						t.Errorf("%s:%d (%s): %s runs on Windows: want the native sleep, not nap's binary: %s", name, o.Line, mode, o.Ref(), spec)
					}
					for _, f := range lint.Lint(outObjs, lint.Options{KubeVersion: &v}) {
						if f.ID == lint.NapOnWindows {
							t.Errorf("%s (%s): lint: %s", name, mode, f.Message)
						}
					}
				}
				if dryRun(inObjs[i]) != nil {
					continue // not valid as published (placeholders, old APIs): not ours to judge
				}
				checked++
				checkedKinds[o.Kind]++
				if err := dryRun(o); err != nil {
					t.Errorf("%s:%d (%s): %s: dry-run create after inject: %v", name, o.Line, mode, o.Ref(), err)
				}
				if !strings.Contains(string(out), "preStop") {
					t.Errorf("%s (%s): no preStop added", name, mode)
				}
			}
		}
	}
	t.Logf("%d manifests (%d of them kustomize builds), %d pod templates; %d injected workloads checked by dry-run %v; left alone: %v", len(files), kustomize, templates, checked, checkedKinds, skipped)
	for _, src := range corpusSources {
		n := 0
		for name := range files {
			if strings.HasPrefix(strings.TrimPrefix(name, "kustomize:"), src.module) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no manifest from %s", src.module)
		}
	}
	if windows == 0 {
		t.Errorf("no Windows pod template in the corpus")
	}
	if checkedKinds["Rollout"] == 0 || skipped["CronJob"] == 0 {
		t.Errorf("checked %v, left alone %v: want Argo Rollouts injected and checked by their CRD, CronJobs left alone", checkedKinds, skipped)
	}
	if checked < 20 {
		t.Errorf("only %d injected workloads could be checked by dry-run", checked)
	}
}
