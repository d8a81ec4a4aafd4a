package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nap-k8s/nap/configmap"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/cli/app"
	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/probe"
	"github.com/nap-k8s/nap/status"
)

// kubeconfigPath is the cluster of hack/cluster.sh unless NAP_KUBECONFIG names another.
func kubeconfigPath() string {
	if p := os.Getenv("NAP_KUBECONFIG"); p != "" {
		return p
	}
	dir := os.Getenv("NAP_CLUSTER_DIR")
	if dir == "" {
		dir = "/tmp/nap-cluster"
	}
	return filepath.Join(dir, "admin.kubeconfig")
}

// client is a client of kubeconfigPath's cluster; a cluster that does not answer is a
// missing prerequisite.
func client(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	path := kubeconfigPath()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		testenv.Missing(t, "a running cluster ("+path+")", "cluster-up")
	}
	cfg.Timeout = 20 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		testenv.Missing(t, "a running cluster ("+path+": "+err.Error()+")", "cluster-up")
	}
	return cs
}

// namespace makes a fresh namespace with the nap ConfigMap in it, deleted at the end.
func namespace(t *testing.T, cs *kubernetes.Clientset) string {
	t.Helper()
	ctx := context.Background()
	ns := fmt.Sprintf("e2e-%s-%04x", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), rand.IntN(1<<16))
	if len(ns) > 63 {
		ns = ns[len(ns)-63:]
	}
	createNamespace(t, cs, ns, nil)
	cm, err := configmap.New(configmap.Options{Namespace: ns, Version: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	// With nap's controller installed (by this test or one that runs beside it), it may
	// have published the same ConfigMap already, and its guard lets no one else write it
	// (controller.ConfigMapGuard): then the controller's copy is awaited, or the guard's
	// end, as the controller may be going away.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			break
		}
		if !apierrors.IsForbidden(err) {
			t.Fatal(err)
		}
		// The guard refuses a create before the API server looks for the object: the
		// controller's copy shows only to a read.
		if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{}); err == nil {
			break
		} else if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the nap ConfigMap: refused for 30 s, and no controller published it: %v", err)
		}
	}
	return ns
}

// createNamespace makes namespace ns with labels, deleted at the end of the test.
func createNamespace(t *testing.T, cs *kubernetes.Clientset, ns string, labels map[string]string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		grace := int64(0)
		cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	})
}

