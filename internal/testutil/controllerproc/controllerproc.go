package controllerproc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/controller/install"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/internal/testutil/memcg"
)

// InstalledAPIServer starts a real API server with the objects of napctl install in it
// (nothing runs them: envtest has no controllers) and returns its config, without a
// client-side rate limit, and a client.
func InstalledAPIServer(t testing.TB) (*rest.Config, client.Client) {
	t.Helper()
	cfg := rest.CopyConfig(kubeenv.APIServer(t))
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := install.Objects(install.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Create(context.Background(), o.(client.Object)); err != nil {
			t.Fatal(err)
		}
	}
	return cfg, c
}

// BuildNapctl builds napctl into the test's temporary folder.
func BuildNapctl(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "napctl")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/nap-k8s/nap/cmd/napctl")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build napctl: %v\n%s", err, out)
	}
	return bin
}

// SAKubeconfig is a kubeconfig of cfg's admin impersonating the controller's
// ServiceAccount, so that the API server authorizes every call by the RBAC of napctl
// install.
func SAKubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	return kubeenv.KubeconfigAs(t, cfg, controller.ServiceAccountUser(controller.DefaultNamespace, controller.Name),
		"system:serviceaccounts", "system:serviceaccounts:"+controller.DefaultNamespace, "system:authenticated")
}

// FreePort is a free port on 127.0.0.1, never the same twice in a test binary.
func FreePort(t testing.TB) int {
	t.Helper()
	// A port the kernel just freed may be handed out again at once: never give the
	// same one twice (a Replica's metrics and health ports once collided so).
	handed.Lock()
	defer handed.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handed.ports[port] {
			handed.ports[port] = true
			return port
		}
	}
}

var handed = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Replica is one napctl controller process.
type Replica struct {
	Name            string
	Cmd             *exec.Cmd
	Metrics, Health int // its ports on 127.0.0.1
	Webhook         int // its webhook's port
	Log             *bytes.Buffer
	Done            chan error // its exit
}

// Start runs napctl controller as name; extra flags come last and win over these.
func Start(t testing.TB, bin, kubeconfig, name string, extra ...string) *Replica {
	t.Helper()
	return start(t, exec.Command, bin, kubeconfig, name, extra...)
}

// StartIn runs napctl controller as Start does, in the memory cgroup g, as in a
// container of g's memory limit: the limit is handed down as the Deployment hands it
// (controller.MemoryLimitEnv, from resources.limits.memory).
func StartIn(t testing.TB, g *memcg.Group, bin, kubeconfig, name string, extra ...string) *Replica {
	t.Helper()
	return start(t, func(name string, args ...string) *exec.Cmd {
		cmd := g.Command(name, args...)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", controller.MemoryLimitEnv, g.Limit))
		return cmd
	}, bin, kubeconfig, name, extra...)
}

func start(t testing.TB, command func(string, ...string) *exec.Cmd, bin, kubeconfig, name string, extra ...string) *Replica {
	t.Helper()
	r := &Replica{Name: name, Metrics: FreePort(t), Health: FreePort(t), Webhook: FreePort(t), Log: &bytes.Buffer{}, Done: make(chan error, 1)}
	args := append([]string{"controller", "--kubeconfig", kubeconfig, "--namespace", controller.DefaultNamespace,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", r.Metrics),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", r.Health),
		fmt.Sprintf("--webhook-port=%d", r.Webhook), "--delay=5s"}, extra...)
	r.Cmd = command(bin, args...)
	r.Cmd.Stdout, r.Cmd.Stderr = r.Log, r.Log
	if err := r.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.Done <- r.Cmd.Wait() }()
	t.Cleanup(func() {
		r.Cmd.Process.Kill()
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, r.Log)
		}
	})
	return r
}

// Get is GET path on the replica's port: its status and body, or 0 and the error.
func (r *Replica) Get(path string, port int) (int, string) {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Leader reads controller-runtime's leader_election_master_status from the metrics.
func (r *Replica) Leader() bool {
	_, body := r.Get("/metrics", r.Metrics)
	return strings.Contains(body, `leader_election_master_status{name="`+controller.LeaseName+`"} 1`)
}

// Eventually fails t when cond is not true within timeout.
func Eventually(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, timeout)
		}
	}
}
