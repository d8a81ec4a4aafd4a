package writer

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/policyreport"
)

var (
	api = corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "api"}
	web = corev1.ObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "web", Name: "cache"}
	r1  = policyreport.Result{Workload: api, Policy: "not-injected", Severity: "high", Message: "admitted while the webhook was down", Properties: map[string]string{"pods": "2"}}
	r2  = policyreport.Result{Workload: api, Policy: "failed-prestop-hook", Severity: "high", Message: "exec: /bin/sh: not found", Properties: map[string]string{"pods": "1", "cause": "no-shell"}}
	r3  = policyreport.Result{Workload: web, Policy: "grace-period-too-short", Severity: "medium", Message: "the grace period 10s does not cover the delay 15s"}
)

// On a real API server with each format's real CRD — OpenReports' (its module's, as
// pinned in go.mod) and the wg-policy PolicyReport (Kyverno's, pinned): Detect
// finds it, the API server accepts the reports (its schema), Sync writes what changed
// and only that, a new Writer (a restart) writes nothing that is already right, and a
// namespace made clean loses its report.
func TestWriter(t *testing.T) {
	for _, c := range []struct {
		format policyreport.Format
		crd    func(t *testing.T) string
	}{
		{policyreport.OpenReports, func(t *testing.T) string {
			return kubeenv.ModuleFile(t, "github.com/openreports/reports-api", "config/crd/openreports.io_reports.yaml")
		}},
		{policyreport.WGPolicy, func(t *testing.T) string {
			// Kyverno's copy, as Kyverno 1.15 installs it (wg-policy's own repository
			// is not on the module proxy).
			return filepath.Join(kubeenv.ModuleDir(t, "github.com/kyverno/kyverno@v1.15.2"), "config/crds/policyreport/wgpolicyk8s.io_policyreports.yaml")
		}},
	} {
		t.Run(c.format.GroupVersion.String(), func(t *testing.T) { testWriter(t, c.format, c.crd(t)) })
	}
}

func testWriter(t *testing.T, want policyreport.Format, crd string) {
	cfg := kubeenv.APIServer(t)
	d, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Detect(d); err != nil || ok {
		t.Fatalf("Detect before the CRD: %v %v", ok, err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{crd}}); err != nil {
		t.Fatal(err)
	}
	d, _ = discovery.NewDiscoveryClientForConfig(cfg)
	f, ok, err := Detect(d)
	if err != nil || !ok || f != want {
		t.Fatalf("Detect: %+v %v %v", f, ok, err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{"shop", "web"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(ns string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(f.GroupVersion.WithKind(f.Kind))
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: policyreport.Name}, u); err != nil {
			return nil
		}
		return u
	}
	fails := func(u *unstructured.Unstructured) int64 {
		n, _, _ := unstructured.NestedInt64(u.Object, "summary", "fail")
		return n
	}
	w := &Writer{Client: c, Format: f}
	if err := w.Sync(ctx, map[string][]policyreport.Result{"shop": {r1, r2}, "web": {r3}}); err != nil {
		t.Fatal(err)
	}
	shop, webRep := get("shop"), get("web")
	if shop == nil || webRep == nil || fails(shop) != 2 || fails(webRep) != 1 {
		t.Fatalf("reports after the first sync: shop %v, web %v", shop, webRep)
	}
	results, _, _ := unstructured.NestedSlice(shop.Object, "results")
	if len(results) != 2 || results[0].(map[string]any)["policy"] != "failed-prestop-hook" {
		t.Errorf("shop's results: %v", results)
	}

	// At rest: no write, from this Writer or from a new one.
	for _, w := range []*Writer{w, {Client: c, Format: f}} {
		if err := w.Sync(ctx, map[string][]policyreport.Result{"shop": {r2, r1}, "web": {r3}}); err != nil {
			t.Fatal(err)
		}
		if s, r := get("shop"), get("web"); s.GetResourceVersion() != shop.GetResourceVersion() || r.GetResourceVersion() != webRep.GetResourceVersion() {
			t.Errorf("a sync with nothing new wrote: shop %s → %s, web %s → %s", shop.GetResourceVersion(), s.GetResourceVersion(), webRep.GetResourceVersion(), r.GetResourceVersion())
		}
	}

	// An installation that owns its reports (its ClusterRole, as the published
	// ConfigMaps): a report written without the owner is written again, once, with it;
	// then nothing at rest.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "nap"}}
	if err := c.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	owner := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "nap", UID: role.UID}
	owned := &Writer{Client: c, Format: f, Owners: []metav1.OwnerReference{owner}}
	for range 2 {
		if err := owned.Sync(ctx, map[string][]policyreport.Result{"shop": {r2, r1}, "web": {r3}}); err != nil {
			t.Fatal(err)
		}
	}
	for ns, before := range map[string]*unstructured.Unstructured{"shop": shop, "web": webRep} {
		after := get(ns)
		if refs := after.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != role.UID {
			t.Errorf("%s's report: owners %v, want the ClusterRole", ns, refs)
		}
		if after.GetResourceVersion() == before.GetResourceVersion() {
			t.Errorf("%s's report was not written again with its owner", ns)
		}
		if got, err := owned.Read(ctx); err != nil || len(got[ns]) == 0 {
			t.Errorf("Read after the owner's write: %v %v", got, err)
		}
	}
	shop, webRep = get("shop"), get("web")
	if err := (&Writer{Client: c, Format: f, Owners: []metav1.OwnerReference{owner}}).Sync(ctx, map[string][]policyreport.Result{"shop": {r2, r1}, "web": {r3}}); err != nil {
		t.Fatal(err)
	}
	if s := get("shop"); s.GetResourceVersion() != shop.GetResourceVersion() {
		t.Errorf("an owned report at rest was written again")
	}

	// shop's hook is fixed, web is clean.
	if err := w.Sync(ctx, map[string][]policyreport.Result{"shop": {r1}}); err != nil {
		t.Fatal(err)
	}
	if s := get("shop"); s == nil || fails(s) != 1 {
		t.Errorf("shop after the fix: %v", s)
	}
	if r := get("web"); r != nil {
		t.Errorf("web's report is left when web is clean")
	}
}
