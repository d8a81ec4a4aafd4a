package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/version"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/traffic"
)

// calibrateQuiet is the --quiet of the calibrations that must lose nothing themselves:
// calibrate ends a deleted pod's hold once it has left every EndpointSlice and nothing
// reached it for that long, so it must outlast the slowest kube-proxy's programming
// after the slice changed. 3 s lost one request once (2026-12-07, CI: a timeout over the
// ClusterIP 12.5 s into TestLoadBalancerCalibrated's calibration, both kube-proxies
// programming 1 to 2 s behind under the suite's load).
const calibrateQuiet = "5s"

// TestCalibrate: napctl calibrate on the lab measures the tail of every path (the
// ClusterIP and a NodePort from node 1, a headless Service's name resolved at the lab's
// cluster DNS at each new connection, the ingress), recommends a delay that covers
// the longest, loses no request on the way, and leaves nothing behind; it refuses a
// namespace it did not create.
func TestCalibrate(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	ns := "nap-calibrate-e2e"
	saved := filepath.Join(t.TempDir(), "calibration.json")
	// --store keeps it in the cluster too, in the namespace of a nap controller.
	napNS := "nap-calibration-e2e"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: napNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.CoreV1().Namespaces().Delete(context.Background(), napNS, metav1.DeleteOptions{}) })
	args := []string{"calibrate", "--kubeconfig", kubeconfigPath(), "-n", ns, "--image", controllerImage, "--rounds", "1", "--quiet", calibrateQuiet,
		"--ingress-class", "traefik", "--ingress-url", strings.TrimSuffix(ingressURL(t, cs, ""), "/"), "--dns", clusterDNS, "-o", "json", "--save", saved,
		"--store", "--nap-namespace", napNS}
	cmd := exec.Command(napctl(t), args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("napctl calibrate: %v\n%s", err, out.String())
	}
	t.Logf("calibrated in %v:\n%s", time.Since(began).Round(time.Second), out.String())
	var rep calibration
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatal(err)
	}
	// Each round restarts the 3 replicas: a sample per replaced pod.
	if len(rep.Rounds) != 3 || len(rep.Paths) != 4 {
		t.Fatalf("%d samples, %d paths; want 3 (a round of 3 pods) and 4 (clusterip, headless-dns, nodeport, ingress)", len(rep.Rounds), len(rep.Paths))
	}
	longest := 0.0
	for _, p := range rep.Paths {
		// A tail is how long the path still sent to the pod after its termination
		// began: 0 when routes forgot it first, never the whole hold.
		if p.Samples != 3 || p.Max < 0 || p.Max >= 60 || p.Failed != 0 || p.Requests < 300 {
			t.Errorf("path %s: %d samples, max %.2fs, %d of %d requests failed", p.Path.Name, p.Samples, p.Max, p.Failed, p.Requests)
		}
		longest = max(longest, p.Max)
	}
	for _, r := range rep.Rounds {
		if r.Censored {
			t.Errorf("pod %s still answered when its hold ended", r.Pod)
		}
	}
	if rep.Delay < longest+2 || rep.Delay >= longest+3 || rep.Grace != rep.Delay+30 {
		t.Errorf("recommended delay %gs and grace %gs for a longest tail of %.2fs", rep.Delay, rep.Grace, longest)
	}
	// The adaptive wait's MIN is the fixed delay: sparse traffic cannot end it early.
	if a := rep.Adaptive; a.Min != rep.Delay || a.Quiet != 2 || a.Max != max(60, 2*rep.Delay) || a.Grace != a.Max+30 {
		t.Errorf("recommended adaptive wait %+v beside a fixed delay of %gs", a, rep.Delay)
	}
	checkSaved(t, cs, saved, rep)
	// What it kept in the cluster is what it saved, as the controller reads it.
	cm, err := cs.CoreV1().ConfigMaps(napNS).Get(ctx, kube.CalibrationConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := controller.ReadCalibrationConfigMap(cm)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := os.Open(saved); err != nil {
		t.Fatal(err)
	} else if file, err := traffic.ReadCalibration(f, saved); f.Close() != nil || err != nil || !reflect.DeepEqual(file, kept) {
		t.Errorf("kept in the cluster %+v, saved %+v (%v)", kept, file, err)
	}

	// Nothing left: the namespace it created is deleted (it may still be terminating).
	if n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil && n.DeletionTimestamp == nil {
		t.Errorf("namespace %s left behind", ns)
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	// Ctrl-C while it runs: it deletes what it made and exits 130.
	cmd = exec.Command(napctl(t), "calibrate", "--kubeconfig", kubeconfigPath(), "-n", ns, "--image", controllerImage, "--rounds", "5")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		// The namespace of the first run must be gone before a second can create it.
		if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s still there 2 minutes after the first calibration", ns)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(stderr.String(), "deployed"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("calibrate did not deploy within a minute:\n%s", stderr.String())
		}
	}
	cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "cleaned up "+ns) {
		t.Errorf("interrupted calibrate: %v\n%s", err, stderr.String())
	}
	if n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil && n.DeletionTimestamp == nil {
		t.Errorf("namespace %s left behind after Ctrl-C", ns)
	}

	// A namespace it did not create: refused, exit 2, nothing made there.
	other := namespace(t, cs)
	cmd = exec.Command(napctl(t), "calibrate", "--kubeconfig", kubeconfigPath(), "-n", other, "--image", controllerImage)
	msg, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(msg), "calibrate did not create it") {
		t.Errorf("calibrate in %s: %v\n%s", other, err, msg)
	}
	if d, err := cs.AppsV1().Deployments(other).List(ctx, metav1.ListOptions{}); err != nil || len(d.Items) != 0 {
		t.Errorf("deployments in %s after the refusal: %v %v", other, d, err)
	}
}

