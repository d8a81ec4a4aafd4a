package e2e

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// clusterRanges reads the cluster's ranges from hack/cluster.sh, their one home.
func clusterRanges(t *testing.T) (pods, services netip.Prefix, bridge string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "hack", "cluster.sh"))
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `=([^\s#]+)`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("hack/cluster.sh sets no %s", name)
		}
		return string(m[1])
	}
	pods = netip.MustParsePrefix(get("POD_CIDR"))
	services = netip.MustParsePrefix(get("SVC_CIDR"))
	return pods, services, get("BRIDGE")
}

// routeDev is the device the kernel would send a packet to addr through. `ip route get`
// sends nothing.
func routeDev(t *testing.T, addr string) string {
	t.Helper()
	out, err := exec.Command("ip", "route", "get", addr).CombinedOutput()
	if err != nil {
		t.Fatalf("ip route get %s: %v: %s", addr, err, out)
	}
	f := strings.Fields(string(out))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "dev" {
			return f[i+1]
		}
	}
	t.Fatalf("ip route get %s names no device: %s", addr, out)
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
	svcIP := lastAddr(services)
	list, err := cs.CoreV1().Services("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if s.Spec.ClusterIP == svcIP.String() {
			t.Fatalf("%s is allocated to %s/%s: pick another unallocated address", svcIP, s.Namespace, s.Name)
		}
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
