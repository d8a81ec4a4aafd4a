package controller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
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

	"github.com/nap-k8s/nap/controller/certs"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
)

// TestCertsWebhook: the real API server calls the webhook with the certificate the
// Rotator bootstrapped, trusting the CA it wrote into the configuration's caBundle;
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

	newCerts := func(validity time.Duration) *certs.Rotator {
		return &certs.Rotator{Client: c, Namespace: "nap-system", SecretName: "nap-webhook-tls", Service: "nap",
			Hosts: []string{wopts.LocalServingHost, "localhost"}, WebhookConfiguration: "nap",
			CertValidity: validity, Interval: 300 * time.Millisecond, Log: testr.New(t)}
	}
	// Two replicas start at once on an empty namespace: one Secret, the same certificate.
	a, b := newCerts(0), newCerts(0)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, r := range []*certs.Rotator{a, b} {
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
	if !bytes.Equal(bundle, secret.Data[certs.SecretCAKey]) || bytes.Equal(bundle, envtestCA) {
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
	var active atomic.Pointer[certs.Rotator] // whose certificate the webhook server serves
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
				for _, ca := range certs.Bundle(m.Webhooks[0].ClientConfig.CABundle) {
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
