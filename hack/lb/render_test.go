package main

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/internal/testenv"
)

// TestRender: a network load balancer's configuration takes its source ports from the
// range in turn, and the real HAProxy accepts it as written.
func TestRender(t *testing.T) {
	haproxy := testenv.LookPath(t, "haproxy", "prereqs")
	dir := t.TempDir()
	b := &balancer{key: "Service ns/web", vip: netip.MustParseAddr("10.77.1.10"), dir: dir}
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal, HealthCheckNodePort: 31000,
		Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}}}}
	src, err := sourceRange("10.77.1.1", "10000-60999")
	if err != nil {
		t.Fatal(err)
	}
	cfg := render(b, s, []backend{{"nap-node", "10.77.0.1"}, {"nap-node2", "10.77.0.2"}},
		timings{Interval: 3 * time.Second, Unhealthy: 3, Healthy: 3, Deregistration: 300 * time.Second}, src)
	if !strings.Contains(cfg, " source 10.77.1.1:10000-60999\n") {
		t.Errorf("no source port range for the servers:\n%s", cfg)
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(haproxy, "-c", "-f", path).CombinedOutput(); err != nil {
		t.Errorf("haproxy -c: %v\n%s\n%s", err, out, cfg)
	}
}

func TestSourceRange(t *testing.T) {
	for _, tc := range []struct {
		addr, ports, want, err string
	}{
		{"10.77.1.1", "10000-60999", "10.77.1.1:10000-60999", ""},
		{"10.77.1.1", "1024-1024", "10.77.1.1:1024-1024", ""},
		{"10.77.1.x", "10000-60999", "", `--source "10.77.1.x"`},
		{"fd00::1", "10000-60999", "", "not an IPv4 address"},
		{"10.77.1.1", "60999-10000", "", `--source-ports "60999-10000"`},
		{"10.77.1.1", "80-90", "", "within 1024-65535"},
		{"10.77.1.1", "10000", "", "want LOW-HIGH"},
		{"10.77.1.1", "10000-70000", "", "want LOW-HIGH"},
	} {
		got, err := sourceRange(tc.addr, tc.ports)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("sourceRange(%q, %q) = %q, %v; want %q, an error with %q", tc.addr, tc.ports, got, err, tc.want, tc.err)
		}
	}
}
