package certs

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/kube"
)

// Keys of the webhook's TLS Secret. ca.crt may hold more than one CA: during a CA
// rotation the old one stays trusted until it expires, so that replicas still serving a
// certificate of the old CA keep working.
const (
	SecretCAKey   = "ca.crt"
	SecretCAKeyPK = "ca.key"
	// SecretNextCAKeyPK holds the key of a new CA while it waits to be trusted: the
	// first phase of a CA rotation. Its certificate is already in ca.crt.
	SecretNextCAKeyPK = "ca-next.key"
	// PublishedAnnotation on the Secret records when the webhook configuration was
	// first seen carrying the new CA; the serving certificate switches to it TrustDelay
	// later, the second phase.
	PublishedAnnotation = "nap.dev/ca-next-published"
)

// Rotator bootstraps and rotates the webhook's TLS: a CA and a serving certificate for
// the webhook's Service, kept in one Secret of the controller's namespace, and the CA
// bundle of the controller's own MutatingWebhookConfiguration (by name; no other is
// read or written). Every replica runs it — no leader needed: writes carry the
// resourceVersion they were based on, so when two replicas race one wins and the
// other re-reads. A serving certificate is renewed when a third of its life is left,
// a CA likewise, which leaves months for every replica to pick up new material.
type Rotator struct {
	// Client must not be a cache-backed client: reading Secrets through the manager's
	// cache would list and watch Secrets cluster-wide, which the RBAC does not allow.
	Client client.Client
	// Namespace and SecretName locate the Secret; Service is the webhook's Service in
	// Namespace, whose DNS names the certificate carries.
	Namespace, SecretName, Service string
	// Hosts are extra DNS names or IP addresses for the certificate.
	Hosts []string
	// WebhookConfiguration is the name of the MutatingWebhookConfiguration whose
	// caBundle to keep; empty: none (cert-manager or tests).
	WebhookConfiguration string
	// Validity of the CA and of the serving certificate (defaults 10 years and 1 year).
	CAValidity, CertValidity time.Duration
	// Interval between checks (default 1 minute). A check is two GETs; it writes only
	// when something is missing, expiring or different.
	Interval time.Duration
	// TrustDelay is how long a new CA must have been in the webhook configuration's
	// caBundle before the serving certificate switches to one it signed (default 2
	// minutes): the API server reads webhook configurations through an informer, and
	// until it has the new bundle a certificate of the new CA would fail its handshake
	// (failurePolicy Ignore: pods admitted without the hook).
	TrustDelay time.Duration
	// Now is the clock (default time.Now); tests move it.
	Now func() time.Time
	Log logr.Logger
	// Owners of the Secret it creates (the installation's ClusterRole: uninstalling
	// nap removes it).
	Owners []metav1.OwnerReference

	cert atomic.Pointer[tls.Certificate]
}

func (c *Rotator) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Rotator) validity() (ca, cert time.Duration) {
	ca, cert = c.CAValidity, c.CertValidity
	if ca == 0 {
		ca = 10 * 365 * 24 * time.Hour
	}
	if cert == 0 {
		cert = 365 * 24 * time.Hour
	}
	return ca, cert
}

// GetCertificate serves the current certificate (for tls.Config.GetCertificate).
func (c *Rotator) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if cert := c.cert.Load(); cert != nil {
		return cert, nil
	}
	return nil, errors.New("the webhook's certificate is not loaded yet")
}

// Ready is a readyz check: ready once a certificate is loaded.
func (c *Rotator) Ready(*http.Request) error {
	_, err := c.GetCertificate(nil)
	return err
}

// NeedLeaderElection is false: every replica serves the webhook, so every replica
// needs the certificate.
func (c *Rotator) NeedLeaderElection() bool { return false }

