package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/probe"
	"github.com/nap-k8s/nap/test/forensic"
)

// ingressAccess reads what the lab's ingress logged of ns's requests since since: the
// file its pod writes into a volume in memory (hack/ingress.yaml), read on the node.
func ingressAccess(t *testing.T, cs *kubernetes.Clientset, ns string, since time.Time) []forensic.AccessEntry {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ingressNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=traefik"})
	if err != nil {
		t.Fatal(err)
	}
	var out []forensic.AccessEntry
	for _, p := range pods.Items {
		file := filepath.Join(podVolume(p, ingressAccessVolume), "access.log")
		log, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("the ingress's access log (pod %s): %v", p.Name, err)
		}
		// A line the ingress is writing as this reads it is a later request's.
		log = log[:bytes.LastIndexByte(log, '\n')+1]
		es, err := forensic.ParseAccessLog(log, ns)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, e := range es {
			if !e.Start.Before(since) {
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, func(a, b forensic.AccessEntry) int { return a.Start.Compare(b.Start) })
	return out
}

// ingressAccessVolume is the ingress pod's volume its access log is in (hack/ingress.yaml).
const ingressAccessVolume = "access-log"

// podVolume is where p's node keeps p's emptyDir volume vol: the lab's nodes are on
// this machine, each kubelet with a root directory of its own (hack/cluster.sh).
func podVolume(p corev1.Pod, vol string) string {
	root := filepath.Join(filepath.Dir(kubeconfigPath()), "kubelet")
	if p.Spec.NodeName == node2 {
		root = filepath.Join(filepath.Dir(kubeconfigPath()), "node2", "kubelet")
	}
	return filepath.Join(root, "pods", string(p.UID), "volumes", "kubernetes.io~empty-dir", vol)
}

// addresses gives what forensic.IngressVerdict needs of each pod seen, by address, with left
// (when the ingress let each address go). Of two pods with one address, the one that
// was deleted.
func (r *terminations) addresses(left map[string]time.Time) map[string]forensic.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]forensic.Pod{}
	for name, l := range r.lives {
		if l.ip == "" {
			continue
		}
		if _, seen := out[l.ip]; seen && l.deleting.IsZero() {
			continue
		}
		out[l.ip] = forensic.Pod{Name: name, LetGo: left[l.ip], Exited: l.exited}
	}
	return out
}

// TestIngressLogUnblocked: the lab's ingress answers and logs every failed request while
// the container runtime of its node stands still, because its access log goes to a
// file in memory (hack/ingress.yaml), not to stdout, which containerd empties. Node 1's
// containerd is stopped (SIGSTOP) for 4 s while 800 requests go through the ingress at
// 200 a second to a server that refuses them: each must get its 502 before the probe's
// 2 s timeout, and the log must hold each. With the log on stdout, the ingress answered
// the first 160 or so and held the rest until containerd went on (docs/testing.md).
func TestIngressLogUnblocked(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	ns := namespace(t, cs)
	pods, err := cs.CoreV1().Pods(ingressNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=traefik"})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.PodIP == "" {
		t.Fatalf("the lab's ingress pod: %v %v", pods, err)
	}
	// A Service whose one endpoint is a port of the ingress's own pod that nothing
	// listens on: every request is refused by the pod, and answered 502 at once.
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intOrPort(1)}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "app-refused", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To(int32(1)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{pods.Items[0].Status.PodIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: networkingv1.IngressSpec{
		IngressClassName: ptr.To(ingressClass),
		Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/" + ns, PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
	if _, err := cs.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	url := ingressURL(t, cs, ns+"/")
	c := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusBadGateway {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered 502: %v", url, err)
		}
	}

	pidFile := filepath.Join(filepath.Dir(kubeconfigPath()), "pids", "containerd")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", pidFile, err)
	}
	resume := sync.OnceFunc(func() {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Errorf("node 1's containerd (pid %d) not resumed: %v", pid, err)
		}
	})
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("node 1's containerd (pid %d): %v", pid, err)
	}
	t.Cleanup(resume)
	time.AfterFunc(4*time.Second, resume)
	var results []probe.Result
	err = probe.Run(ctx, probe.Options{URL: url, Rate: 200, Duration: 4 * time.Second, Timeout: 2 * time.Second}, func(r probe.Result) { results = append(results, r) })
	resume()
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 800 {
		t.Fatalf("%d results, want 800", len(results))
	}
	var unanswered []string
	at := func(r probe.Result) string {
		return fmt.Sprintf("%.2f s over a %s connection from %s", r.Due.Add(r.Lag).Sub(start).Seconds(), r.Mode, r.Local)
	}
	for _, r := range results {
		if r.Code != http.StatusBadGateway {
			unanswered = append(unanswered, fmt.Sprintf("%s: %s after %v (%s)", at(r), r.Kind, r.Latency.Round(time.Millisecond), r.Err))
		}
	}
	if len(unanswered) > 0 {
		t.Errorf("%d of 800 requests were not answered 502 while containerd stood still; the first: %s", len(unanswered), unanswered[0])
	}
	var unlogged []string
	for k, i := range forensic.LoggedAs(ingressAccess(t, cs, ns, start), results) {
		if i < 0 && results[k].Local != "" {
			unlogged = append(unlogged, at(results[k]))
		}
	}
	if len(unlogged) > 0 {
		t.Errorf("%d of 800 requests are not in the ingress's access log; the first: %s", len(unlogged), unlogged[0])
	}
}
