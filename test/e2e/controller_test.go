package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/configmap"
	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/controller/install"
	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/cli/app"
	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

// The controller's image as hack/images builds it and hack/cluster.sh imports it: the
// default of napctl install and of the chart.
var controllerImage = install.DefaultImage

func kubectl(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command(kubeenv.Kubectl(t), append([]string{"--kubeconfig", kubeconfigPath()}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// installController applies `napctl install` (the e2e image, a 5 s default delay),
// waits until both replicas are ready and the webhook's caBundle is set, and removes it
// all when the test ends.
func installController(t *testing.T, cs *kubernetes.Clientset, args ...string) (uninstall func()) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := app.Run(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		append([]string{"install", "--image", controllerImage, "--delay", "5s"}, args...)); code != 0 {
		t.Fatalf("napctl install: %d: %s", code, errOut.String())
	}
	manifests := out.Bytes()
	policy := bytes.Contains(manifests, []byte("kind: MutatingAdmissionPolicy\n"))
	waitNamespaceGone(t, cs, controller.DefaultNamespace)
	t.Log(strings.TrimSpace(kubectl(t, manifests, "apply", "-f", "-")))
	uninstall = func() {
		if t.Failed() {
			// What the controller said (its leader election, each pod it routed out or
			// failed to): gone with its namespace after this.
			dumpController(t, cs)
		}
		kubectl(t, manifests, "delete", "--ignore-not-found", "--wait=false", "-f", "-")
		stopControllerPods(t, cs)
	}
	t.Cleanup(uninstall)
	waitController(t, cs, policy)
	return uninstall
}

// stopControllerPods deletes the controller's pods at once (grace period 0: gone from the
// API, their containers killed by the kubelet) once its objects are deleted: a test's
// teardown, where nothing is admitted any more, need not wait for their preStop (5 s,
// which a shorter grace period does not cut) and shutdown. The next test's install waits
// until nap's namespace is gone (waitNamespaceGone), and the namespace controller
// finishes it at its first pass, 5 s after the deletion, when no pod is left: 10.4 s
// after the deletion with the pods stopping gracefully, 5.3 s with this (measured on
// the lab, 2026-12-07). A killed replica's token dies with its pod, so it cannot act in
// the namespace the next install makes.
func stopControllerPods(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	ctx := context.Background()
	pods, err := cs.CoreV1().Pods(controller.DefaultNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + controller.Name})
	if err != nil {
		return // the namespace is gone already
	}
	for _, p := range pods.Items {
		// A NotFound is a pod gone already.
		cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
}

// waitNamespaceGone waits while namespace ns is terminating (from an earlier test): it
// would refuse new objects.
func waitNamespaceGone(t *testing.T, cs *kubernetes.Clientset, name string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		ns, err := cs.CoreV1().Namespaces().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || ns.DeletionTimestamp == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s is still terminating after a minute", name)
		}
	}
}

