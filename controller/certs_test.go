package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
)

func pemCerts(t *testing.T, p []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, p = pem.Decode(p)
		if b == nil {
			return out
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}

// verify checks that data's serving certificate chains to its bundle for host at now.
func verify(t *testing.T, data map[string][]byte, host string, now time.Time) *x509.Certificate {
	t.Helper()
	leaf := pemCerts(t, data[corev1.TLSCertKey])[0]
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(data[SecretCAKey])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, CurrentTime: now}); err != nil {
		t.Fatalf("the serving certificate at %v: %v", now, err)
	}
	if _, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey]); err != nil {
		t.Fatal(err)
	}
	return leaf
}

// The renewal rules on a moving clock, without an API server.
func TestCertsRenew(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &Certs{Namespace: "nap-system", Service: "nap", Now: func() time.Time { return now }}
	const host = "nap.nap-system.svc"
	day := 24 * time.Hour

	data, changed, err := c.renew(nil, time.Time{})
	if err != nil || !changed {
		t.Fatalf("bootstrap: changed %v, %v", changed, err)
	}
	leaf0 := verify(t, data, host, now)
	ca0 := pemCerts(t, data[SecretCAKey])
	if len(ca0) != 1 || !ca0[0].IsCA {
		t.Fatalf("bundle: %d certificates", len(ca0))
	}

	step := func(name string, d time.Duration, wantChanged bool) (map[string][]byte, *x509.Certificate, []*x509.Certificate) {
		t.Helper()
		now = now.Add(d)
		next, changed, err := c.renew(data, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if changed != wantChanged {
			t.Fatalf("%s: changed %v, want %v", name, changed, wantChanged)
		}
		if !changed {
			for k, v := range data {
				if !bytes.Equal(next[k], v) {
					t.Fatalf("%s: %s differs though unchanged", name, k)
				}
			}
		}
		data = next
		return data, verify(t, data, host, now), pemCerts(t, data[SecretCAKey])
	}

	_, leaf, cas := step("same moment", 0, false)
	_, leaf, cas = step("200 days on", 200*day, false)
	if !leaf.Equal(leaf0) {
		t.Fatal("the serving certificate changed before it had to")
	}
	_, leaf, cas = step("250 days on: a third of its year left", 50*day, true)
	if leaf.Equal(leaf0) || len(cas) != 1 || !cas[0].Equal(ca0[0]) {
		t.Fatalf("serving renewal: new leaf %v, CAs %d, same CA %v", !leaf.Equal(leaf0), len(cas), cas[0].Equal(ca0[0]))
	}
	_, leaf, cas = step("7 years on: the CA's last third", 7*365*day, true)
	if len(cas) != 2 || !cas[1].Equal(ca0[0]) || leaf.CheckSignatureFrom(cas[0]) != nil {
		t.Fatalf("CA renewal: %d CAs, the old one kept %v, leaf from the new %v", len(cas), len(cas) == 2 && cas[1].Equal(ca0[0]), leaf.CheckSignatureFrom(cas[0]) == nil)
	}
	ca1 := cas[0]
	_, _, cas = step("11 years: the first CA expired", 4*365*day, true)
	if len(cas) != 1 || !cas[0].Equal(ca1) {
		t.Fatalf("after the first CA expired: %d CAs", len(cas))
	}
	c.Hosts = []string{"127.0.0.1", "webhook.example"}
	_, leaf, _ = step("new names", 0, true)
	if len(leaf.IPAddresses) != 1 || leaf.DNSNames[len(leaf.DNSNames)-1] != "webhook.example" {
		t.Fatalf("names: %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	step("names settled", 0, false)

	delete(data, SecretCAKeyPK)
	_, _, cas = step("CA key lost", 0, true)
	if len(cas) != 2 {
		t.Fatalf("after losing the CA key: %d CAs, want a new one and the old", len(cas))
	}
}

// A CA rotation with a webhook configuration to wait for: the new CA is pending until
// the caBundle has carried it for the trust delay; only then does a serving certificate
// of the new CA replace the old one.
func TestCertsRenewTwoPhases(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &Certs{Namespace: "nap-system", Service: "nap", WebhookConfiguration: "nap", Now: func() time.Time { return now }}
	const host = "nap.nap-system.svc"
	data, _, err := c.renew(nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	ca0 := pemCerts(t, data[SecretCAKey])[0]
	now = now.Add(7 * 365 * 24 * time.Hour) // the CA's last third; the serving certificate expired

	renew := func(name string, published time.Time, wantChanged bool) {
		t.Helper()
		next, changed, err := c.renew(data, published)
		if err != nil || changed != wantChanged {
			t.Fatalf("%s: changed %v, %v; want changed %v", name, changed, err, wantChanged)
		}
		data = next
	}
	renew("phase one", time.Time{}, true)
	cas := pemCerts(t, data[SecretCAKey])
	if len(cas) != 2 || !cas[0].Equal(ca0) || len(data[SecretNextCAKeyPK]) == 0 {
		t.Fatalf("phase one: %d CAs, the old one first %v, pending key %v", len(cas), cas[0].Equal(ca0), len(data[SecretNextCAKeyPK]) > 0)
	}
	if leaf := verify(t, data, host, now); leaf.CheckSignatureFrom(ca0) != nil {
		t.Fatal("phase one: the serving certificate is not the old CA's")
	}
	ca1 := cas[1]
	now = now.Add(10 * time.Minute)
	renew("not published yet", time.Time{}, false)
	renew("published a minute ago", now.Add(-time.Minute), false)
	renew("published two minutes ago", now.Add(-2*time.Minute), true)
	cas = pemCerts(t, data[SecretCAKey])
	leaf := verify(t, data, host, now)
	if len(cas) != 2 || !cas[0].Equal(ca1) || !cas[1].Equal(ca0) || leaf.CheckSignatureFrom(ca1) != nil || len(data[SecretNextCAKeyPK]) != 0 {
		t.Fatalf("phase two: %d CAs, new first %v, leaf from the new CA %v, pending key left %v",
			len(cas), cas[0].Equal(ca1), leaf.CheckSignatureFrom(ca1) == nil, len(data[SecretNextCAKeyPK]) > 0)
	}
	renew("settled", now.Add(-2*time.Minute), false)
}

// TestCertsWebhook: the real API server calls the webhook with the certificate Certs
// bootstrapped, trusting the CA Certs wrote into the configuration's caBundle;
// restarts write nothing; a tampered caBundle is put back; other webhook
// configurations are left alone; the serving certificate is rotated while serving.
func TestCertsWebhook(t *testing.T) {
	other := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "someone-else"},
	}
	other.Webhooks = WebhookConfiguration("x", "elsewhere", "x", nil, scope.OptIn).Webhooks
	for i := range other.Webhooks {
		other.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"never": "true"}}
	}
	cfg, wopts := kubeenv.APIServerWithWebhooks(t, WebhookConfiguration("nap", "nap-system", "nap", nil, scope.OptIn), other)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"nap-system", "apps"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{InjectLabel: "enabled"}}}); err != nil {
			t.Fatal(err)
		}
	}
	mwc := func(name string) *admissionregistrationv1.MutatingWebhookConfiguration {
		var m admissionregistrationv1.MutatingWebhookConfiguration
		if err := c.Get(ctx, types.NamespacedName{Name: name}, &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	envtestCA := mwc("nap").Webhooks[0].ClientConfig.CABundle
	otherBefore := mwc("someone-else")

	newCerts := func(validity time.Duration) *Certs {
		return &Certs{Client: c, Namespace: "nap-system", SecretName: "nap-webhook-tls", Service: "nap",
			Hosts: []string{wopts.LocalServingHost, "localhost"}, WebhookConfiguration: "nap",
			CertValidity: validity, Interval: 300 * time.Millisecond, Log: testr.New(t)}
	}
	// Two replicas start at once on an empty namespace: one Secret, the same certificate.
	a, b := newCerts(0), newCerts(0)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, r := range []*Certs{a, b} {
		wg.Go(func() { errs[i] = r.Ensure(ctx) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("two replicas bootstrapping: %v, %v", errs[0], errs[1])
	}
	ca, _ := a.GetCertificate(nil)
	cb, _ := b.GetCertificate(nil)
	if !bytes.Equal(ca.Certificate[0], cb.Certificate[0]) {
		t.Fatal("the two replicas serve different certificates")
	}
	var secret corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: "nap-system", Name: "nap-webhook-tls"}, &secret); err != nil {
		t.Fatal(err)
	}
	bundle := mwc("nap").Webhooks[1].ClientConfig.CABundle
	if !bytes.Equal(bundle, secret.Data[SecretCAKey]) || bytes.Equal(bundle, envtestCA) {
		t.Fatal("the caBundle is not the Secret's CA")
	}
	if o := mwc("someone-else"); o.ResourceVersion != otherBefore.ResourceVersion {
		t.Fatal("another MutatingWebhookConfiguration was written")
	}

	// A restart reads what is there and writes nothing.
	rvSecret, rvMWC := secret.ResourceVersion, mwc("nap").ResourceVersion
	if err := newCerts(0).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(&secret), &secret); err != nil {
		t.Fatal(err)
	}
	if secret.ResourceVersion != rvSecret || mwc("nap").ResourceVersion != rvMWC {
		t.Fatal("a restart wrote the Secret or the webhook configuration")
	}

	// A tampered caBundle is put back.
	m := mwc("nap")
	m.Webhooks[0].ClientConfig.CABundle = envtestCA
	if err := c.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := a.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mwc("nap").Webhooks[0].ClientConfig.CABundle, bundle) {
		t.Fatal("the tampered caBundle was not put back")
	}

	// Serve with a certificate that lives 6 s: Start renews it after 4 s; the API server
	// keeps calling the webhook through the change.
	short := newCerts(6 * time.Second)
	if err := c.Delete(ctx, &secret); err != nil {
		t.Fatal(err)
	}
	if err := short.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	sctx, stopShort := context.WithCancel(ctx)
	go short.Start(sctx)
	var active atomic.Pointer[Certs] // whose certificate the webhook server serves
	active.Store(short)
	v := kube.Version{Major: 1, Minor: 34}
	srv := webhook.NewServer(webhook.Options{Host: wopts.LocalServingHost, Port: wopts.LocalServingPort,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.GetCertificate = func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return active.Load().GetCertificate(h) }
		}}})
	srv.Register(WebhookPath, (&Injector{Options: inject.Options{Kube: &v}, Waits: waits5s}).Handler())
	go srv.Start(ctx)
	for deadline := time.Now().Add(10 * time.Second); srv.StartedChecker()(nil) != nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the webhook server did not start")
		}
	}
	first, _ := short.GetCertificate(nil)
	injected := func(name string) bool {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
		if err := c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		lc := pod.Spec.Containers[0].Lifecycle
		return lc != nil && lc.PreStop != nil && lc.PreStop.Sleep != nil
	}
	// The API server reads webhook configurations through an informer: give it the
	// caBundle of the re-created Secret's CA before the first check.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; !injected("before-" + string(rune('a'+i))); i++ {
		if time.Now().After(deadline) {
			t.Fatal("the API server never called the webhook with the bootstrapped certificate")
		}
		time.Sleep(200 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if cur, _ := short.GetCertificate(nil); !bytes.Equal(cur.Certificate[0], first.Certificate[0]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the 6 s certificate was not renewed")
		}
	}
	if !injected("after-rotation") {
		t.Fatal("the API server did not call the webhook after the rotation")
	}

	// A CA that lives 20 s is rotated after about 13 s, in two phases (2 s trust delay),
	// while a pod is admitted every 100 ms: not one misses the webhook.
	stopShort()
	rot := newCerts(0)
	rot.CAValidity, rot.TrustDelay, rot.Interval = 20*time.Second, 2*time.Second, 200*time.Millisecond
	if err := c.Get(ctx, client.ObjectKeyFromObject(&secret), &secret); err == nil {
		if err := c.Delete(ctx, &secret); err != nil {
			t.Fatal(err)
		}
	}
	if err := rot.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	go rot.Start(ctx)
	active.Store(rot)
	caOf := func() string {
		cur, _ := rot.GetCertificate(nil)
		leaf, _ := x509.ParseCertificate(cur.Certificate[0])
		return leaf.Issuer.CommonName
	}
	for deadline, i := time.Now().Add(10*time.Second), 0; !injected(fmt.Sprintf("ca-before-%d", i)); i++ {
		if time.Now().After(deadline) {
			t.Fatal("the API server never called the webhook with the new CA's certificate")
		}
		time.Sleep(200 * time.Millisecond)
	}
	firstCA := caOf()
	// Watch the order of the two phases: when the caBundle first carried another CA,
	// and when the serving certificate switched to it.
	var published, switched atomic.Int64
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for ; wctx.Err() == nil; time.Sleep(20 * time.Millisecond) {
			var m admissionregistrationv1.MutatingWebhookConfiguration
			if err := c.Get(wctx, types.NamespacedName{Name: "nap"}, &m); err == nil && published.Load() == 0 {
				for _, ca := range pemCerts(t, m.Webhooks[0].ClientConfig.CABundle) {
					if ca.Subject.CommonName != firstCA {
						published.Store(time.Now().UnixNano())
					}
				}
			}
			if caOf() != firstCA && switched.Load() == 0 {
				switched.Store(time.Now().UnixNano())
			}
		}
	}()
	admitted, missed := 0, 0
	for deadline := time.Now().Add(25 * time.Second); caOf() == firstCA || admitted < 20; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the CA was not rotated in 25 s (%d admitted, %d missed)", admitted, missed)
		}
		admitted++
		if !injected(fmt.Sprintf("ca-rotation-%d", admitted)) {
			missed++
		}
	}
	// A few more after the switch.
	for range 10 {
		admitted++
		if !injected(fmt.Sprintf("ca-rotation-%d", admitted)) {
			missed++
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopWatch()
	lead := time.Duration(switched.Load() - published.Load())
	t.Logf("CA rotation %s → %s: in the caBundle %v before serving; %d pods admitted, %d without the webhook", firstCA, caOf(), lead, admitted, missed)
	if published.Load() == 0 || switched.Load() == 0 || lead < rot.TrustDelay-100*time.Millisecond {
		t.Errorf("the serving certificate switched %v after the new CA reached the caBundle, want at least the %v trust delay", lead, rot.TrustDelay)
	}
	if missed > 0 {
		t.Errorf("%d of %d pods admitted during the CA rotation missed the webhook", missed, admitted)
	}
}
