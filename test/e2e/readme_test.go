package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
)

// quickStartApp is the user's app the README's quick start begins with: a Deployment
// and its Service in namespace shop, their manifests in k8s/.
const quickStartApp = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nap/app:e2e
        imagePullPolicy: Never
        ports:
        - containerPort: 8080
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`

// readmeBlock is the first ```sh block under the README's heading.
func readmeBlock(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kubeenv.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n"+heading+"\n")
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, fenced := strings.Cut(section, "```sh\n")
	block, _, closed := strings.Cut(block, "```\n")
	if !ok || !fenced || !closed {
		t.Fatalf("README.md: no ```sh block under %q", heading)
	}
	return block
}

// TestReadmeQuickStart runs the README's quick start as written, with bash, where a
// user would: a cluster (the lab's kubeconfig), the checkout (charts/), kubectl, helm
// and the plugin on PATH, and an app already running (quickStartApp, its manifests in
// k8s/). Then nap's controller runs from the chart's default image, and every pod of
// the app has a preStop delay it did not have, and status says so.
func TestReadmeQuickStart(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	block := readmeBlock(t, "## Quick start")
	for _, b := range []string{"napctl", "kubectl-nap"} {
		if _, err := os.Stat(filepath.Join(kubeenv.RepoRoot(), "bin", b)); err != nil {
			testenv.Missing(t, "bin/"+b, "build")
		}
	}
	const ns = "shop"
	waitNamespaceGone(t, cs, ns)
	waitNamespaceGone(t, cs, controller.DefaultNamespace)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "k8s"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "k8s", "web.yaml"), []byte(quickStartApp), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(kubeenv.RepoRoot(), "charts"), filepath.Join(dir, "charts")); err != nil {
		t.Fatal(err)
	}
	t.Log(kubectl(t, nil, "create", "namespace", ns))
	t.Cleanup(func() {
		cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	t.Log(kubectl(t, []byte(quickStartApp), "apply", "-f", "-"))
	t.Log(kubectl(t, nil, "rollout", "status", "deployment/web", "-n", ns, "--timeout=3m"))

	helm := testenv.Tool(t, "helm")
	path := strings.Join([]string{filepath.Join(kubeenv.RepoRoot(), "bin"), filepath.Dir(kubeenv.Kubectl(t)), filepath.Dir(helm), os.Getenv("PATH")}, ":")
	t.Cleanup(func() {
		cmd := helmCmd(t, "uninstall", "nap", "--namespace", controller.DefaultNamespace, "--ignore-not-found", "--wait")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
		// helm leaves the namespace it created: gone too, so that the next run of the
		// suite (make test's second stage) finds no nap to clear.
		if err := cs.CoreV1().Namespaces().Delete(context.Background(), controller.DefaultNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
		waitNamespaceGone(t, cs, controller.DefaultNamespace)
	})
	tctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	// lint's exit 1 is its verdict, the finding the quick start's first line is there to
	// show (no-prestop-delay, an error): a user at a terminal reads it and goes on. Any
	// other failure, and lint's 2 (an error), stops the run.
	script := "kubectl() { if [ \"${1:-}\" = nap ] && [ \"${2:-}\" = lint ]; then command kubectl \"$@\" || [ $? -eq 1 ]; else command kubectl \"$@\"; fi; }\n" + block
	cmd := exec.CommandContext(tctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+path, "KUBECONFIG="+kubeconfigPath(), "HOME="+dir)
	out, err := cmd.CombinedOutput()
	t.Logf("the quick start:\n%s\n%s", block, out)
	if err != nil {
		dumpController(t, cs)
		t.Fatalf("the quick start failed: %v", err)
	}
	if !strings.Contains(string(out), "[no-prestop-delay]") {
		t.Errorf("the quick start's lint did not find the missing delay:\n%s", out)
	}
	if !strings.Contains(string(out), "1 Service-backed workloads in 1 namespaces: 1 safe (") || !strings.Contains(string(out), ", 0 unprotected") {
		t.Errorf("status does not say shop's workload is safe")
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var serving int
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		serving++
		if lc := p.Spec.Containers[0].Lifecycle; lc == nil || lc.PreStop == nil {
			t.Errorf("pod %s: no preStop hook after the quick start", p.Name)
		}
	}
	if serving != 2 {
		t.Errorf("%d pods of web serving, want 2", serving)
	}
}