// TestCalibrateImagePull: calibrate's pods cannot pull their image (a registry on the
// nodes' loopback that refuses: no traffic leaves the machine). It says so within
// seconds, naming the image and how to build and push one, exits 2, and deletes what
// it created.
func TestCalibrateImagePull(t *testing.T) {
	t.Parallel()
	cs := client(t)
	ns := "nap-calibrate-pull"
	image := "127.0.0.1:9/napctl:missing"
	cmd := exec.Command(napctl(t), "calibrate", "--kubeconfig", kubeconfigPath(), "-n", ns, "--image", image, "-o", "json")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	t.Logf("napctl calibrate with an image it cannot pull: %v after %v\n%s", err, took.Round(time.Second), stderr.String())
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("exit: %v, want 2", err)
	}
	for _, want := range []string{"cannot pull their image " + image, "go run ./hack/images -version " + version.Version, "--image REGISTRY/napctl:" + version.Version} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q", want)
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout: %q, want nothing", stdout.String())
	}
	// Minutes was the readiness deadline; the kubelet says ErrImagePull within seconds.
	if took > time.Minute {
		t.Errorf("took %v to say the image cannot be pulled", took)
	}
	if n, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err == nil && n.DeletionTimestamp == nil {
		t.Errorf("namespace %s left behind", ns)
	}
}

// calibration is what napctl calibrate -o json reports.
type calibration struct {
	Rounds []struct {
		Pod      string             `json:"pod"`
		Tails    map[string]float64 `json:"tails_seconds"`
		Censored bool               `json:"censored"`
	} `json:"rounds"`
	Paths []struct {
		Path struct {
			Name string `json:"name"`
		} `json:"path"`
		Samples  int     `json:"samples"`
		Max      float64 `json:"max_seconds"`
		Failed   int     `json:"failed"`
		Requests int     `json:"requests"`
	} `json:"paths"`
	Delay    float64 `json:"recommended_delay_seconds"`
	Grace    float64 `json:"recommended_grace_period_seconds"`
	Longest  string  `json:"longest_path"`
	Adaptive struct {
		Min   float64 `json:"min_seconds"`
		Quiet float64 `json:"quiet_seconds"`
		Max   float64 `json:"max_seconds"`
		Grace float64 `json:"grace_period_seconds"`
	} `json:"adaptive_wait"`
}

// slowedSync is node 2's kube-proxy's minSyncPeriod in TestCalibrateSlowedPath.
const slowedSync = 5 * time.Second

