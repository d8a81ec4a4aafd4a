package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// verify checks that data's serving certificate chains to its bundle for host at now.
func verify(t *testing.T, data map[string][]byte, host string, now time.Time) *x509.Certificate {
	t.Helper()
	leaf := Bundle(data[corev1.TLSCertKey])[0]
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
	c := &Rotator{Namespace: "nap-system", Service: "nap", Now: func() time.Time { return now }}
	const host = "nap.nap-system.svc"
	day := 24 * time.Hour

	data, changed, err := c.renew(nil, time.Time{})
	if err != nil || !changed {
		t.Fatalf("bootstrap: changed %v, %v", changed, err)
	}
	leaf0 := verify(t, data, host, now)
	ca0 := Bundle(data[SecretCAKey])
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
		return data, verify(t, data, host, now), Bundle(data[SecretCAKey])
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
	c := &Rotator{Namespace: "nap-system", Service: "nap", WebhookConfiguration: "nap", Now: func() time.Time { return now }}
	const host = "nap.nap-system.svc"
	data, _, err := c.renew(nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	ca0 := Bundle(data[SecretCAKey])[0]
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
	cas := Bundle(data[SecretCAKey])
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
	cas = Bundle(data[SecretCAKey])
	leaf := verify(t, data, host, now)
	if len(cas) != 2 || !cas[0].Equal(ca1) || !cas[1].Equal(ca0) || leaf.CheckSignatureFrom(ca1) != nil || len(data[SecretNextCAKeyPK]) != 0 {
		t.Fatalf("phase two: %d CAs, new first %v, leaf from the new CA %v, pending key left %v",
			len(cas), cas[0].Equal(ca1), leaf.CheckSignatureFrom(ca1) == nil, len(data[SecretNextCAKeyPK]) > 0)
	}
	renew("settled", now.Add(-2*time.Minute), false)
}
