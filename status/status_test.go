package status

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/internal/testutil/golden"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/traffic"
)

const fleet = `apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: api:1, ports: [{containerPort: 8080}], readinessProbe: {httpGet: {path: /readyz, port: 8080}}}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: shop}
spec: {selector: {app: api}, ports: [{port: 80, targetPort: 8080}]}
`

// TestComputeDecides: a workload with no hook of its own counts as protected by the
// webhook exactly where scope.Decide gives its pods the delay and the webhook is there.
func TestComputeDecides(t *testing.T) {
	objs, err := manifest.Read("fleet.yaml", []byte(fleet))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		installed bool
		scope     scope.Scope
		ns        map[string]string
		want      Means
		reasons   int
	}{
		{name: "opt-in, nothing labelled", installed: true, scope: scope.OptIn, want: None, reasons: 1}, // no-prestop-delay
		{name: "namespace opted in", installed: true, scope: scope.OptIn, ns: map[string]string{scope.InjectLabel: scope.Enabled}, want: Webhook},
		{name: "default scope installed", installed: true, scope: scope.Default, want: Webhook},
		{name: "namespace labelled default", installed: true, scope: scope.OptIn, ns: map[string]string{scope.Label: "default"}, want: Webhook},
		{name: "audit scope: reported, not injected", installed: true, scope: scope.Audit, want: None, reasons: 1},
		{name: "default scope, namespace opted out", installed: true, scope: scope.Default, ns: map[string]string{scope.InjectLabel: scope.Disabled}, want: None, reasons: 1},
		{name: "opted in, no webhook", installed: false, ns: map[string]string{scope.InjectLabel: scope.Enabled}, want: None, reasons: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Compute(Input{Objects: objs, WebhookInstalled: tc.installed, Scope: tc.scope,
				NamespaceLabels: map[string]map[string]string{"shop": tc.ns}})
			if len(r.Namespaces) != 1 || len(r.Namespaces[0].Workloads) != 1 {
				t.Fatalf("report %+v, want the one workload", r)
			}
			w := r.Namespaces[0].Workloads[0]
			if w.Means != tc.want || len(w.Reasons) != tc.reasons || w.Safe != (tc.want != None) {
				t.Errorf("means %s, reasons %q, safe %v; want %s with %d reasons", w.Means, w.Reasons, w.Safe, tc.want, tc.reasons)
			}
		})
	}
}