// TestCalibrateSlowedPath validates calibrate's recommendation with the downtime
// experiment. The lab's own tails are short (at most 1.7 s, through Traefik), so the
// path is slowed: node 2's kube-proxy applies changes at most every 5 s
// (minSyncPeriod), and a ClusterIP seen from node 2 sends to a terminating pod for up
// to that long. calibrate, run in node 2's network namespace, must measure that tail;
// then a rolling restart seen from node 2 must lose no request over new connections
// with the recommended delay, and lose some with a fifth of it.
func TestCalibrateSlowedPath(t *testing.T) {
	cs := client(t)
	slowNode2Proxy(t, slowedSync)
	ns := "nap-calibrate-slowed"
	cmd := exec.Command("nsenter", "--net="+node2NetNS, napctl(t), "calibrate", "--kubeconfig", kubeconfigPath(), "-n", ns,
		"--image", controllerImage, "--rounds", "2", "--quiet", calibrateQuiet, "--nodeport", node2IP, "-o", "json")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("napctl calibrate on node 2: %v\n%s", err, out.String())
	}
	t.Logf("calibrated from node 2:\n%s", out.String())
	var rep calibration
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatal(err)
	}
	longest := 0.0
	for _, p := range rep.Paths {
		if p.Failed != 0 || p.Samples != 6 {
			t.Errorf("path %s: %d samples, %d of %d requests failed", p.Path.Name, p.Samples, p.Failed, p.Requests)
		}
		longest = max(longest, p.Max)
	}
	// Slowed, the path must show it: in a rollout, a change waits for the sync after
	// the one before it, at most minSyncPeriod (and the sync's own time) later.
	if longest < 2 || longest > slowedSync.Seconds()+1.5 {
		t.Fatalf("longest tail %.2fs from node 2 with a minSyncPeriod of %v: want 2 s to %v", longest, slowedSync, slowedSync+1500*time.Millisecond)
	}
	recommendedAndFifth(t, cs, clusterIPNode2, rollingRestart, 1, int(rep.Delay), longest)
}

// slowNode2Proxy restarts node 2's kube-proxy with minSyncPeriod d
// (hack/cluster.sh slow-node2), and with its default when the test ends.
func slowNode2Proxy(t *testing.T, d time.Duration) {
	t.Helper()
	run := func(args ...string) {
		cmd := exec.Command("bash", append([]string{filepath.Join("..", "..", "hack", "cluster.sh"), "slow-node2"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hack/cluster.sh slow-node2 %v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() { run() })
	run(d.String())
}

// syncBuffer is a buffer a process writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLoadBalancerCalibrated: behind the lab's load balancer (HAProxy, hack/lb) with
// externalTrafficPolicy Local and checks 1 s apart, napctl calibrate --lb local measures
// the load balancer's tail (only a scale-down shows it: a rollout keeps every node
// served), and a scale-down seen through the load balancer loses no request over new
// connections with the recommended delay, and loses some with a fifth of it: the load
// balancer keeps sending to a node left without a pod until its checks fail.
func TestLoadBalancerCalibrated(t *testing.T) {
	cs := client(t)
	ns := "nap-calibrate-lb"
	var flags []string
	for k, v := range lbLocalQuick.checks {
		flags = append(flags, "--lb-annotation", k+"="+v)
	}
	cmd := exec.Command(napctl(t), append([]string{"calibrate", "--kubeconfig", kubeconfigPath(), "-n", ns,
		"--image", controllerImage, "--rounds", "1", "--quiet", calibrateQuiet, "--nodeport", "-", "--lb", "local", "-o", "json"}, flags...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("napctl calibrate --lb local: %v\n%s", err, out.String())
	}
	t.Logf("calibrated through the load balancer:\n%s", out.String())
	var rep calibration
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatal(err)
	}
	var lb float64
	for _, p := range rep.Paths {
		if p.Failed != 0 || p.Samples != 5 {
			t.Errorf("path %s: %d samples (want 3 of the rollout, 2 of the scale-down), %d of %d requests failed", p.Path.Name, p.Samples, p.Failed, p.Requests)
		}
		if p.Path.Name == "lb-local" {
			lb = p.Max
		}
	}
	// 3 failed checks 1 s apart: the node is out 2 to 3 s after kube-proxy failed its
	// check (its sync, up to a second after the pod went unready).
	if rep.Longest != "lb-local" || lb < 2 || lb > 5 {
		t.Fatalf("longest tail %s, the load balancer's %.2fs: want the load balancer's, 2 s to 5 s", rep.Longest, lb)
	}
	recommendedAndFifth(t, cs, lbLocalQuick, scaleDown, 1, int(rep.Delay), lb)
}

// recommendedAndFifth measures disruption d on path with nap at the delay calibrate
// recommended (seconds), which must lose no request over new connections, and at a
// fifth of it (at least 1 s), which must lose some; tail is the calibrated tail, for the
// message.
func recommendedAndFifth(t *testing.T, cs *kubernetes.Clientset, path labPath, d disruption, rounds, delay int, tail float64) {
	t.Helper()
	for _, c := range []struct {
		delay   int
		wantNew bool // requests over new connections fail
	}{{delay, false}, {max(1, delay/5), true}} {
		v := variant{name: fmt.Sprintf("nap preStop %ds", c.delay), mode: "plain",
			inject: &inject.Options{Mode: inject.ModeBinary, Wait: fixedWait(fmt.Sprintf("%ds", c.delay))}}
		expect := fails
		if !c.wantNew {
			v.name += " (recommended)"
			expect = newClean
		}
		m := prove(t, cs, scenario{path: path, disruption: d, variant: v, expect: expect, rounds: rounds, vegeta: true}, 200)
		if c.wantNew && path.path.NodeChecked && m.failedNew() > 0 {
			// The load balancer's connection log, which a loss with the recommended
			// delay is looked up in, holds the failed connections it took.
			es, msgs, err := lbConnections(lbSocket(m.ns, path.lbService()))
			if err != nil {
				t.Fatalf("%s: the load balancer's connection log: %v", m.scenario, err)
			}
			lines, missing := lbLookup(t, es, msgs, m.summary.Failures, m.start)
			for _, l := range lines {
				t.Logf("%s: %s", m.scenario, l)
			}
			if missing > 0 {
				t.Errorf("%s: the load balancer's connection log does not hold %d of the failed connections looked up (the first 5 at most)", m.scenario, missing)
			}
		}
		if c.wantNew && m.failedNew() == 0 {
			t.Errorf("%s: no request over a new connection failed at a fifth of the delay; tail calibrated %.2fs; outages %+v", m.scenario, tail, m.summary.Outages)
		}
	}
}

// checkSaved: what calibrate --save wrote is the report's paths, each with the delay it
// needs, and napctl lint --calibration holds a workload behind the ingress to the
// slowest of its paths, in files and live: 1 s is too short, the recommended delay is
// not.
func checkSaved(t *testing.T, cs *kubernetes.Clientset, saved string, rep calibration) {
	t.Helper()
	f, err := os.Open(saved)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cal, err := traffic.ReadCalibration(f, saved)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Paths {
		tl, ok := cal.Tail(p.Path.Name)
		if !ok || tl.Max != p.Max || tl.Samples != p.Samples || tl.DelayS != math.Ceil(p.Max+2) {
			t.Errorf("saved %s: %+v (%v); the report's max %.2fs of %d samples", p.Path.Name, tl, ok, p.Max, p.Samples)
		}
	}
	workload := func(name string, delay int) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s}
spec:
  replicas: 2
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      terminationGracePeriodSeconds: 60
      containers:
      - name: app
        image: registry.example/app:1
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /readyz, port: 8080}}
        lifecycle: {preStop: {sleep: {seconds: %[2]d}}}
---
apiVersion: v1
kind: Service
metadata: {name: %[1]s}
spec:
  selector: {app: %[1]s}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: %[1]s}
