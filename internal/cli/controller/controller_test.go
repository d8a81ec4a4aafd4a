package controller_test

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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/controller/install"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/cli/app"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
)

// installedAPIServer starts a real API server with the objects of napctl install in it
// (nothing runs them: envtest has no controllers) and returns its config, without a
// client-side rate limit, and a client.
func installedAPIServer(t *testing.T) (*rest.Config, client.Client) {
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

// buildNapctl builds napctl once per test binary run.
func buildNapctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "napctl")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/nap-k8s/nap/cmd/napctl")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build napctl: %v\n%s", err, out)
	}
	return bin
}

// saKubeconfig is a kubeconfig of cfg's admin impersonating the controller's
// ServiceAccount, so that the API server authorizes every call by the RBAC of napctl
// install.
func saKubeconfig(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	return kubeenv.KubeconfigAs(t, cfg, "system:serviceaccount:"+controller.DefaultNamespace+":"+controller.Name,
		"system:serviceaccounts", "system:serviceaccounts:"+controller.DefaultNamespace, "system:authenticated")
}

func freePort(t *testing.T) int {
	t.Helper()
	// A port the kernel just freed may be handed out again at once: never give the
	// same one twice (a replica's metrics and health ports once collided so).
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

// replica is one napctl controller process.
type replica struct {
	name            string
	cmd             *exec.Cmd
	metrics, health int
	log             *bytes.Buffer
	done            chan error
}

// start runs napctl controller as name; extra flags come last and win over these.
func start(t *testing.T, bin, kubeconfig, name string, extra ...string) *replica {
	t.Helper()
	r := &replica{name: name, metrics: freePort(t), health: freePort(t), log: &bytes.Buffer{}, done: make(chan error, 1)}
	args := append([]string{"controller", "--kubeconfig", kubeconfig, "--namespace", controller.DefaultNamespace,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", r.metrics),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", r.health),
		fmt.Sprintf("--webhook-port=%d", freePort(t)), "--delay=5s"}, extra...)
	r.cmd = exec.Command(bin, args...)
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, r.log)
		}
	})
	return r
}

func (r *replica) get(path string, port int) (int, string) {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// leader reads controller-runtime's leader_election_master_status from the metrics.
func (r *replica) leader() bool {
	_, body := r.get("/metrics", r.metrics)
	return strings.Contains(body, `leader_election_master_status{name="`+controller.LeaseName+`"} 1`)
}

func eventually(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, timeout)
		}
	}
}

