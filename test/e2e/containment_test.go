package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// clusterSetting reads a setting of the lab from hack/cluster.sh, its one home.
func clusterSetting(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "hack", "cluster.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + `=([^\s#]+)`).FindSubmatch(src)
	if m == nil {
		t.Fatalf("hack/cluster.sh sets no %s", name)
	}
	return string(m[1])
}

// clusterRanges reads the cluster's ranges from hack/cluster.sh.
func clusterRanges(t *testing.T) (pods, services netip.Prefix, bridge string) {
	t.Helper()
	pods = netip.MustParsePrefix(clusterSetting(t, "POD_CIDR"))
	services = netip.MustParsePrefix(clusterSetting(t, "SVC_CIDR"))
	return pods, services, clusterSetting(t, "BRIDGE")
}

// routeDev is the device the kernel would send a packet to addr through. `ip route get`
// sends nothing.
func routeDev(t *testing.T, addr string) string { return route(t, addr, "dev") }

// routeSrc is the source address this host uses toward addr.
func routeSrc(t *testing.T, addr string) string { return route(t, addr, "src") }

// route is the value of field (dev, src) in `ip route get addr`.
func route(t *testing.T, addr, field string) string {
	t.Helper()
	out, err := exec.Command("ip", "route", "get", addr).CombinedOutput()
	if err != nil {
		t.Fatalf("ip route get %s: %v: %s", addr, err, out)
	}
	f := strings.Fields(string(out))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == field {
			return f[i+1]
		}
	}
	t.Fatalf("ip route get %s names no %s: %s", addr, field, out)
	return ""
}

// lastAddr is the last usable address of p (its broadcast address minus one).
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	n |= 1<<(32-p.Bits()) - 2
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

// TestContainment: while the cluster is up, an address of its ranges that nothing
// answers for yet — a Service IP not allocated, a pod IP outside this node's /24 — routes
// to a local device, never to the default route. Test traffic to it dies on the machine.
func TestContainment(t *testing.T) {
	cs := client(t) // the cluster is up
	pods, services, bridge := clusterRanges(t)
	list, err := cs.CoreV1().Services("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	allocated := map[string]bool{}
	for _, s := range list.Items {
		for _, ip := range append([]string{s.Spec.ClusterIP}, s.Spec.ClusterIPs...) {
			allocated[ip] = true
		}
	}
	// The last address of the range that no Service holds (tests running beside this
	// one allocate from the same range).
	svcIP := lastAddr(services)
	for allocated[svcIP.String()] && services.Contains(svcIP.Prev()) {
		svcIP = svcIP.Prev()
	}
	if allocated[svcIP.String()] {
		t.Fatalf("every address of %s is allocated", services)
	}
	podIP := lastAddr(pods) // the node's pods live in the first /24

	out, _ := exec.Command("ip", "route", "show", "default").Output()
	var defaultDev string
	if f := strings.Fields(string(out)); len(f) > 0 {
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "dev" {
				defaultDev = f[i+1]
			}
		}
	}
	for _, c := range []struct{ what, addr string }{
		{what: "an unallocated Service IP", addr: svcIP.String()},
		{what: "a pod IP outside the node's /24", addr: podIP.String()},
		{what: "the first Service IP", addr: services.Masked().Addr().Next().String()},
	} {
		dev := routeDev(t, c.addr)
		if dev != bridge && dev != "lo" {
			t.Errorf("%s (%s) routes to %s (default route: %s), want %s or lo", c.what, c.addr, dev, defaultDev, bridge)
		}
		if dev == defaultDev {
			t.Errorf("%s (%s) follows the default route", c.what, c.addr)
		}
	}
	// The check itself can fail: an address outside every range leaves by the default route.
	if defaultDev != "" {
		outside := net.IPv4(203, 0, 113, 77).String() // TEST-NET-3; nothing is sent
		if dev := routeDev(t, outside); dev == bridge {
			t.Errorf("%s, outside the cluster, routes to the bridge: the ranges are too wide", outside)
		}
	}
}

// TestContainmentNode2: node 2's pods are reached through its veth; node 2 itself has
// no route off the machine (an address outside the cluster is unreachable there); and
// node 1's pods, which have a default route to this host, are stopped at its FORWARD
// chain before any other device.
func TestContainmentNode2(t *testing.T) {
	client(t) // the cluster is up
	veth := clusterSetting(t, "VETH2")
	pods2 := netip.MustParsePrefix(clusterSetting(t, "NODE2_POD_CIDR"))
	if dev := routeDev(t, lastAddr(pods2).String()); dev != veth {
		t.Errorf("%s, a pod address of node 2, routes to %s, want %s", lastAddr(pods2), dev, veth)
	}
	for _, addr := range []string{"203.0.113.77", "8.8.8.8"} { // nothing is sent
		out, err := exec.Command("nsenter", "--net="+node2NetNS, "ip", "route", "get", addr).CombinedOutput()
		if err == nil {
			t.Errorf("node 2 has a route to %s: %s", addr, out)
		} else if !strings.Contains(string(out), "unreachable") {
			t.Errorf("ip route get %s on node 2: %v: %s", addr, err, out)
		}
	}
	// The same look-up for a cluster address works there: the check can tell.
	if out, err := exec.Command("nsenter", "--net="+node2NetNS, "ip", "route", "get", lastAddr(pods2).String()).CombinedOutput(); err != nil {
		t.Errorf("node 2 cannot route to its own pods: %v: %s", err, out)
	}
	rules, err := exec.Command("iptables", "-S", "FORWARD").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables -S FORWARD: %v: %s", err, rules)
	}
	pods, _, _ := clusterRanges(t)
	want := "-A FORWARD -s " + pods.String() + " ! -o nap+ -m comment --comment \"nap-lab: pods stay on this machine\" -j DROP"
	if !strings.Contains(string(rules), want) {
		t.Errorf("FORWARD has no rule %s:\n%s", want, rules)
	}
}