// waitController waits until both of the controller's replicas are ready and, with the
// webhook, its configuration's caBundle is set.
func waitController(t *testing.T, cs *kubernetes.Clientset, policy bool) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		d, err := cs.AppsV1().Deployments(controller.DefaultNamespace).Get(ctx, controller.Name, metav1.GetOptions{})
		if err == nil && d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas == 2 && d.Status.UpdatedReplicas == 2 {
			break
		}
		if time.Now().After(deadline) {
			dumpController(t, cs)
			t.Fatalf("the controller's Deployment is not ready after 2 minutes: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for !policy {
		m, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, controller.Name, metav1.GetOptions{})
		set := err == nil && len(m.Webhooks) == len(controller.WebhookConfiguration("", "", "", nil, scope.OptIn).Webhooks)
		for i := 0; set && i < len(m.Webhooks); i++ {
			set = len(m.Webhooks[i].ClientConfig.CABundle) > 0
		}
		if set {
			break
		}
		if time.Now().After(deadline) {
			dumpController(t, cs)
			t.Fatalf("the webhook's caBundle is not set: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// dumpController logs the controller pods' state and logs, for a failed start.
func dumpController(t *testing.T, cs *kubernetes.Clientset) {
	t.Helper()
	t.Log(kubectl(t, nil, "-n", controller.DefaultNamespace, "get", "pods,leases,events", "-o", "wide"))
	cmd := exec.Command(kubeenv.Kubectl(t), "--kubeconfig", kubeconfigPath(), "-n", controller.DefaultNamespace, "logs", "-l", "app.kubernetes.io/name=nap", "--prefix", "--tail=300")
	out, _ := cmd.CombinedOutput()
	t.Logf("controller logs:\n%s", out)
}

// optedInNamespace makes a namespace labelled nap.dev/inject: enabled, deleted at the
// end, and waits for the controller to publish the nap ConfigMap into it.
func optedInNamespace(t *testing.T, cs *kubernetes.Clientset) string {
	t.Helper()
	ns := webhookNamespace(t, cs, map[string]string{controller.InjectLabel: "enabled"})
	// The API server trusts the webhook once its informer has the caBundle the
	// controller wrote; until then pods are admitted unchanged (failurePolicy Ignore).
	for deadline := time.Now().Add(30 * time.Second); !dryRunInjected(t, cs, ns, nil); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			dumpController(t, cs)
			t.Fatalf("the webhook does not inject in %s after 30 s", ns)
		}
	}
	return ns
}

// policyNamespace creates a namespace labelled with scope s (nap.dev/policy), not opted
// in, and returns its name once the controller has published the nap ConfigMap there.
// Under scope.Default the webhook injects the pods that back a Service: waitInjectsBacked
// once the Service exists.
func policyNamespace(t *testing.T, cs *kubernetes.Clientset, s scope.Scope) string {
	t.Helper()
	return webhookNamespace(t, cs, map[string]string{scope.Label: string(s)})
}

// waitInjectsBacked waits (at most 30 s) until the webhook injects a pod labelled
// app=app in ns, the demo Service's: it decides from its informers' Services.
func waitInjectsBacked(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !dryRunInjected(t, cs, ns, map[string]string{"app": "app"}); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			dumpController(t, cs)
			t.Fatalf("the webhook does not inject the demo Service's pods in %s after 30 s", ns)
		}
	}
}

// webhookNamespace creates a namespace with labels and returns its name once the
// controller has published the nap ConfigMap there.
func webhookNamespace(t *testing.T, cs *kubernetes.Clientset, labels map[string]string) string {
	t.Helper()
	ctx := context.Background()
	ns := fmt.Sprintf("e2e-webhook-%04x", rand.IntN(1<<16))
	createNamespace(t, cs, ns, labels)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, kube.ConfigMapName, metav1.GetOptions{})
		if err == nil && len(cm.BinaryData) > 0 {
			break
		}
		if time.Now().After(deadline) {
			dumpController(t, cs)
			t.Fatalf("the controller did not publish the nap ConfigMap into %s: %v", ns, err)
		}
	}
	return ns
}

// dryRunInjected creates a Pod with labels in ns as a dry run — the webhook is called
// (sideEffects None), nothing is stored — and says whether it came back with a preStop
// hook.
func dryRunInjected(t *testing.T, cs *kubernetes.Clientset, ns string, labels map[string]string) bool {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nap/app:e2e"}}}}
	p, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	return p.Spec.Containers[0].Lifecycle != nil
}

// admissionsInjected sums nap_admissions_total{result="injected"} over the controller's pods.
func admissionsInjected(t *testing.T, cs *kubernetes.Clientset) int {
	t.Helper()
	return int(controllerMetric(t, cs, `nap_admissions_total{result="injected"}`))
}