// TestControllerCommand runs two `napctl controller` processes against a real API
// server as the ServiceAccount of napctl install, authorized by its RBAC: one becomes
// leader and publishes, both serve readyz with the certificate the first bootstrapped,
// SIGTERM hands the Lease over at once and the other publishes; the ServiceAccount can
// read no Secret but its own.
func TestControllerCommand(t *testing.T) {
	cfg, c := installedAPIServer(t)
	bin := buildNapctl(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps-1"}}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := saKubeconfig(t, cfg)
	published := func(ns string) bool {
		var cm corev1.ConfigMap
		return c.Get(ctx, types.NamespacedName{Namespace: ns, Name: kube.ConfigMapName}, &cm) == nil
	}

	a := start(t, bin, kubeconfig, "replica A")
	eventually(t, "A ready", 30*time.Second, func() bool { code, _ := a.get("/readyz", a.health); return code == 200 })
	eventually(t, "A leader", 30*time.Second, a.leader)
	eventually(t, "the ConfigMap in apps-1", 10*time.Second, func() bool { return published("apps-1") })
	eventually(t, "the caBundle", 10*time.Second, func() bool {
		var m admissionregistrationv1.MutatingWebhookConfiguration
		err := c.Get(ctx, types.NamespacedName{Name: controller.Name}, &m)
		return err == nil && len(m.Webhooks[0].ClientConfig.CABundle) > 0
	})

	b := start(t, bin, kubeconfig, "replica B")
	eventually(t, "B ready", 30*time.Second, func() bool { code, _ := b.get("/readyz", b.health); return code == 200 })
	time.Sleep(3 * time.Second) // longer than the retry period: B would have taken a free Lease
	if b.leader() || !a.leader() {
		t.Fatalf("leaders: A %v, B %v; want A only", a.leader(), b.leader())
	}
	var lease coordinationv1.Lease
	if err := c.Get(ctx, types.NamespacedName{Namespace: controller.DefaultNamespace, Name: controller.LeaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	holderA := *lease.Spec.HolderIdentity

	// SIGTERM: A releases the Lease and exits 0; B takes over and publishes.
	handover := time.Now()
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-a.done:
		if err != nil {
			t.Fatalf("A after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("A did not exit within 15 s of SIGTERM")
	}
	eventually(t, "B leader", 10*time.Second, b.leader)
	t.Logf("the Lease changed hands in %v", time.Since(handover).Round(time.Millisecond))
	if err := c.Get(ctx, client.ObjectKeyFromObject(&lease), &lease); err != nil || *lease.Spec.HolderIdentity == holderA {
		t.Fatalf("the Lease's holder is still A (%v)", err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps-2"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap in apps-2, by B", 10*time.Second, func() bool { return published("apps-2") })
	_, body := b.get("/metrics", b.metrics)
	if !strings.Contains(body, "nap_configmaps_published_total 1") {
		t.Errorf("B's metrics do not count one published copy:\n%s", grep(body, "nap_"))
	}
	// The certificate's expiry, for alerts: about a year from now.
	var expiry float64
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, "nap_webhook_certificate_expiry_timestamp_seconds "); ok {
			expiry, _ = strconv.ParseFloat(v, 64)
		}
	}
	if left := time.Until(time.Unix(int64(expiry), 0)); left < 364*24*time.Hour || left > 366*24*time.Hour {
		t.Errorf("nap_webhook_certificate_expiry_timestamp_seconds %v: %v from now, want a year", expiry, left)
	}

	// Least privilege, asked of the API server as the ServiceAccount.
	sa, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := client.New(sa, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		attrs authorizationv1.ResourceAttributes
		allow bool
	}{
		{authorizationv1.ResourceAttributes{Namespace: controller.DefaultNamespace, Verb: "get", Resource: "secrets", Name: controller.TLSSecretName}, true},
		{authorizationv1.ResourceAttributes{Namespace: controller.DefaultNamespace, Verb: "get", Resource: "secrets", Name: "other"}, false},
		{authorizationv1.ResourceAttributes{Namespace: controller.DefaultNamespace, Verb: "list", Resource: "secrets"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "secrets", Name: controller.TLSSecretName}, false},
		{authorizationv1.ResourceAttributes{Verb: "update", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Name: "someone-else"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "apps-1", Verb: "create", Resource: "configmaps"}, true},
		{authorizationv1.ResourceAttributes{Namespace: "apps-1", Verb: "create", Resource: "pods"}, false},
	} {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &tc.attrs}}
		if err := sc.Create(ctx, review); err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != tc.allow {
			t.Errorf("%s %s %s/%s: allowed %v, want %v", tc.attrs.Verb, tc.attrs.Resource, tc.attrs.Namespace, tc.attrs.Name, review.Status.Allowed, tc.allow)
		}
	}

	b.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-b.done; err != nil {
		t.Errorf("B after SIGTERM: %v", err)
	}
	// Nothing the controllers did was refused: the RBAC is enough.
	for _, r := range []*replica{a, b} {
		if l := grep(r.log.String(), "forbidden"); l != "" {
			t.Errorf("%s was refused:\n%s", r.name, l)
		}
		if l := grep(r.log.String(), `"level":"error"`); l != "" {
			t.Errorf("%s logged errors:\n%s", r.name, l)
		}
	}
}

func grep(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Bad flags fail before anything starts, naming the flag.
func TestControllerCommandBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"controller", "--namespace-selector", "a in (", "--namespace", "x"}, "--namespace-selector"},
		{[]string{"controller", "--delay", "soon", "--namespace", "x"}, `--delay "soon"`},
		{[]string{"controller", "extra"}, "unknown command"},
	} {
		var out, errOut bytes.Buffer
		os.Unsetenv("POD_NAMESPACE")
		code := app.Run(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, tc.args)
		if code == 0 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want an error naming %s", tc.args, code, errOut.String(), tc.want)
		}
	}
}