// TestContainmentLoadBalancer: the load balancers' range routes to their network
// namespace, from this host and from node 2; the namespace itself has no route off the
// machine, nor to an address of the range that no load balancer holds.
func TestContainmentLoadBalancer(t *testing.T) {
	client(t) // the cluster is up
	veth := clusterSetting(t, "VETH_LB")
	netns := "--net=/run/netns/" + clusterSetting(t, "LB_NETNS")
	lbs := netip.MustParsePrefix(clusterSetting(t, "LB_CIDR"))
	free := lastAddr(lbs).String() // hack/lb hands out addresses from the bottom
	if dev := routeDev(t, free); dev != veth {
		t.Errorf("%s, a load balancer address, routes to %s, want %s", free, dev, veth)
	}
	if out, err := exec.Command("nsenter", "--net="+node2NetNS, "ip", "route", "get", free).CombinedOutput(); err != nil || !strings.Contains(string(out), "dev eth0") {
		t.Errorf("node 2 routes %s: %v: %s, want through eth0 to this host", free, err, out)
	}
	for _, addr := range []string{"203.0.113.77", "8.8.8.8", free} { // nothing is sent
		out, err := exec.Command("nsenter", netns, "ip", "route", "get", addr).CombinedOutput()
		if err == nil {
			t.Errorf("the load balancer's namespace has a route to %s: %s", addr, out)
		} else if !strings.Contains(string(out), "unreachable") {
			t.Errorf("ip route get %s in the load balancer's namespace: %v: %s", addr, err, out)
		}
	}
	// The check can tell: the nodes are reachable from there.
	if out, err := exec.Command("nsenter", netns, "ip", "route", "get", node2IP).CombinedOutput(); err != nil {
		t.Errorf("the load balancer cannot route to node 2: %v: %s", err, out)
	}
}

// TestNoPullLeaves: an image the lab did not load, named on any registry, is pulled
// from no registry outside the machine. Each node's containerd sends every registry
// request through a proxy at REFUSING_REGISTRY (hack/cluster.sh), on the node's
// loopback, where nothing listens: the pull is refused there, and the kubelet's message
// shows that dial, and no lookup or dial of the registry the image names. (Before,
// node 1's containerd looked up registry-1.docker.io for such an image; a catch-all
// registry host in hosts.toml held on node 2's containerd 2.x only.)
func TestNoPullLeaves(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	ns := namespace(t, cs)
	refusing := clusterSetting(t, "REFUSING_REGISTRY")
	images := map[string]string{ // image → the host a pull must not name
		"docker.io/nap/never-loaded:e2e":            "docker.io",
		"registry.nap.invalid/nap/never-loaded:e2e": "registry.nap.invalid",
	}
	var pods []string
	for i, node := range []string{node1, node2} {
		j := 0
		for image := range images {
			name := fmt.Sprintf("pull-%d-%d", i+1, j)
			j++
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"kubernetes.io/hostname": node},
				Containers:   []corev1.Container{{Name: "c", Image: image, ImagePullPolicy: corev1.PullIfNotPresent}},
			}}
			if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			pods = append(pods, name)
		}
	}
	for _, name := range pods {
		var msg, image string
		deadline := time.Now().Add(90 * time.Second)
		for msg == "" && time.Now().Before(deadline) {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			image = p.Spec.Containers[0].Image
			for _, s := range p.Status.ContainerStatuses {
				if w := s.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") && w.Message != "" {
					msg = w.Message
				}
			}
			if msg == "" {
				time.Sleep(500 * time.Millisecond)
			}
		}
		if msg == "" {
			t.Errorf("pod %s (%s): no pull error within 90 s", name, image)
			continue
		}
		t.Logf("pod %s (%s): %s", name, image, msg)
		if !strings.Contains(msg, "dial tcp "+refusing+": connect: connection refused") {
			t.Errorf("pod %s (%s): the pull was not refused at %s: %s", name, image, refusing, msg)
		}
		host := images[image]
		if host == "docker.io" {
			host = "registry-1.docker.io"
		}
		// The request's URL names the registry; no lookup of it, no dial to it.
		if strings.Contains(msg, "lookup ") || strings.Contains(msg, "dial tcp "+host) || strings.Contains(msg, "dial tcp: ") {
			t.Errorf("pod %s (%s): the pull went for %s: %s", name, image, host, msg)
		}
	}
}
