package probe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
)

// fakeRollout plays what a rollout does to the API on a cluster without kubelets: every
// period, one pod of app=web begins terminating, leaves its Service's EndpointSlice,
// exits and is deleted, and a new one is created, becomes ready and joins. It stops
// when ctx ends and returns how many pods it replaced.
func fakeRollout(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, period time.Duration) (done func() int) {
	t.Helper()
	web := map[string]string{"app": "web"}
	c := context.Background()
	if _, err := cs.AppsV1().Deployments(ns).Create(c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: web},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: web}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	var live []string
	n := 0
	slice := func() {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{}}
		for i, p := range live {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.0.0.%d", i+1)},
				Conditions: discoveryv1.EndpointConditions{Ready: &yes, Terminating: &no}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: p}})
		}
		if cur, err := cs.DiscoveryV1().EndpointSlices(ns).Get(c, s.Name, metav1.GetOptions{}); err == nil {
			s.ResourceVersion = cur.ResourceVersion
			_, err = cs.DiscoveryV1().EndpointSlices(ns).Update(c, s, metav1.UpdateOptions{})
			if err != nil {
				t.Error(err)
			}
			return
		}
		if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(c, s, metav1.CreateOptions{}); err != nil {
			t.Error(err)
		}
	}
	add := func() {
		name := fmt.Sprintf("web-%05d", n)
		n++
		p, err := cs.CoreV1().Pods(ns).Create(c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: web},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(c, p, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
		}
		live = append(live, name)
		slice()
	}
	remove := func() {
		name := live[0]
		if err := cs.CoreV1().Pods(ns).Delete(c, name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
		live = live[1:]
		slice()
		zero := int64(0)
		if err := cs.CoreV1().Pods(ns).Delete(c, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Error(err)
		}
	}
	for range 4 {
		add()
	}
	var wg sync.WaitGroup
	replaced := 0
	wg.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				add()
				remove()
				replaced++
			}
		}
	})
	return func() int { wg.Wait(); return replaced }
}

func buildNapctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "napctl")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nap-k8s/nap/cmd/napctl").CombinedOutput(); err != nil {
		t.Fatalf("go build napctl: %v\n%s", err, out)
	}
	return bin
}

// localServer answers 200 on loopback until the test ends.
func localServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String() + "/"
}