spec:
  defaultBackend: {service: {name: %[1]s, port: {number: 80}}}
`, name, delay)
	}
	manifests := []byte(workload("short", 1) + "---\n" + workload("covered", int(rep.Delay)))
	file := filepath.Join(t.TempDir(), "app.yaml")
	if err := os.WriteFile(file, manifests, 0o644); err != nil {
		t.Fatal(err)
	}
	// The same objects in the cluster, linted live: the Ingress is read as the Services
	// are (their pods never start: the image is nowhere, and lint reads objects only).
	ns := namespace(t, cs)
	kubectl(t, manifests, "apply", "-n", ns, "-f", "-")
	for _, args := range [][]string{
		{"lint", "-f", file, "--calibration", saved, "--kube-version", "1.34", "-o", "json"},
		{"lint", "--kubeconfig", kubeconfigPath(), "-n", ns, "--calibration", saved, "-o", "json"},
	} {
		out, err := exec.Command(napctl(t), args...).Output()
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
			t.Fatalf("napctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		var report struct {
			Findings []struct{ ID, Name, Message string }
		}
		if err := json.Unmarshal(out, &report); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var below []string
		for _, fd := range report.Findings {
			if fd.ID == "delay-below-path" {
				below = append(below, fd.Name)
				t.Logf("%s: %s", fd.Name, fd.Message)
			}
		}
		if !slices.Equal(below, []string{"short"}) {
			t.Errorf("napctl %s: delay-below-path on %q, want on short alone (1 s; covered holds %gs): %s", strings.Join(args, " "), below, rep.Delay, out)
		}
	}
}