// The demo app's Deployment, FROM scratch: no shell, no sleep binary.
const appDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 1
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: app
        image: nap/app:e2e
        imagePullPolicy: Never
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 1
`

// deploy creates src (one Deployment) in ns and waits for its pod to be Ready.
func deploy(t *testing.T, cs *kubernetes.Clientset, ns string, src []byte) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	d := decodeDeployment(t, src)
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
		if err == nil && len(pods.Items) == 1 {
			p := &pods.Items[0]
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return p
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("no Ready pod after 90s")
	return nil
}

// decodeDeployment reads src, one Deployment.
func decodeDeployment(t *testing.T, src []byte) appsv1.Deployment {
	t.Helper()
	objs, err := manifest.Read("deployment.yaml", src)
	if err != nil || len(objs) != 1 {
		t.Fatalf("%d objects: %v", len(objs), err)
	}
	var d appsv1.Deployment
	if err := objs[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// terminate deletes pod and returns how long it took to be gone, and the reasons of the
// events the pod got meanwhile.
func terminate(t *testing.T, cs *kubernetes.Clientset, pod *corev1.Pod) (time.Duration, []string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	// The Deployment would replace the pod: scale it to zero first so that only
	// this pod's termination is measured.
	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: pod.Namespace},
		Spec:       autoscalingv1.ScaleSpec{Replicas: 0},
	}
	if _, err := cs.AppsV1().Deployments(pod.Namespace).UpdateScale(ctx, "app", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := start.Add(90 * time.Second)
	for {
		_, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s still there after 90s", pod.Name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(start)
	events, err := cs.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod.Name).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range events.Items {
		reasons = append(reasons, e.Reason+": "+e.Message)
	}
	return took, reasons
}

// noFailedPreStopHook fails t if any pod in ns got a FailedPreStopHook event.
func noFailedPreStopHook(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	events, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=FailedPreStopHook"})
	if err != nil || len(events.Items) > 0 {
		t.Errorf("FailedPreStopHook in %s: %v %v", ns, err, events.Items)
	}
}

func hasReason(reasons []string, r string) bool {
	for _, x := range reasons {
		if strings.HasPrefix(x, r+":") {
			return true
		}
	}
	return false
}

func injectApp(t *testing.T, opts inject.Options) []byte {
	t.Helper()
	p, err := inject.NewPlan(opts)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := inject.Inject("deployment.yaml", []byte(appDeployment), p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const delay = 4 * time.Second

// The nap binary, mounted from napctl's ConfigMap, holds a scratch pod's termination
// for the delay: the hook runs and does not fail.
func TestNapBinaryPreStop(t *testing.T) {
	t.Parallel() // see doc.go: after the tests that change the lab
	cs := client(t)
	ns := namespace(t, cs)
	pod := deploy(t, cs, ns, injectApp(t, inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("4s")}))
	// The pod keeps serving while the hook holds it: probe it directly for 3 of the 4s.
	url := "http://" + pod.Status.PodIP + ":8080/"
	waitServing(t, url, "")
	rep := probe.NewReport(time.Now(), time.Second)
	served := make(chan error, 1)
	go func() {
		served <- probe.Run(context.Background(), probe.Options{URL: url, Rate: 20, Duration: 3 * time.Second, Timeout: time.Second}, rep.Add)
	}()
	// While the hook runs, find the nap process on this node and read its seccomp mode:
	// the kubelet's seccompDefault gives every container RuntimeDefault, and nap's system
	// calls must all be in that profile (a denied one would end the delay early). The
	// search lasts until the hook has surely come and gone: under the suite's load the
	// kubelet once started it more than 3 s after the scale-down (CI, 2026-11-28).
	seccomp := make(chan string, 1)
	cmdline := strings.Join(pod.Spec.Containers[0].Lifecycle.PreStop.Exec.Command, "\x00") + "\x00" // /nap/nap 4s --allow N
	go func() { seccomp <- hookSeccomp(cmdline, 20*time.Second) }()
	took, reasons := terminate(t, cs, pod)
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if mode := <-seccomp; mode != "2" {
		t.Errorf("the nap hook ran with seccomp mode %q, want 2 (filter: RuntimeDefault)", mode)
	}
	if tot := rep.Total(); tot.Requests != 60 || tot.Failed != 0 {
		t.Errorf("while terminating: %d requests to the pod, %d failed %v; want 60, none failed", tot.Requests, tot.Failed, tot.ByKind)
	}
	t.Logf("terminated in %v; events: %q", took, reasons)
	if hasReason(reasons, "FailedPreStopHook") {
		t.Errorf("the nap preStop hook failed: %q", reasons)
	}
	if took < delay {
		t.Errorf("terminated in %v: the %v preStop delay did not hold it", took, delay)
	}
}

// The native sleep action does the same on this cluster (hack/kube-version).
func TestNativeSleepPreStop(t *testing.T) {
	t.Parallel() // see doc.go: after the tests that change the lab
	cs := client(t)
	ns := namespace(t, cs)
	pod := deploy(t, cs, ns, injectApp(t, inject.Options{Mode: inject.ModeNative, Wait: fixedWait("4s")}))
	took, reasons := terminate(t, cs, pod)
	t.Logf("terminated in %v; events: %q", took, reasons)
	if hasReason(reasons, "FailedPreStopHook") || took < delay {
		t.Errorf("native sleep: terminated in %v, events %q", took, reasons)
	}
}

// The usual preStop, `sh -c "sleep 20"`, cannot run in a scratch image: the kubelet
// reports FailedPreStopHook and the container gets SIGTERM at once — the dropped
// requests nap exists to end. The sleep is long so that a slow deletion under the
// parallel tests' load (5.2 s once, with no sleep at all) cannot pass for it.
func TestShellPreStopFails(t *testing.T) {
	t.Parallel() // see doc.go: after the tests that change the lab
	cs := client(t)
	ns := namespace(t, cs)
	withShell := strings.Replace(appDeployment, "        readinessProbe:", `        lifecycle:
          preStop:
            exec: {command: ["/bin/sh", "-c", "sleep 20"]}
        readinessProbe:`, 1)
	// A Service makes it a workload `napctl status` judges.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "app"},
		Ports: []corev1.ServicePort{{Port: 80, TargetPort: intOrPort(8080)}}}}
	if _, err := cs.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := deploy(t, cs, ns, []byte(withShell))
	took, reasons := terminate(t, cs, pod)
	t.Logf("terminated in %v; events: %q", took, reasons)
	if !hasReason(reasons, "FailedPreStopHook") {
		t.Errorf("no FailedPreStopHook event: %q", reasons)
	}
	if took >= 15*time.Second {
		t.Errorf("terminated in %v: as if the shell had slept (20 s)", took)
	}

	// napctl status shows the failure on the Deployment, with its cause.
	var out, errOut bytes.Buffer
	if code := app.Run(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		[]string{"status", "--kubeconfig", kubeconfigPath(), "-n", ns, "-o", "json"}); code != 0 {
		t.Fatalf("napctl status: exit %d: %s", code, errOut.String())
	}
	var rep status.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("napctl status -o json: %v\n%s", err, out.String())
	}
	if len(rep.Namespaces) != 1 || len(rep.Namespaces[0].Workloads) != 1 {
		t.Fatalf("napctl status: want one workload in %s:\n%s", ns, out.String())
	}
	w := rep.Namespaces[0].Workloads[0]
	// The kubelet's event gives no reason (so that no secret leaks): the cause comes
	// from the hook.
	if w.FailedPreStopHooks < 1 || !strings.Contains(w.FailureCause, `"/bin/sh -c sleep 20"`) || w.Safe {
		t.Errorf("napctl status: %+v, want its FailedPreStopHook with the hook's /bin/sh as the cause, and not safe", w)
	}
	t.Logf("napctl status: %d FailedPreStopHook, last %q: %s", w.FailedPreStopHooks, w.LastFailure, w.FailureCause)
}

// hookSeccomp waits up to wait for a process whose command line is cmdline and returns
// the Seccomp field of its /proc status ("0" none, "2" filter), or "" if none showed up.
func hookSeccomp(cmdline string, wait time.Duration) string {
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
			if err != nil || string(b) != cmdline {
				continue
			}
			status, err := os.ReadFile(filepath.Join("/proc", d.Name(), "status"))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(status), "\n") {
				if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
					return strings.TrimSpace(v)
				}
			}
		}
	}
	return ""
}
