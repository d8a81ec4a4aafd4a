package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// verdictCase is one pod of TestVerdictInStatus: how it differs from the demo app with
// nap's 2 s fixed delay, and the verdict each container must leave in its final status
// (none: no verdict, "" for a container that ends with no message).
type verdictCase struct {
	name   string
	mutate func(*corev1.PodSpec)
	// traffic: requests from the test to the pod until it is gone (node 1 only), over
	// one kept connection (kept) or each over a new one (fresh); "" for none.
	traffic string
	nodes   []string
	want    map[string]string // container → kind, or "" for no verdict
}

// verdictCases are the edges the issue names, each on both kubelets unless it needs the
// test's own traffic (which reaches node 1's pods only).
var verdictCases = []verdictCase{
	{name: "scratch", want: map[string]string{"app": nap.Quiet}},
	// The kubelet's readiness probe every second, which goes on while the pod
	// terminates: with its background (--allow, as nap writes the hook) it is not
	// traffic; without, it reads late (the negative control).
	{name: "probes, the background", mutate: func(s *corev1.PodSpec) {
		s.Containers[0].ReadinessProbe = demoProbe()
	}, want: map[string]string{"app": nap.Quiet}},
	{name: "probes, no background", mutate: func(s *corev1.PodSpec) {
		s.Containers[0].ReadinessProbe = demoProbe()
		s.Containers[0].Lifecycle.PreStop.Exec.Command = []string{kube.MountPath + "/" + kube.BinaryName, "2s"}
	}, want: map[string]string{"app": nap.Late}},
	{name: "read-only root", mutate: func(s *corev1.PodSpec) {
		s.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
	}, want: map[string]string{"app": nap.Quiet}},
	{name: "two containers", mutate: func(s *corev1.PodSpec) {
		second := *s.Containers[0].DeepCopy()
		second.Name = "sidecar"
		second.Command = []string{kube.MountPath + "/" + kube.BinaryName, "inf"}
		second.ReadinessProbe = nil
		s.Containers = append(s.Containers, second)
	}, want: map[string]string{"app": nap.Quiet, "sidecar": nap.Quiet}},
	// The kubelet mounts the message at the path the container names, and nothing at
	// nap's: the wait is the same, and says nothing.
	{name: "custom message path", mutate: func(s *corev1.PodSpec) {
		s.Containers[0].TerminationMessagePath = "/tmp/message"
	}, want: map[string]string{"app": ""}},
	// The grace period ends before the delay: the kubelet kills the hook, the head stays.
	{name: "grace shorter than the wait", mutate: func(s *corev1.PodSpec) {
		s.TerminationGracePeriodSeconds = ptr.To[int64](2)
		s.Containers[0].Lifecycle.PreStop.Exec.Command = []string{kube.MountPath + "/" + kube.BinaryName, "10s"}
	}, want: map[string]string{"app": nap.Cut}},
	// Requests to the pod until it is gone: the routes (here the test itself) still
	// open connections when the delay ends; over one kept connection, a keep-alive
	// client still sends then.
	{name: "new connections to the end", traffic: trafficFresh, nodes: []string{node1}, want: map[string]string{"app": nap.Late}},
	{name: "a kept connection to the end", traffic: trafficKept, nodes: []string{node1}, want: map[string]string{"app": nap.Held}},
}

// The test's traffic to a pod (verdictCase.traffic).
const (
	trafficKept  = "kept"
	trafficFresh = "fresh"
)

