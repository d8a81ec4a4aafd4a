package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/probe"
)

// clusterDNS is the lab's cluster DNS, the ClusterIP of kube-system/kube-dns
// (hack/coredns.yaml), which both kubelets give their pods.
const clusterDNS = "10.79.0.10:53"

// TestClusterDNS: the lab's cluster DNS, CoreDNS as kubeadm deploys it, without
// forward. A headless Service selecting a pod on each node:
//   - its name resolves at the cluster DNS to both pods' IPs, from node 1 and from
//     each pod by the Service's short name (its kubelet's clusterDNS and search path:
//     /app -resolve, Go's resolver);
//   - a pod deleted leaves the answer once its endpoint is not ready: the test asks
//     every 100 ms and says how long that took (the headless Service's DNS path: a
//     client that resolves per connection learns of the pod's end then; one that pins
//     its connections does not);
//   - a name outside the cluster gets an error at once (SERVFAIL): nothing is sent on.
func TestClusterDNS(t *testing.T) {
	cs := client(t)
	ns := namespace(t, cs)
	ctx := context.Background()
	base := demoPodSpec(t, []byte(serviceDeployment))
	base.TerminationGracePeriodSeconds = new(int64) // gone at once: the answer is the subject
	var pods []*corev1.Pod
	for i, node := range []string{node1, node2} {
		spec := *base.DeepCopy()
		spec.NodeName = node
		p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dns-%d", i+1), Labels: map[string]string{"app": "dns"}}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, p)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dns-e2e"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
		Selector: map[string]string{"app": "dns"}, Ports: []corev1.ServicePort{{Name: "http", Port: 8080, TargetPort: intOrPort(8080)}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, p := range pods {
		pods[i] = waitRunning(t, cs, ns, p.Name)
		want = append(want, pods[i].Status.PodIP)
	}
	slices.Sort(want)

	name := "dns-e2e." + ns + ".svc.cluster.local"
	r := probe.Resolver(2*time.Second, clusterDNS) // from node 1, through kube-proxy's ClusterIP
	// answer asks the cluster DNS for name from node 1: its addresses, sorted.
	answer := func() ([]string, error) {
		got, err := answerFor(r, name)
		slices.Sort(got)
		return got, err
	}
	var got []string
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if got, err = answer(); err == nil && slices.Equal(got, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s at %s: %v (%v) 30 s after both pods ran, want %v", name, clusterDNS, got, err, want)
		}
	}
	for _, p := range pods {
		out, errOut, err := execPod(cs, ns, p.Name, "app", "/app", "-resolve", "dns-e2e")
		if lines := strings.Fields(out); err != nil || !slices.Equal(lines, want) {
			t.Errorf("pod %s on %s resolves dns-e2e to %q (%q, %v), want %v", p.Name, p.Spec.NodeName, out, errOut, err, want)
		}
	}

	// A pod deleted: how long until the answer leaves it out.
	gone := pods[1]
	deleted := time.Now()
	if err := cs.CoreV1().Pods(ns).Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := deleted.Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got, err = answer()
		if err == nil && !slices.Contains(got, gone.Status.PodIP) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still answers %v (%v) 30 s after pod %s (%s) was deleted", name, got, err, gone.Name, gone.Status.PodIP)
		}
	}
	t.Logf("pod %s on %s left %s's answer %v after its deletion", gone.Name, gone.Spec.NodeName, name, time.Since(deleted).Round(10*time.Millisecond))
	if left := pods[0].Status.PodIP; !slices.Equal(got, []string{left}) {
		t.Errorf("%s answers %v once pod %s went, want pod %s's %s alone", name, got, gone.Name, pods[0].Name, left)
	}

	// A name outside the cluster: an error at once, sent nowhere.
	start := time.Now()
	outside, err := answerFor(r, "nap.example.com.")
	var dnsErr *net.DNSError
	if err == nil || !errors.As(err, &dnsErr) || dnsErr.IsTimeout || time.Since(start) > time.Second {
		t.Errorf("nap.example.com. at %s: %v (%v) after %v, want an error at once (SERVFAIL: the lab's DNS forwards nothing)", clusterDNS, outside, err, time.Since(start))
	}
}

// answerFor asks r for name, at most 2 s.
func answerFor(r *net.Resolver, name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return r.LookupHost(ctx, name)
}
