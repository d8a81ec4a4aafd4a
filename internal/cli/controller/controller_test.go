package controller_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/cli/app"
	"github.com/nap-k8s/nap/internal/testutil/controllerproc"
	"github.com/nap-k8s/nap/kube"
)

// TestControllerCommand runs two `napctl controller` processes against a real API
// server as the ServiceAccount of napctl install, authorized by its RBAC: one becomes
// leader and publishes, both serve readyz with the certificate the first bootstrapped,
// SIGTERM hands the Lease over at once and the other publishes; the ServiceAccount can
// read no Secret but its own.
func TestControllerCommand(t *testing.T) {
	cfg, c := controllerproc.InstalledAPIServer(t)
	bin := controllerproc.BuildNapctl(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps-1"}}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := controllerproc.SAKubeconfig(t, cfg)
	published := func(ns string) bool {
		var cm corev1.ConfigMap
		return c.Get(ctx, types.NamespacedName{Namespace: ns, Name: kube.ConfigMapName}, &cm) == nil
	}

	a := controllerproc.Start(t, bin, kubeconfig, "replica A")
	controllerproc.Eventually(t, "A ready", 30*time.Second, func() bool { code, _ := a.Get("/readyz", a.Health); return code == 200 })
	controllerproc.Eventually(t, "A leader", 30*time.Second, a.Leader)
	controllerproc.Eventually(t, "the ConfigMap in apps-1", 10*time.Second, func() bool { return published("apps-1") })
	controllerproc.Eventually(t, "the caBundle", 10*time.Second, func() bool {
		var m admissionregistrationv1.MutatingWebhookConfiguration
		err := c.Get(ctx, types.NamespacedName{Name: controller.Name}, &m)
		return err == nil && len(m.Webhooks[0].ClientConfig.CABundle) > 0
	})

	b := controllerproc.Start(t, bin, kubeconfig, "replica B")
	controllerproc.Eventually(t, "B ready", 30*time.Second, func() bool { code, _ := b.Get("/readyz", b.Health); return code == 200 })
	// The webhook speaks HTTP/1.1 alone (#50): a client that offers h2 first gets it not.
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", a.Webhook), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatalf("TLS to A's webhook: %v", err)
	}
	if p := conn.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("A's webhook negotiated %q, want http/1.1 alone", p)
	}
	conn.Close()
	time.Sleep(3 * time.Second) // longer than the retry period: B would have taken a free Lease
	if b.Leader() || !a.Leader() {
		t.Fatalf("leaders: A %v, B %v; want A only", a.Leader(), b.Leader())
	}
	var lease coordinationv1.Lease
	if err := c.Get(ctx, types.NamespacedName{Namespace: controller.DefaultNamespace, Name: controller.LeaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	holderA := *lease.Spec.HolderIdentity

	// SIGTERM: A releases the Lease and exits 0; B takes over and publishes.
	handover := time.Now()
	a.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-a.Done:
		if err != nil {
			t.Fatalf("A after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("A did not exit within 15 s of SIGTERM")
	}
	controllerproc.Eventually(t, "B leader", 10*time.Second, b.Leader)
	t.Logf("the Lease changed hands in %v", time.Since(handover).Round(time.Millisecond))
	if err := c.Get(ctx, client.ObjectKeyFromObject(&lease), &lease); err != nil || *lease.Spec.HolderIdentity == holderA {
		t.Fatalf("the Lease's holder is still A (%v)", err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps-2"}}); err != nil {
		t.Fatal(err)
	}
	controllerproc.Eventually(t, "the ConfigMap in apps-2, by B", 10*time.Second, func() bool { return published("apps-2") })
	// B counts the copy once its create has returned, which can be after the API server
	// shows the object (seen once, under load): the count is awaited, briefly.
	var body string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, body = b.Get("/metrics", b.Metrics)
		if strings.Contains(body, "nap_configmaps_published_total 1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("B's metrics do not count one published copy 5 s after it:\n%s", grep(body, "nap_"))
			break
		}
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
		// Every other verb on ConfigMaps by its own name alone (#50): list and watch too,
		// as the Publisher's cache asks (metadata.name=nap).
		{authorizationv1.ResourceAttributes{Namespace: "apps-1", Verb: "update", Resource: "configmaps", Name: kube.ConfigMapName}, true},
		{authorizationv1.ResourceAttributes{Namespace: "apps-1", Verb: "update", Resource: "configmaps", Name: "app-config"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "apps-1", Verb: "get", Resource: "configmaps", Name: "app-config"}, false},
		{authorizationv1.ResourceAttributes{Namespace: "apps-1", Verb: "delete", Resource: "configmaps", Name: "app-config"}, false},
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "configmaps"}, false},
		{authorizationv1.ResourceAttributes{Verb: "watch", Resource: "configmaps", Name: kube.ConfigMapName}, true},
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

	b.Cmd.Process.Signal(syscall.SIGTERM)
	if err := <-b.Done; err != nil {
		t.Errorf("B after SIGTERM: %v", err)
	}
	// Nothing the controllers did was refused: the RBAC is enough.
	for _, r := range []*controllerproc.Replica{a, b} {
		if l := grep(r.Log.String(), "forbidden"); l != "" {
			t.Errorf("%s was refused:\n%s", r.Name, l)
		}
		if l := grep(r.Log.String(), `"level":"error"`); l != "" {
			t.Errorf("%s logged errors:\n%s", r.Name, l)
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
