package status

import (
	"strings"
	"testing"

	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/scope"
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
