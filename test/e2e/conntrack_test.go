package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/probe"
)

// TestStaleSynSent settles what a stale connection tracking entry can do (docs/downtime.md,
// "Reading it"). A rollout without a delay sends SYNs to pods that have exited; their
// entries stay in SYN_SENT for 120 s. The test plants two such entries on node 1 with
// conntrack -I, as a rollout leaves them, then connects to a live Service from the ports
// they name:
//   - an entry of the same Service (its ClusterIP and the client's port), DNATed to a
//     pod IP that is gone: a new connection from that port matches it, follows its old
//     DNAT and times out (or finds no route to the gone pod); from the next port it
//     is served;
//   - an entry of another Service (a ClusterIP that is not this one), whose reply side
//     is the live pod this Service sends to (a pod IP reused): the kernel gives the new
//     connection another port for its reply and it is served.
//
// So a stale entry harms only later connections to the same Service from the same port,
// within 120 s; a measurement on a Service of its own (every scenario of the experiment)
// cannot meet the entries an earlier one left. The experiment deletes them between
// measurements anyway (clearSynSent).
func TestStaleSynSent(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	ns := namespace(t, cs)
	d := demoDeployment(t, []byte(serviceDeployment))
	d.Spec.Replicas = ptr.To(int32(1))
	d.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node1}
	d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "APP_MODE", Value: "plain"}}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "app"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intOrPort(8080)}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, cs, ns)
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the pod: %v %v", pods, err)
	}
	live, cip := pods.Items[0].Status.PodIP, svc.Spec.ClusterIP
	url := "http://" + cip + "/"
	waitServing(t, url, "")
	src := routeSrc(t, cip) // the host's address toward the ClusterIP: node 1's bridge
	// Ports outside the ephemeral range: no connection of this host's address takes
	// them (another address's may: origFrom).
	const base = 61200
	// In node 1's pod range, held by no pod (its IPAM hands out from the bottom).
	gone := lastAddr(netip.MustParsePrefix(clusterSetting(t, "NODE_POD_CIDR"))).String()

	plant := func(port int, dst, reply string) {
		t.Helper()
		p := strconv.Itoa(port)
		out, err := exec.Command("conntrack", "-I", "-p", "tcp", "-s", src, "-d", dst, "--sport", p, "--dport", "80",
			"-r", reply, "-q", src, "--reply-port-src", "8080", "--reply-port-dst", p,
			"--state", "SYN_SENT", "-t", "120", "--dst-nat", reply).CombinedOutput()
		if err != nil {
			t.Fatalf("conntrack -I: %v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("conntrack", "-D", "-p", "tcp", "--orig-port-src", p).Run() })
	}
	get := func(port int) error {
		c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src), Port: port}}).DialContext}}
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}

	plant(base, cip, gone)
	// Following the entry's DNAT, the SYN goes to the gone address on node 1's bridge:
	// nothing answers, and the connection times out, or fails at once with "no route to
	// host" when the bridge's neighbour entry for that address has already failed.
	if err := get(base); err == nil || !strings.Contains(err.Error(), "Timeout") && !errors.Is(err, syscall.EHOSTUNREACH) {
		t.Errorf("from port %d, named by a stale entry of this Service: %v, want a timeout or no route to the gone pod", base, err)
	}
	if err := get(base + 1); err != nil {
		t.Errorf("from port %d, named by no entry: %v", base+1, err)
	}
	// The record of a timeout with a delay (measure) finds that connection: its entry
	// is young (renewed by the SYN) and listed from its port, DNATed to the gone pod.
	if !slices.Contains(youngPorts(synSent(t, false)), strconv.Itoa(base)) {
		t.Errorf("port %d is not among the young SYN_SENT entries' ports: %q", base, synSent(t, false))
	}
	// Other hosts' connections may have the same port (a CI run found two of
	// 10.77.0.2's to pods, TIME_WAIT, with source port 61200): this host's alone.
	if c := origFrom(connsFrom(t, false, strconv.Itoa(base)), src); len(c) != 1 || !strings.Contains(c[0], "dst="+cip) || !strings.Contains(c[0], "src="+gone) {
		t.Errorf("the connection from port %d on node 1: %q, want one entry to %s replied from %s", base, c, cip, gone)
	}
	_, services, _ := clusterRanges(t)
	other := lastAddr(services).Prev().String() // not this Service's ClusterIP
	if other == cip {
		t.Fatalf("pick another address than %s", cip)
	}
	plant(base+2, other, live)
	if err := get(base + 2); err != nil {
		t.Errorf("from port %d, named by a stale entry of another Service whose reply side is the live pod %s: %v", base+2, live, err)
	}
}