// Start checks now and then every Interval until ctx ends. Errors are logged and
// retried at the next tick (sooner at start, while nothing is loaded).
func (c *Rotator) Start(ctx context.Context) error {
	interval := c.Interval
	if interval == 0 {
		interval = time.Minute
	}
	for {
		wait := interval
		if err := c.Ensure(ctx); err != nil {
			c.Log.Error(err, "webhook TLS")
			if c.cert.Load() == nil {
				wait = 2 * time.Second
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Ensure makes the Secret and the webhook configuration right and loads the
// certificate. It writes nothing when both are right.
//
// A CA is rotated in two phases. First the new CA joins the bundle (Secret and
// caBundle) while the serving certificate stays that of the old CA. Once the caBundle
// has been seen carrying it (PublishedAnnotation) for TrustDelay, a serving certificate
// of the new CA replaces the old one. The API server never meets a certificate it does
// not trust yet.
func (c *Rotator) Ensure(ctx context.Context) error {
	var s *corev1.Secret
	for attempt := 0; ; attempt++ {
		var err error
		s, err = c.ensureSecret(ctx)
		if err == nil {
			break
		}
		// Another replica wrote first: start again from what it wrote.
		if attempt < 3 && (apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) {
			continue
		}
		return err
	}
	if c.WebhookConfiguration == "" {
		return nil
	}
	for attempt := 0; ; attempt++ {
		err := c.ensureCABundle(ctx, s.Data[SecretCAKey])
		if err == nil {
			break
		}
		if attempt >= 3 || !apierrors.IsConflict(err) {
			return err
		}
	}
	// The caBundle now carries the pending CA: start its TrustDelay (once). A conflict
	// means another replica wrote; the next check sees what it wrote.
	if len(s.Data[SecretNextCAKeyPK]) > 0 && s.Annotations[PublishedAnnotation] == "" {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[PublishedAnnotation] = c.now().UTC().Format(time.RFC3339Nano)
		if err := c.Client.Update(ctx, s); err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("secret %s/%s: %w", c.Namespace, c.SecretName, err)
		}
		c.Log.Info("new webhook CA published; the serving certificate switches to it after the trust delay", "trustDelay", c.trustDelay().String())
	}
	return nil
}

func (c *Rotator) trustDelay() time.Duration {
	if c.TrustDelay == 0 {
		return 2 * time.Minute
	}
	return c.TrustDelay
}

func (c *Rotator) ensureSecret(ctx context.Context) (*corev1.Secret, error) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.SecretName}
	var s corev1.Secret
	err := c.Client.Get(ctx, key, &s)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("secret %s: %w", key, err)
	}
	var published time.Time
	if a := s.Annotations[PublishedAnnotation]; a != "" {
		published, _ = time.Parse(time.RFC3339Nano, a) // unreadable: as if not yet published
	}
	data, changed, err := c.renew(s.Data, published)
	if err != nil {
		return nil, err
	}
	if changed {
		oldNext := s.Data[SecretNextCAKeyPK]
		s.Data = data
		s.Type = corev1.SecretTypeTLS
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[kube.ManagedByLabel] = kube.ManagedByController
		if len(data[SecretNextCAKeyPK]) == 0 || !bytes.Equal(data[SecretNextCAKeyPK], oldNext) {
			delete(s.Annotations, PublishedAnnotation) // promoted, or a different pending CA
		}
		if exists {
			err = c.Client.Update(ctx, &s)
		} else {
			s.ObjectMeta = metav1.ObjectMeta{Name: c.SecretName, Namespace: c.Namespace, Labels: s.Labels, OwnerReferences: c.Owners}
			err = c.Client.Create(ctx, &s)
		}
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", key, err)
		}
		c.Log.Info("webhook TLS written", "secret", key.String(), "created", !exists)
	}
	cert, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", key, err)
	}
	if leaf, err := x509.ParseCertificate(cert.Certificate[0]); err == nil {
		certNotAfter.Set(float64(leaf.NotAfter.Unix()))
	}
	c.cert.Store(&cert)
	return &s, nil
}