// TestMeans: how a workload's hook is counted, nap's adaptive wait apart from its fixed
// delay.
func TestMeans(t *testing.T) {
	for _, tc := range []struct {
		preStop string
		want    Means
	}{
		{`{sleep: {seconds: 5}}`, Native},
		{`{exec: {command: [/nap/nap, "5"]}}`, Binary},
		{`{exec: {command: [/nap/nap, --quiet, 2s, --max, 60s, --allow, "1"]}}`, Adaptive},
		{`{exec: {command: [/bin/drain]}}`, OwnHook},
	} {
		doc := strings.Replace(fleet, `readinessProbe: {httpGet: {path: /readyz, port: 8080}}}]`,
			`readinessProbe: {httpGet: {path: /readyz, port: 8080}}, lifecycle: {preStop: `+tc.preStop+`}}]`, 1)
		objs, err := manifest.Read("fleet.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		r := Compute(Input{Objects: objs})
		if len(r.Namespaces) != 1 || r.Namespaces[0].Workloads[0].Means != tc.want {
			t.Errorf("preStop %s: %+v, want means %s", tc.preStop, r.Namespaces, tc.want)
		}
	}
}

// TestDelayBelowPath: with a calibration, a workload whose delay covers its in-cluster
// path is safe, and the same workload behind a load balancer (Local) whose calibrated
// tail is longer is unprotected, the reason naming the path and the delay it needs.
func TestDelayBelowPath(t *testing.T) {
	cal, err := traffic.ReadCalibration(strings.NewReader(`{"apiVersion": "calibrate.nap.dev/v1", "kind": "Calibration",
		"measured": "2026-11-27T05:00:00Z", "rounds": 5, "margin_seconds": 2, "paths": [
		{"name": "clusterip", "samples": 15, "p50_seconds": 0.7, "p99_seconds": 1.9, "max_seconds": 2.1, "delay_seconds": 5},
		{"name": "lb-local", "samples": 5, "p50_seconds": 24, "p99_seconds": 27.3, "max_seconds": 27.3, "delay_seconds": 30}]}`), "cal.json")
	if err != nil {
		t.Fatal(err)
	}
	hooked := strings.Replace(fleet, `readinessProbe: {httpGet: {path: /readyz, port: 8080}}}]`,
		`readinessProbe: {httpGet: {path: /readyz, port: 8080}}, lifecycle: {preStop: {sleep: {seconds: 5}}}}]`, 1)
	for _, tc := range []struct {
		name, doc string
		reason    string // "" safe
	}{
		{"in the cluster", hooked, ""},
		{"behind a load balancer (Local)", strings.Replace(hooked, "spec: {selector: {app: api},", "spec: {type: LoadBalancer, externalTrafficPolicy: Local, selector: {app: api},", 1),
			"delay-below-path: container \"api\"'s preStop holds it 5s, but Service api reaches the pod through the load balancer (Local), whose tail napctl calibrate measured at 27.3 s (the longest of 5 samples, 2026-11-27): it needs 30s"},
	} {
		objs, err := manifest.Read("fleet.yaml", []byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		in := Input{Objects: objs}
		in.Lint.Calibration = cal
		r := Compute(in)
		w := r.Namespaces[0].Workloads[0]
		if got := strings.Join(w.Reasons, "; "); got != tc.reason || w.Safe != (tc.reason == "") {
			t.Errorf("%s: safe %v, reasons %q; want %q", tc.name, w.Safe, got, tc.reason)
		}
	}
}

// TestAdaptiveMissesPool: nap's adaptive wait on new connections alone is unprotected
// where a client that pools its connections reaches the pods (any ingress controller;
// an AWS ALB in IP mode, for a Service an Ingress names), safe with the request signal
// or without the Ingress; no calibration needed.
func TestAdaptiveMissesPool(t *testing.T) {
	const adaptive = `/nap/nap, --quiet, 2s, --max, 60s, --allow, "1"`
	hooked := strings.Replace(fleet, `readinessProbe: {httpGet: {path: /readyz, port: 8080}}}]`,
		`readinessProbe: {httpGet: {path: /readyz, port: 8080}}, volumeMounts: [{name: nap, mountPath: /nap, readOnly: true}], lifecycle: {preStop: {exec: {command: [`+adaptive+`]}}}}]
      terminationGracePeriodSeconds: 90
      volumes: [{name: nap, configMap: {name: nap, defaultMode: 0555, items: [{key: nap-amd64, path: nap}]}}]`, 1)
	plain := hooked
	hooked = strings.Replace(hooked, "metadata: {name: api, namespace: shop}\nspec: {selector", "metadata: {name: api, namespace: shop, annotations: {alb.ingress.kubernetes.io/target-type: ip}}\nspec: {selector", 1)
	const ingress = `---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: api, namespace: shop}
spec: {defaultBackend: {service: {name: api, port: {number: 80}}}}
`
	for _, tc := range []struct {
		name, doc string
		reason    string // "" safe
	}{
		{"no Ingress: in the cluster only", hooked, ""},
		{"behind an ingress controller", plain + ingress,
			"adaptive-misses-pool: container \"api\"'s preStop: the adaptive wait watches new connections alone, but ingress via Service api reaches the pod through clients that send over connections they keep: the wait can end while they still send"},
		{"behind an ALB in IP mode", hooked + ingress,
			"adaptive-misses-pool: container \"api\"'s preStop: the adaptive wait watches new connections alone, but ingress via Service api and lb-pods via Service api reach the pod through clients that send over connections they keep: the wait can end while they still send"},
		{"behind it, watching requests", strings.Replace(hooked, adaptive, adaptive+", --requests, 1s", 1) + ingress, ""},
	} {
		objs, err := manifest.Read("fleet.yaml", []byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		in := Input{Objects: objs}
		r := Compute(in)
		w := r.Namespaces[0].Workloads[0]
		if got := strings.Join(w.Reasons, "; "); got != tc.reason || w.Safe != (tc.reason == "") {
			t.Errorf("%s: safe %v, reasons %q; want %q", tc.name, w.Safe, got, tc.reason)
		}
	}
}

// TestPolicyReports: the unprotected workloads as OpenReports Reports, one result per
// reason, one for failed hooks and one for what the controller counted of its
// terminations (a golden file), and a real API server with
// OpenReports' CRD accepts them (its schema).
func TestPolicyReports(t *testing.T) {
	objs, err := manifest.Read("fleet.yaml", []byte(fleet))
	if err != nil {
		t.Fatal(err)
	}
	quiet := policyreport.Terminations{Since: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	quiet.Add(nap.Quiet, 1200*time.Millisecond, "api-7d9f8c6b5-abcde", nil, time.Time{})
	r := Compute(Input{Objects: objs, NamespaceLabels: map[string]map[string]string{"shop": {scope.InjectLabel: scope.Enabled}},
		Events:       []Event{{Namespace: "shop", Pod: "api-7d9f8c6b5-abcde", Message: `exec: "/bin/sh": stat /bin/sh: no such file or directory`, Time: time.Unix(1e9, 0)}},
		Terminations: map[string]policyreport.Terminations{"Deployment/shop/api": quiet}})
	var out bytes.Buffer
	if err := PolicyReports(&out, r, policyreport.OpenReports); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/openreports.yaml", out.Bytes())
	res := PolicyResults(r)["shop"]
	if len(res) != 4 { // opted in without the webhook, no-prestop-delay, the failed hook, its terminations
		t.Errorf("%d results, want 4: %+v", len(res), res)
	}

	cfg := kubeenv.APIServer(t)
	crd := kubeenv.ModuleFile(t, "github.com/openreports/reports-api", "config/crd/openreports.io_reports.yaml")
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{crd}}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	for _, rep := range policyreport.Reports(policyreport.OpenReports, PolicyResults(r)) {
		if err := c.Create(ctx, rep, client.FieldValidation("Strict")); err != nil {
			t.Errorf("the API server refuses %s/%s: %v", rep.GetNamespace(), rep.GetName(), err)
		}
	}
}

// TestTerminationsShown: what nap's controller counted of a workload's terminations, in
// its row and, where one was late or cut, a line of its own; a workload whose delay is
// the native sleep or a hook of its own is not observed, and says so.
func TestTerminationsShown(t *testing.T) {
	hooked := func(name, preStop string) string {
		return strings.NewReplacer("name: api", "name: "+name, "app: api", "app: "+name, `readinessProbe: {httpGet: {path: /readyz, port: 8080}}}]`,
			`readinessProbe: {httpGet: {path: /readyz, port: 8080}}, lifecycle: {preStop: `+preStop+`}}]`).Replace(fleet)
	}
	doc := hooked("binary", `{exec: {command: [/nap/nap, "5"]}}`) + "---\n" + hooked("native", `{sleep: {seconds: 5}}`) + "---\n" +
		hooked("own", `{exec: {command: [/bin/drain]}}`) + "---\n" + hooked("quiet", `{exec: {command: [/nap/nap, "5"]}}`)
	objs, err := manifest.Read("fleet.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	late := policyreport.Terminations{Since: since}
	late.Add(nap.Quiet, 1200*time.Millisecond, "binary-a", nil, time.Time{})
	late.Add(nap.Late, 0, "binary-b", []string{"clusterip", "lb-local"}, time.Date(2026, 12, 1, 8, 12, 0, 0, time.UTC))
	quiet := policyreport.Terminations{Since: since}
	quiet.Add(nap.Quiet, 800*time.Millisecond, "quiet-a", nil, time.Time{})
	r := Compute(Input{Objects: objs, Terminations: map[string]policyreport.Terminations{"Deployment/shop/binary": late, "Deployment/shop/quiet": quiet}})
	got := map[string]Workload{}
	for _, w := range r.Namespaces[0].Workloads {
		got[w.Name] = w
	}
	if w := got["binary"]; w.Terminations == nil || w.Terminations.Total() != 2 || w.NotObserved != "" {
		t.Errorf("binary: %+v, want its 2 terminations", w)
	}
	for _, name := range []string{"native", "own"} {
		if w := got[name]; w.Terminations != nil || !strings.Contains(w.NotObserved, "runs no nap binary") {
			t.Errorf("%s: %+v, want not observed", name, w)
		}
	}
	var out bytes.Buffer
	if err := Text(&out, r); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/terminations.txt", out.Bytes())
}