// TestVerdictInStatus: on both of the lab's kubelets, what nap appends to a container's
// /dev/termination-log reaches the pod's final status, where a controller watching pods
// reads it (state.terminated.message, written before the pod is deleted): in a scratch
// image, with a read-only root, for each of two containers; a custom
// terminationMessagePath gets none, a grace period shorter than the wait leaves the
// line cut, new connections until the end read late, requests over a kept one held. The demo app's readiness probe is kept
// only where a case says so: its hook is written for it (--allow 3: a probe every
// second, in the fixed wait's 2 s), which the other cases need not.
func TestVerdictInStatus(t *testing.T) {
	t.Parallel() // see doc.go: after the tests that change the lab
	cs := client(t)
	ns := namespace(t, cs)
	ctx := context.Background()
	base := demoPodSpec(t, injectApp(t, inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("2s")}))
	if got := strings.Join(base.Containers[0].Lifecycle.PreStop.Exec.Command, " "); got != "/nap/nap 2s --allow 3" {
		t.Fatalf("the injected hook %q, want /nap/nap 2s --allow 3", got)
	}
	base.Containers[0].ReadinessProbe = nil

	type run struct {
		c    verdictCase
		node string
		pod  *corev1.Pod
	}
	var runs []*run
	for _, c := range verdictCases {
		nodes := c.nodes
		if len(nodes) == 0 {
			nodes = []string{node1, node2}
		}
		for _, node := range nodes {
			spec := *base.DeepCopy()
			spec.NodeName = node
			if c.mutate != nil {
				c.mutate(&spec)
			}
			name := strings.NewReplacer(" ", "-", ",", "").Replace(c.name) + "-" + map[string]string{node1: "n1", node2: "n2"}[node]
			p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"verdict": "e2e"}}, Spec: spec}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			runs = append(runs, &run{c: c, node: node, pod: p})
		}
	}
	for _, r := range runs {
		r.pod = waitRunning(t, cs, ns, r.pod.Name)
	}

	// Each pod's last status before it is gone, from one watch, as a controller sees it.
	final, gone := watchGone(t, cs, ns, "verdict=e2e", runs[len(runs)-1].pod.ResourceVersion, len(runs))

	// Traffic: a request every 50 ms to each such pod, from before its deletion until it
	// stops answering, at most 400 (20 s).
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, r := range runs {
		if r.c.traffic == "" {
			continue
		}
		url := "http://" + r.pod.Status.PodIP + ":8080/"
		waitServing(t, url, "")
		wg.Go(func() {
			hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: r.c.traffic == trafficFresh}}
			for range 400 {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if resp, err := hc.Get(url); err == nil {
					io.Copy(io.Discard, resp.Body) // read whole: a kept connection is reused only then
					resp.Body.Close()
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond) // the traffic's first requests
	for _, r := range runs {
		if err := cs.CoreV1().Pods(ns).Delete(ctx, r.pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone()
	close(stop)
	wg.Wait()

	versions := nodeVersions(t, cs)
	for _, r := range runs {
		p := final[r.pod.Name]
		if p == nil {
			t.Errorf("%s on %s: never seen by the watch", r.c.name, r.node)
			continue
		}
		for name, want := range r.c.want {
			msg, ok := terminatedMessage(p, name)
			v, parsed := nap.ParseVerdict(msg)
			got := ""
			if parsed {
				got = v.Kind
			}
			t.Logf("%s, %s (kubelet %s), container %s: terminated %v, message %q", r.c.name, r.node, versions[r.node], name, ok, msg)
			switch {
			case !ok:
				t.Errorf("%s on %s: container %s has no terminated state in the pod's last status before deletion", r.c.name, r.node, name)
			case got != want:
				t.Errorf("%s on %s: container %s's verdict %q, want %q (message %q)", r.c.name, r.node, name, got, want, msg)
			}
		}
	}
}

// watchGone watches the pods labelled selector in ns from resourceVersion: final holds
// each one's last status (a terminated container's message, which the kubelet writes
// before the pod is deleted, as nap's controller reads it); gone waits until n of them
// are deleted, at most 90 s, then ends the watch.
func watchGone(t *testing.T, cs *kubernetes.Clientset, ns, selector, resourceVersion string, n int) (final map[string]*corev1.Pod, gone func()) {
	t.Helper()
	w, err := cs.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: selector, ResourceVersion: resourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	final = map[string]*corev1.Pod{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		deleted := 0
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok {
				final[p.Name] = p
				if ev.Type == watch.Deleted {
					if deleted++; deleted == n {
						return
					}
				}
			}
		}
	}()
	t.Cleanup(w.Stop)
	return final, func() {
		t.Helper()
		select {
		case <-done:
		case <-time.After(90 * time.Second):
			t.Errorf("pods not gone 90 s after their deletion")
		}
		w.Stop()
		<-done
	}
}

// demoProbe is appDeployment's readiness probe.
func demoProbe() *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intOrPort(8080)}}, PeriodSeconds: 1}
}