// TestClearSynSent: on each node, of the SYN_SENT entries clearSynSent finds, the stale
// go (one alone at its destination: by destination; one beside a young entry to the same
// destination: one by one) and the young one stays: all in one conntrack batch.
func TestClearSynSent(t *testing.T) {
	_, services, _ := clusterRanges(t)
	// Addresses of the Service range no Service holds: table entries, no traffic.
	lone, shared := lastAddr(services).Prev().Prev().String(), lastAddr(services).Prev().Prev().Prev().String()
	const src, base = "10.77.0.1", 61230
	for _, onNode2 := range []bool{false, true} {
		ct := func(args ...string) *exec.Cmd { return onNode(onNode2, append([]string{"conntrack"}, args...)...) }
		plant := func(port int, dst string, left int) string {
			t.Helper()
			p := strconv.Itoa(port)
			if out, err := ct("-I", "-p", "tcp", "-s", src, "-d", dst, "--sport", p, "--dport", "80",
				"--state", "SYN_SENT", "-t", strconv.Itoa(left)).CombinedOutput(); err != nil {
				t.Fatalf("conntrack -I: %v: %s", err, out)
			}
			t.Cleanup(func() { ct("-D", "-p", "tcp", "--orig-port-src", p).Run() })
			return p
		}
		staleLeft := int((synSentTimeout - staleSynSent).Seconds()) - 5
		stale := []string{plant(base, lone, staleLeft), plant(base+1, shared, staleLeft)}
		young := plant(base+2, shared, int(synSentTimeout.Seconds()))
		clearSynSent(t)
		var left []string
		for _, e := range origFrom(synSent(t, onNode2), src) {
			for _, f := range strings.Fields(e) {
				if p, ok := strings.CutPrefix(f, "sport="); ok {
					left = append(left, p)
					break
				}
			}
		}
		for _, p := range stale {
			if slices.Contains(left, p) {
				t.Errorf("node 2 %v: the stale entry from port %s is still there: %q", onNode2, p, left)
			}
		}
		if !slices.Contains(left, young) {
			t.Errorf("node 2 %v: the young entry from port %s was deleted: %q", onNode2, young, left)
		}
	}
}

// origFrom are the conntrack entries among entries whose original direction is from
// address src.
func origFrom(entries []string, src string) []string {
	var out []string
	for _, e := range entries {
		for _, f := range strings.Fields(e) {
			if strings.HasPrefix(f, "src=") { // the first: the original direction's
				if f == "src="+src {
					out = append(out, e)
				}
				break
			}
		}
	}
	return out
}

// TestOrigFrom: the entries of one host's connections among those of a port, as a CI
// run listed them (2026-12-07).
func TestOrigFrom(t *testing.T) {
	entries := []string{
		"tcp      6 8 TIME_WAIT src=10.77.0.2 dst=10.78.0.11 sport=61200 dport=8080 src=10.78.0.11 dst=10.77.0.2 sport=8080 dport=61200 [ASSURED] mark=0 use=1",
		"tcp      6 117 SYN_SENT src=10.78.0.1 dst=10.79.0.49 sport=61200 dport=80 [UNREPLIED] src=10.78.0.254 dst=10.78.0.1 sport=8080 dport=61200 mark=0 use=1",
		"tcp      6 36 TIME_WAIT src=10.77.0.2 dst=10.78.0.1 sport=61200 dport=8080 src=10.78.0.1 dst=10.77.0.2 sport=8080 dport=61200 [ASSURED] mark=0 use=1",
	}
	if got := origFrom(entries, "10.78.0.1"); !slices.Equal(got, entries[1:2]) {
		t.Errorf("from 10.78.0.1: %q, want the SYN_SENT entry alone (not one replied from it)", got)
	}
	if got := origFrom(entries, "10.77.0.2"); len(got) != 2 {
		t.Errorf("from 10.77.0.2: %q, want 2", got)
	}
}

// TestSameConn: two listings of one conntrack entry differ in the seconds it has left
// and its reference count (a CI run listed one entry twice, at 117 s use=2 and 116 s
// use=1, and TestStaleSynSent saw two connections); another entry differs elsewhere.
func TestSameConn(t *testing.T) {
	const entry = "tcp      6 %d SYN_SENT src=10.78.0.1 dst=10.79.0.162 sport=%d dport=80 [UNREPLIED] src=10.78.0.254 dst=10.78.0.1 sport=8080 dport=%d mark=0 use=1"
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{fmt.Sprintf(entry, 117, 61200, 61200), fmt.Sprintf(entry, 116, 61200, 61200), true},
		{strings.Replace(fmt.Sprintf(entry, 117, 61200, 61200), "use=1", "use=2", 1), fmt.Sprintf(entry, 116, 61200, 61200), true},
		{fmt.Sprintf(entry, 117, 61200, 61200), fmt.Sprintf(entry, 117, 61200, 61200), true},
		{fmt.Sprintf(entry, 117, 61200, 61200), fmt.Sprintf(entry, 117, 61201, 61201), false},
		{fmt.Sprintf(entry, 117, 61200, 61200), strings.Replace(fmt.Sprintf(entry, 117, 61200, 61200), "SYN_SENT", "ESTABLISHED", 1), false},
		{"tcp 6", "tcp 6", true},
	} {
		if got := sameConn(c.a, c.b); got != c.want {
			t.Errorf("sameConn(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// TestTimedOutPorts: the ports looked up after a loss are those of the requests that
// timed out over a new connection they got, each once, the first n.
func TestTimedOutPorts(t *testing.T) {
	fails := []probe.Result{
		{Mode: probe.New, Kind: probe.Timeout, Local: "10.77.0.1:40001"},
		{Mode: probe.New, Kind: probe.Timeout}, // no connection: its SYN_SENT entry tells
		{Mode: probe.Reuse, Kind: probe.Timeout, Local: "10.77.0.1:40002"},
		{Mode: probe.New, Kind: probe.Refused, Local: "10.77.0.1:40003"},
		{Mode: probe.New, Kind: probe.Timeout, Local: "10.77.0.1:40001"},
		{Mode: probe.New, Kind: probe.Timeout, Local: "10.77.0.1:40004"},
		{Mode: probe.New, Kind: probe.Timeout, Local: "10.77.0.1:40005"},
	}
	if got, want := timedOutPorts(fails, 5), []string{"40001", "40004", "40005"}; !slices.Equal(got, want) {
		t.Errorf("timedOutPorts = %q, want %q", got, want)
	}
	if got, want := timedOutPorts(fails, 2), []string{"40001", "40004"}; !slices.Equal(got, want) {
		t.Errorf("timedOutPorts(2) = %q, want %q", got, want)
	}
}