// controllerMetric sums the sample named series (name{labels} as Prometheus' text
// format writes it) over the controller's pods' /metrics.
func controllerMetric(t *testing.T, cs *kubernetes.Clientset, series string) float64 {
	t.Helper()
	pods, err := cs.CoreV1().Pods(controller.DefaultNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nap"})
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, p := range pods.Items {
		if p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			continue
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(fmt.Sprintf("http://%s:%d/metrics", p.Status.PodIP, controller.MetricsPort))
		if err != nil {
			t.Fatalf("metrics of %s: %v", p.Name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, series+" "); ok {
				n, _ := strconv.ParseFloat(v, 64)
				total += n
			}
		}
	}
	return total
}

// TestControllerRollout: nap installed with its Helm chart (the real helm), a namespace
// opted in, a Deployment with no preStop of its own rolled out under load: the
// controller published the ConfigMap, the webhook gave every pod the nap binary's hook
// (a 4.5 s delay is not whole seconds, so not the native sleep), and no request over a
// new connection failed (the plain app: see newClean). Then `helm upgrade` rolls the
// controller itself: its replicas hold on with nap's preStop until they are out of the
// Service, so no admission misses the webhook. Then `helm uninstall` leaves nothing of
// nap in the cluster: its objects, and the ConfigMap in every namespace, are gone.
func TestControllerRollout(t *testing.T) {
	cs := client(t)
	helm := helmCommand(t)
	chart := filepath.Join(kubeenv.RepoRoot(), install.ChartDir)
	ns := controller.DefaultNamespace
	waitNamespaceGone(t, cs, ns)
	colon := strings.LastIndex(controllerImage, ":")
	installed := helm("install", "nap", chart, "--namespace", ns, "--create-namespace",
		"--set", "image.repository="+controllerImage[:colon], "--set", "image.tag="+controllerImage[colon+1:], "--set", "wait.delay=5s")
	t.Log(installed)
	// The namespace helm made has no Pod Security label: the notes say how to set it.
	if want := "kubectl label namespace " + ns + " " + install.PodSecurityLabel + "=" + install.PodSecurityLevel; !strings.Contains(installed, want) {
		t.Errorf("helm install's notes do not say %q", want)
	}
	t.Cleanup(func() { helm("uninstall", "nap", "--namespace", ns, "--ignore-not-found") })
	waitController(t, cs, false)

	before := admissionsInjected(t, cs)
	d := prove(t, cs, scenario{path: clusterIPNode1, disruption: rollingRestart, variant: viaWebhook, expect: newClean, rounds: 1}, 200)
	checkNapHook45(t, cs, d.ns)
	// 3 pods at the start, 3 more for the restart.
	if n := admissionsInjected(t, cs) - before; n < 6 {
		t.Errorf("the controllers' metrics count %d injections, want at least 6", n)
	}

	// The controller's own rollout, by helm upgrade (a new default delay).
	ctx := context.Background()
	old, err := cs.AppsV1().Deployments(ns).Get(ctx, controller.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	upgrade := helmCmd(t, "upgrade", "nap", chart, "--namespace", ns, "--reuse-values", "--set", "wait.delay=6s")
	var upgradeOut bytes.Buffer
	upgrade.Stdout, upgrade.Stderr = &upgradeOut, &upgradeOut
	if err := upgrade.Start(); err != nil {
		t.Fatal(err)
	}
	admitted, missed := 0, 0
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		admitted++
		if !dryRunInjected(t, cs, d.ns, nil) {
			missed++
		}
		dep, err := cs.AppsV1().Deployments(ns).Get(ctx, controller.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nap"})
		if err != nil {
			t.Fatal(err)
		}
		if dep.Generation > old.Generation && dep.Status.ObservedGeneration >= dep.Generation && dep.Status.UpdatedReplicas == 2 && dep.Status.ReadyReplicas == 2 && len(pods.Items) == 2 {
			break
		}
		if time.Now().After(deadline) {
			dumpController(t, cs)
			t.Fatal("the controller's rollout is not done 2 minutes after helm upgrade")
		}
	}
	if err := upgrade.Wait(); err != nil {
		t.Fatalf("helm upgrade: %v\n%s", err, upgradeOut.String())
	}
	t.Log(upgradeOut.String())
	t.Logf("during the controller's rollout: %d pod admissions, %d without the webhook", admitted, missed)
	if missed > 0 {
		t.Errorf("%d of %d pods admitted during the controller's rollout missed the webhook", missed, admitted)
	}
	noFailedPreStopHook(t, cs, ns)

	// helm uninstall: nothing of nap is left but the namespace helm created (and the
	// controller's Lease in it, which client-go's leader election writes without owners).
	t.Log(helm("uninstall", "nap", "--namespace", ns, "--wait"))
	left := func() []string {
		var out []string
		sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + controller.Name}
		if l, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, sel); err == nil && len(l.Items) > 0 {
			out = append(out, "MutatingWebhookConfiguration")
		}
		if l, err := cs.RbacV1().ClusterRoles().List(ctx, sel); err == nil && len(l.Items) > 0 {
			out = append(out, "ClusterRole")
		}
		if l, err := cs.RbacV1().ClusterRoleBindings().List(ctx, sel); err == nil && len(l.Items) > 0 {
			out = append(out, "ClusterRoleBinding")
		}
		if l, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, s := range l.Items {
				if s.Name == controller.TLSSecretName {
					out = append(out, "Secret "+s.Name)
				}
			}
		}
		if l, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{}); err == nil && len(l.Items) > 0 {
			out = append(out, "Deployment")
		}
		cms, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + kube.ConfigMapName})
		if err != nil {
			out = append(out, err.Error())
		}
		for _, cm := range cms.Items {
			if cm.Labels[configmap.ManagedByLabel] == controller.ManagedBy {
				out = append(out, "ConfigMap "+cm.Namespace+"/"+cm.Name)
			}
		}
		return out
	}
	for deadline := time.Now().Add(time.Minute); len(left()) > 0; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("a minute after helm uninstall, left of nap: %v", left())
		}
	}
}