// demoPodSpec is the pod template of src, one Deployment.
func demoPodSpec(t *testing.T, src []byte) corev1.PodSpec {
	t.Helper()
	return decodeDeployment(t, src).Spec.Template.Spec
}

// waitRunning waits up to 90 s for pod name's containers to be running.
func waitRunning(t *testing.T, cs *kubernetes.Clientset, ns, name string) *corev1.Pod {
	t.Helper()
	var last string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			continue
		}
		running := len(p.Status.ContainerStatuses) == len(p.Spec.Containers)
		for _, c := range p.Status.ContainerStatuses {
			running = running && c.State.Running != nil
		}
		if running && p.Status.PodIP != "" {
			return p
		}
		last = fmt.Sprintf("phase %s, %d container statuses", p.Status.Phase, len(p.Status.ContainerStatuses))
	}
	t.Fatalf("pod %s not running after 90 s: %s", name, last)
	return nil
}

// terminatedMessage is container name's termination message in p's status, and whether
// it has a terminated state at all.
func terminatedMessage(p *corev1.Pod, name string) (string, bool) {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == name && c.State.Terminated != nil {
			return c.State.Terminated.Message, true
		}
	}
	return "", false
}

// nodeVersions are the lab's kubelets' versions, by node.
func nodeVersions(t *testing.T, cs *kubernetes.Clientset) map[string]string {
	t.Helper()
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := map[string]string{}
	for _, n := range nodes.Items {
		v[n.Name] = n.Status.NodeInfo.KubeletVersion
	}
	return v
}

// TestShutdownCutsTheWait: a node shutdown's budget is a negative control that must read
// cut. Node 2's kubelet (1.34) gives regular pods its shutdownGracePeriod less the
// critical pods' share: 20 s on the lab. Two demo pods there, each with a grace period
// of 40 s so that only the budget can end their hook: nap 25s, which the budget cuts
// (the kubelet kills it at 20 s: the head alone stays in the message), and nap 3s,
// which ends within it (quiet). The shutdown is announced by node 2's logind, then
// cancelled once the kubelet has stopped them; the pods stay, Failed, with their final
// status.
func TestShutdownCutsTheWait(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	ctx := context.Background()
	base := demoPodSpec(t, injectApp(t, inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("2s")}))
	base.Containers[0].ReadinessProbe = nil
	base.NodeName = node2
	base.TerminationGracePeriodSeconds = ptr.To[int64](40)
	want := map[string]string{"cut-by-the-budget": nap.Cut, "within-the-budget": nap.Quiet}
	for name, delay := range map[string]string{"cut-by-the-budget": "25s", "within-the-budget": "3s"} {
		spec := *base.DeepCopy()
		spec.Containers[0].Lifecycle.PreStop.Exec.Command = []string{kube.MountPath + "/" + kube.BinaryName, delay}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "app"}}, Spec: spec}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for name := range want {
		waitRunning(t, cs, ns, name)
	}
	shutdownNode2(t, cs, ns)
	for name, kind := range want {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s after the shutdown: %v", name, err)
		}
		msg, ok := terminatedMessage(p, base.Containers[0].Name)
		v, parsed := nap.ParseVerdict(msg)
		t.Logf("%s: %s %s (%s); terminated %v, message %q", name, p.Status.Phase, p.Status.Reason, p.Status.Message, ok, msg)
		if !ok || !parsed || v.Kind != kind {
			t.Errorf("%s: message %q, want a verdict %s", name, msg, kind)
		}
	}
}