// rolloutBench is what both tests below probe and watch: an API server (its kubeconfig)
// whose namespace shop has Deployment web replaced twice a second until cancel, napctl,
// and a loopback server's URL.
func rolloutBench(t *testing.T) (kubeconfig, bin, url string, cancel context.CancelFunc, replaced func() int) {
	t.Helper()
	cfg := kubeenv.APIServer(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	replaced = fakeRollout(ctx, t, cs, "shop", 500*time.Millisecond)
	return kubeenv.Kubeconfig(t, cfg), buildNapctl(t), localServer(t), cancel, replaced
}

// TestProbeWatch: napctl probe --watch on a real API server puts a rollout's pods and
// endpoints on its report, in text and JSON, and writes a JUnit report.
func TestProbeWatch(t *testing.T) {
	kubeconfig, bin, url, cancel, replaced := rolloutBench(t)
	junit := filepath.Join(t.TempDir(), "probe.xml")
	out, err := exec.Command(bin, "probe", url, "--rate", "100", "--duration", "3s", "--watch", "deploy/web", "-n", "shop",
		"--kubeconfig", kubeconfig, "-o", "json", "--junit", junit).Output()
	cancel()
	n := replaced()
	if err != nil {
		t.Fatalf("napctl probe --watch: %v\n%s", err, out)
	}
	var s struct {
		Watch  string `json:"watch"`
		Events []struct {
			Seconds float64 `json:"offset_seconds"`
			Kind    string  `json:"kind"`
			Pod     string  `json:"pod"`
			Service string  `json:"service"`
		} `json:"events"`
		Buckets []struct {
			P99 float64 `json:"latency_p99_ms"`
		} `json:"buckets"`
		BucketSeconds float64 `json:"bucket_seconds"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatal(err)
	}
	if s.Watch != "deployment/web in namespace shop" || s.BucketSeconds != 0.1 || len(s.Buckets) != 30 {
		t.Errorf("watch %q, bucket %gs, %d buckets", s.Watch, s.BucketSeconds, len(s.Buckets))
	}
	kinds := map[string]int{}
	for _, e := range s.Events {
		kinds[e.Kind]++
		if !strings.HasPrefix(e.Pod, "web-") || strings.HasPrefix(e.Kind, "endpoint-") && e.Service != "web" {
			t.Errorf("event %+v", e)
		}
	}
	// Every replacement the probe saw whole gives these; the first and last may be cut.
	for _, k := range []string{"pod-created", "pod-ready", "endpoint-ready", "pod-deleting", "endpoint-removed", "pod-deleted"} {
		if kinds[k] < 3 || kinds[k] > n+1 {
			t.Errorf("%d %s events for %d replacements: %v", kinds[k], k, n, kinds)
		}
	}
	if !slices.IsSortedFunc(s.Events, func(a, b struct {
		Seconds float64 `json:"offset_seconds"`
		Kind    string  `json:"kind"`
		Pod     string  `json:"pod"`
		Service string  `json:"service"`
	}) int {
		return int((a.Seconds - b.Seconds) * 1e6)
	}) {
		t.Error("events out of time order")
	}
	if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), `failures="0"`) || !strings.Contains(string(b), "termination began") {
		t.Errorf("JUnit report: %v\n%s", err, b)
	}
	// A target that does not exist: exit 2 before any request, naming it.
	cmd := exec.Command(bin, "probe", url, "--duration", "1s", "--watch", "deploy/nope", "-n", "shop", "--kubeconfig", kubeconfig)
	msg, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(msg), `deploy/nope in namespace shop: deployments.apps "nope" not found`) {
		t.Errorf("missing target: %v\n%s", err, msg)
	}
}

// TestProbeWatchCost is part of `make bench`: napctl probe's CPU time per request at
// 2,000 requests a second for 10 s against a loopback server, with and without --watch
// of a Deployment whose pods are replaced twice a second (every replacement is six
// events), in alternating pairs. The requirement: with --watch at most 1.1× without.
func TestProbeWatchCost(t *testing.T) {
	if os.Getenv("NAP_BENCH_PROBE_WATCH") == "" {
		t.Skip("a benchmark: run it with make bench")
	}
	kubeconfig, bin, url, cancel, replaced := rolloutBench(t)
	run := func(watch bool) (perRequest time.Duration, events int) {
		args := []string{"probe", url, "--rate", "2000", "--duration", "10s", "-o", "json"}
		if watch {
			args = append(args, "--watch", "deploy/web", "-n", "shop", "--kubeconfig", kubeconfig)
		}
		cmd := exec.Command(bin, args...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("napctl %v: %v", args, err)
		}
		var s struct {
			Total  struct{ Requests, Failed int } `json:"total"`
			Events []json.RawMessage              `json:"events"`
		}
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatal(err)
		}
		if s.Total.Requests != 20000 || s.Total.Failed != 0 {
			t.Fatalf("%d requests, %d failed; want 20000, 0", s.Total.Requests, s.Total.Failed)
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return cpu / time.Duration(s.Total.Requests), len(s.Events)
	}
	var with, without []time.Duration
	events := 0
	for range 3 {
		d, _ := run(false)
		without = append(without, d)
		d, n := run(true)
		with = append(with, d)
		events += n
	}
	cancel()
	replaced()
	slices.Sort(with)
	slices.Sort(without)
	ratio := float64(with[1]) / float64(without[1])
	t.Logf("napctl probe, 2000/s for 10s, new+reuse, CPU per request (median of 3): without --watch %v, with %v (%d events in 3 runs): %.3f×", without[1], with[1], events, ratio)
	t.Logf("each run: without %v, with %v", without, with)
	if events < 3*10*2*6 {
		t.Errorf("%d events in 3 runs of 10 s, want a rollout's worth (%d)", events, 3*10*2*6)
	}
	if ratio > 1.1 {
		t.Errorf("--watch costs %.3f× the CPU per request, want at most 1.1×", ratio)
	}
}