// helmCmd is the real helm on the lab, with args.
func helmCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(testenv.Tool(t, "helm"), append([]string{"--kubeconfig", kubeconfigPath()}, args...)...)
}

// helmCommand returns a runner of helmCmd: its output, or the test fails.
func helmCommand(t *testing.T) func(args ...string) string {
	t.Helper()
	return func(args ...string) string {
		t.Helper()
		out, err := helmCmd(t, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// checkNapHook45: every demo pod in ns has the hook /nap/nap 4.5 (the webhook variants'
// annotation), with --allow N, what its probes open in a fixed wait's window (the
// background of its verdict), and a grace period of at least 35 s.
func checkNapHook45(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		lc := p.Spec.Containers[0].Lifecycle
		want := fmt.Sprintf("/nap/nap 4.5 --allow %d", hook.Background(wait.FixedQuiet, hook.ProbePeriods(p.Spec)))
		if lc == nil || lc.PreStop == nil || lc.PreStop.Exec == nil || strings.Join(lc.PreStop.Exec.Command, " ") != want {
			t.Errorf("pod %s: preStop %+v, want exec %s", p.Name, lc, want)
		}
		if g := p.Spec.TerminationGracePeriodSeconds; g == nil || *g < 35 {
			t.Errorf("pod %s: grace period %v, want at least 35", p.Name, g)
		}
	}
}

// TestPolicyRollout: nap installed with --admission policy (a MutatingAdmissionPolicy
// the API server runs; the controller publishes the ConfigMap, with no webhook), a
// namespace opted in, a Deployment rolled out under load: every pod got nap's hook from
// the policy (4.5 s: nap from the ConfigMap), and no request over a new connection
// failed.
func TestPolicyRollout(t *testing.T) {
	cs := client(t)
	installController(t, cs, "--admission", "policy")
	ctx := context.Background()
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, controller.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("a MutatingWebhookConfiguration with --admission policy")
	}
	d := prove(t, cs, scenario{path: clusterIPNode1, disruption: rollingRestart, variant: viaPolicy, expect: newClean, rounds: 1}, 200)
	checkNapHook45(t, cs, d.ns)
	noFailedPreStopHook(t, cs, d.ns)
}

// TestControllerOutage: with the controller scaled to 0, a pod created in an opted-in
// namespace is admitted without a delay (failurePolicy Ignore, as designed); once the
// controller is back, a Warning event on the Deployment and the metric
// nap_pods_unprotected say so within 30 s, until the Deployment is rolled.
func TestControllerOutage(t *testing.T) {
	cs := client(t)
	installController(t, cs)
	ns := optedInNamespace(t, cs)
	ctx := context.Background()
	scaleController := func(n int32) {
		t.Helper()
		kubectl(t, nil, "-n", controller.DefaultNamespace, "scale", "deployment/"+controller.Name, fmt.Sprintf("--replicas=%d", n))
	}
	scaleController(0)
	t.Cleanup(func() { scaleController(2) })
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		pods, err := cs.CoreV1().Pods(controller.DefaultNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nap"})
		if err == nil && len(pods.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the controller's pods are still there 2 minutes after scaling to 0")
		}
	}
	d := demoDeployment(t, []byte(strings.Replace(serviceDeployment, "replicas: 3", "replicas: 1", 1)))
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, cs, ns)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of app: %v %v", err, pods)
	}
	if lc := pods.Items[0].Spec.Containers[0].Lifecycle; lc != nil {
		t.Fatalf("the pod got a hook with the controller down: %+v", lc)
	}

	scaleController(2)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		d, err := cs.AppsV1().Deployments(controller.DefaultNamespace).Get(ctx, controller.Name, metav1.GetOptions{})
		if err == nil && d.Status.ReadyReplicas >= 1 {
			break
		}
		if time.Now().After(deadline) {
			dumpController(t, cs)
			t.Fatal("the controller is not ready 2 minutes after scaling it back")
		}
	}
	back := time.Now() // a replica is ready: the controller is back
	series := fmt.Sprintf(`nap_pods_unprotected{namespace=%q,reason="not-injected"}`, ns)
	var event *corev1.Event
	for deadline := back.Add(30 * time.Second); event == nil; time.Sleep(500 * time.Millisecond) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Deployment,involvedObject.name=app,reason=NapNotInjected"})
		if err == nil && len(evs.Items) > 0 {
			event = &evs.Items[0]
		}
		if time.Now().After(deadline) {
			dumpController(t, cs)
			t.Fatal("no NapNotInjected event on the Deployment 30 s after the controller was back")
		}
	}
	for deadline := back.Add(30 * time.Second); controllerMetric(t, cs, series) != 1; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is not 1 30 s after the controller was back", series)
		}
	}
	t.Logf("event and metric %v after a replica was ready again: %s", time.Since(back).Round(100*time.Millisecond), event.Message)

	// Rolled: the new pod goes through the webhook, and the metric drops. Not before the
	// webhook injects again: a replica is ready before every kube-proxy routes the
	// webhook's Service to it, and a pod created meanwhile is missed too (and reported).
	for deadline := time.Now().Add(30 * time.Second); !dryRunInjected(t, cs, ns, nil); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the webhook does not inject 30 s after the controller was back")
		}
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"nap.dev/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339Nano))
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "app", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, cs, ns)
	for deadline := time.Now().Add(30 * time.Second); controllerMetric(t, cs, series) != 0; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is not 0 30 s after the Deployment was rolled", series)
		}
	}
}