func (c *Rotator) ensureCABundle(ctx context.Context, bundle []byte) error {
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	if err := c.Client.Get(ctx, types.NamespacedName{Name: c.WebhookConfiguration}, &mwc); err != nil {
		return fmt.Errorf("mutatingwebhookconfiguration %s: %w", c.WebhookConfiguration, err)
	}
	changed := false
	for i := range mwc.Webhooks {
		if !bytes.Equal(mwc.Webhooks[i].ClientConfig.CABundle, bundle) {
			mwc.Webhooks[i].ClientConfig.CABundle = bundle
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := c.Client.Update(ctx, &mwc); err != nil {
		return fmt.Errorf("mutatingwebhookconfiguration %s: %w", c.WebhookConfiguration, err)
	}
	c.Log.Info("webhook caBundle written", "mutatingwebhookconfiguration", c.WebhookConfiguration)
	return nil
}

// hosts are the names the serving certificate must carry.
func (c *Rotator) hosts() []string {
	h := []string{
		c.Service,
		c.Service + "." + c.Namespace,
		c.Service + "." + c.Namespace + ".svc",
		c.Service + "." + c.Namespace + ".svc.cluster.local",
	}
	return append(h, c.Hosts...)
}

// renew returns the Secret data as it should be now, and whether that differs from
// data; published is when the caBundle was first seen with the pending CA (zero: not
// yet). The rules:
//   - expired CAs leave the bundle;
//   - no usable CA (none, or its key lost): a new CA signs a new serving certificate at
//     once, as nothing the API server trusts is being served anyway;
//   - a CA with less than a third of its life left gets a successor, pending: it joins
//     the bundle and its key waits in ca-next.key (phase one);
//   - a pending CA becomes the signing CA once published for TrustDelay, or at once
//     when there is no webhook configuration to wait for (phase two); the old CA stays
//     in the bundle until it expires;
//   - a serving certificate is replaced when its CA is no longer the signing one, when a
//     third of its life is left, or when its names differ.
func (c *Rotator) renew(data map[string][]byte, published time.Time) (map[string][]byte, bool, error) {
	now := c.now()
	caLife, certLife := c.validity()
	var cas []*x509.Certificate
	for _, ca := range Bundle(data[SecretCAKey]) {
		if now.Before(ca.NotAfter) {
			cas = append(cas, ca)
		}
	}
	fresh := func(cert *x509.Certificate, life time.Duration) bool {
		return cert.NotAfter.Sub(now) > life/3 && !now.Before(cert.NotBefore)
	}
	// signing: the CA whose key is ca.key; next: the one whose key is ca-next.key.
	keyed := func(k []byte) (*x509.Certificate, *ecdsa.PrivateKey) {
		key, err := parseKey(k)
		if err != nil {
			return nil, nil
		}
		for _, ca := range cas {
			if publicKeyMatches(ca, key) {
				return ca, key
			}
		}
		return nil, nil
	}
	signing, signingKey := keyed(data[SecretCAKeyPK])
	next, nextKey := keyed(data[SecretNextCAKeyPK])
	changed := false
	switch {
	case signing == nil:
		ca, key, err := newCA(now, caLife)
		if err != nil {
			return nil, false, err
		}
		cas = append(cas, ca)
		signing, signingKey, next, nextKey = ca, key, nil, nil
		changed = true
	case next == nil && !fresh(signing, caLife):
		ca, key, err := newCA(now, caLife)
		if err != nil {
			return nil, false, err
		}
		cas = append(cas, ca)
		next, nextKey = ca, key
		changed = true
	}
	if next != nil && (c.WebhookConfiguration == "" || !published.IsZero() && now.Sub(published) >= c.trustDelay()) {
		signing, signingKey, next, nextKey = next, nextKey, nil, nil
		changed = true
	}

	// The bundle: the signing CA, then the pending one, then the others newest first.
	slices.SortStableFunc(cas, func(a, b *x509.Certificate) int {
		rank := func(x *x509.Certificate) int {
			switch {
			case x.Equal(signing):
				return 0
			case next != nil && x.Equal(next):
				return 1
			}
			return 2
		}
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return b.NotAfter.Compare(a.NotAfter)
	})
	cas = slices.CompactFunc(cas, func(a, b *x509.Certificate) bool { return a.Equal(b) })
	var bundle []byte
	for _, ca := range cas {
		bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})...)
	}
	out := map[string][]byte{SecretCAKey: bundle, SecretCAKeyPK: data[SecretCAKeyPK]}
	if !bytes.Equal(bundle, data[SecretCAKey]) {
		changed = true
	}
	if k, _ := parseKey(data[SecretCAKeyPK]); k == nil || !k.Equal(signingKey) {
		out[SecretCAKeyPK] = marshalKey(signingKey)
		changed = true
	}
	if nextKey != nil {
		out[SecretNextCAKeyPK] = data[SecretNextCAKeyPK]
		if k, _ := parseKey(data[SecretNextCAKeyPK]); k == nil || !k.Equal(nextKey) {
			out[SecretNextCAKeyPK] = marshalKey(nextKey)
		}
	}
	if !bytes.Equal(out[SecretNextCAKeyPK], data[SecretNextCAKeyPK]) {
		changed = true
	}

	certOK := false
	if pair, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey]); err == nil {
		if leaf, err := x509.ParseCertificate(pair.Certificate[0]); err == nil {
			certOK = fresh(leaf, min(certLife, caLife)) && leaf.CheckSignatureFrom(signing) == nil && sameHosts(certHosts(leaf), c.hosts())
		}
	}
	if certOK {
		out[corev1.TLSCertKey], out[corev1.TLSPrivateKeyKey] = data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey]
	} else {
		crt, key, err := newServing(now, certLife, signing, signingKey, c.hosts())
		if err != nil {
			return nil, false, err
		}
		out[corev1.TLSCertKey], out[corev1.TLSPrivateKeyKey] = crt, key
		changed = true
	}
	return out, changed, nil
}

func certHosts(c *x509.Certificate) []string {
	h := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		h = append(h, ip.String())
	}
	return h
}

func sameHosts(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func publicKeyMatches(cert *x509.Certificate, key *ecdsa.PrivateKey) bool {
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	return ok && pub.Equal(key.Public())
}

func newCA(now time.Time, life time.Duration) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("nap-webhook-ca@%d", now.Unix())},
		NotBefore:             now.Add(-time.Hour), // clock skew between replicas and the API server
		NotAfter:              now.Add(life),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	return ca, key, err
}

func newServing(now time.Time, life time.Duration, ca *x509.Certificate, caKey crypto.Signer, hosts []string) (crt, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(life),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), marshalKey(key), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}

func marshalKey(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err) // only for keys not on a known curve, which newCA never makes
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func parseKey(p []byte) (*ecdsa.PrivateKey, error) {
	b, _ := pem.Decode(p)
	if b == nil {
		return nil, errors.New("no PEM block")
	}
	return x509.ParseECPrivateKey(b.Bytes)
}

// Bundle is the certificates of a PEM bundle (a caBundle, ca.crt), those that parse.
func Bundle(p []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, p = pem.Decode(p)
		if b == nil {
			return out
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, c)
		}
	}
}