// TestDefaultPolicy: in a namespace labelled nap.dev/policy=default, the webhook gives a
// delay to the pods of a Deployment a Service selects, and leaves alone a Job's pod and
// a Deployment no Service selects.
func TestDefaultPolicy(t *testing.T) {
	cs := client(t)
	installController(t, cs)
	ctx := context.Background()
	ns := fmt.Sprintf("e2e-policy-%04x", rand.IntN(1<<16))
	createNamespace(t, cs, ns, map[string]string{scope.Label: string(scope.Default)})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
		Ports: []corev1.ServicePort{{Port: 80, TargetPort: intOrPort(8080)}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The webhook decides from its informer caches: wait until it sees the Service (a
	// dry-run pod with the Service's labels comes back injected).
	for deadline := time.Now().Add(30 * time.Second); !dryRunInjected(t, cs, ns, map[string]string{"app": "web"}); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			dumpController(t, cs)
			t.Fatal("the policy webhook does not inject a Service-backed pod after 30 s")
		}
	}
	apply := func(name, labels, kind string) {
		t.Helper()
		var src string
		switch kind {
		case "Deployment":
			src = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: 1
  selector: {matchLabels: %s}
  template:
    metadata: {labels: %s}
    spec:
      containers: [{name: app, image: nap/app:e2e, imagePullPolicy: Never, ports: [{containerPort: 8080}]}]
`, name, labels, labels)
		case "Job":
			src = fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: %s}
spec:
  template:
    metadata: {labels: %s}
    spec:
      restartPolicy: Never
      containers: [{name: app, image: nap/app:e2e, imagePullPolicy: Never}]
`, name, labels)
		}
		kubectl(t, []byte(src), "-n", ns, "apply", "-f", "-")
	}
	apply("web", "{app: web}", "Deployment")       // a Service selects it
	apply("batch", "{app: web}", "Job")            // a Job's pod, even with the Service's labels
	apply("worker", "{app: worker}", "Deployment") // no Service selects it
	hooked := map[string]bool{}
	for deadline := time.Now().Add(90 * time.Second); len(hooked) < 3; time.Sleep(500 * time.Millisecond) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			owner := p.Labels["job-name"]
			if owner == "" {
				owner = p.Labels["app"]
			}
			hooked[owner] = p.Spec.Containers[0].Lifecycle != nil && p.Spec.Containers[0].Lifecycle.PreStop != nil
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods of web, batch and worker not all created after 90 s: %v", hooked)
		}
	}
	if want := map[string]bool{"web": true, "batch": false, "worker": false}; !maps.Equal(hooked, want) {
		t.Errorf("preStop hooks by workload: %v, want %v", hooked, want)
	}
}
