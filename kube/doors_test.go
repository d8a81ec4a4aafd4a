package kube

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestDoors: each front door nap reads, as its project documents it: the Services of
// its own namespace it names, and what it makes of them.
func TestDoors(t *testing.T) {
	for _, tc := range []struct {
		name, object string
		want         map[string]Fronts
	}{
		{"an HTTPRoute", `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop, namespace: shop}
spec:
  parentRefs: [{name: edge}]
  rules:
  - backendRefs: [{name: web, port: 80}, {name: api, namespace: other, port: 80}]`,
			map[string]Fronts{"web": {Route: true, RouteHTTP: true}}},
		{"a TCPRoute: passed through", `
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {name: db, namespace: shop}
spec:
  parentRefs: [{name: edge, sectionName: postgres}]
  rules:
  - backendRefs: [{name: postgres, port: 5432}]`,
			map[string]Fronts{"postgres": {Route: true}}},
		{"Traefik's IngressRoute: Services, not TraefikServices, of its namespace", `
apiVersion: traefik.io/v1alpha1
kind: IngressRoute
metadata: {name: shop, namespace: shop}
spec:
  entryPoints: [web]
  routes:
  - match: Host(` + "`shop.example`" + `)
    kind: Rule
    services:
    - {name: web, port: 80}
    - {name: canary, kind: TraefikService}
    - {name: api, namespace: other, port: 80}
    - {name: cart, namespace: shop, port: 80}`,
			map[string]Fronts{"web": {Ingress: true}, "cart": {Ingress: true}}},
		{"Traefik's IngressRouteTCP", `
apiVersion: traefik.io/v1alpha1
kind: IngressRouteTCP
metadata: {name: db, namespace: shop}
spec:
  routes:
  - match: HostSNI(` + "`*`" + `)
    services: [{name: postgres, port: 5432}]`,
			map[string]Fronts{"postgres": {Ingress: true}}},
		{"Contour's HTTPProxy: routes and its TCP proxy", `
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: shop, namespace: shop}
spec:
  virtualhost: {fqdn: shop.example}
  routes:
  - conditions: [{prefix: /}]
    services: [{name: web, port: 80}, {name: web-canary, port: 80, weight: 10}]
  tcpproxy:
    services: [{name: tls-passthrough, port: 443}]`,
			map[string]Fronts{"web": {Ingress: true}, "web-canary": {Ingress: true}, "tls-passthrough": {Ingress: true}}},
		{"Istio's VirtualService: the hosts that are Services of its namespace", `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: reviews, namespace: shop}
spec:
  hosts: [reviews]
  http:
  - route:
    - destination: {host: reviews, subset: v2}
      weight: 90
    - destination: {host: ratings.shop.svc.cluster.local}
      weight: 10
    mirror: {host: shadow.shop.svc.corp.example}
  - route:
    - destination: {host: details.other.svc.cluster.local}
    - destination: {host: api.example.com}
    - destination: {host: legacy.shop}
  tcp:
  - route: [{destination: {host: mysql}}]`,
			map[string]Fronts{"reviews": {Mesh: true}, "ratings": {Mesh: true}, "shadow": {Mesh: true}, "mysql": {Mesh: true}}},
		{"an AWS TargetGroupBinding, pods as targets", `
apiVersion: elbv2.k8s.aws/v1beta1
kind: TargetGroupBinding
metadata: {name: web, namespace: shop}
spec:
  serviceRef: {name: web, port: 80}
  targetGroupARN: arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/0123456789abcdef
  targetType: ip`,
			map[string]Fronts{"web": {TargetGroupType: "ip"}}},
		{"an AWS TargetGroupBinding, nodes as targets", `
apiVersion: elbv2.k8s.aws/v1beta1
kind: TargetGroupBinding
metadata: {name: web, namespace: shop}
spec:
  serviceRef: {name: web, port: 80}
  targetGroupARN: arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/0123456789abcdef
  targetType: instance`,
			map[string]Fronts{"web": {TargetGroupType: "instance"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(tc.object), &obj); err != nil {
				t.Fatal(err)
			}
			gv, _ := obj["apiVersion"].(string)
			group, _, _ := strings.Cut(gv, "/")
			d, ok := DoorOf(group, obj["kind"].(string))
			if !ok {
				t.Fatalf("%s %s is not a door", gv, obj["kind"])
			}
			f := Frontends{}
			f.AddDoor(d, obj)
			if len(f) != len(tc.want) {
				t.Errorf("names %v, want %v", f, tc.want)
			}
			for name, want := range tc.want {
				if got := f.Of(name); got != want {
					t.Errorf("%s: %+v, want %+v", name, got, want)
				}
			}
		})
	}
	if _, ok := DoorOf("networking.k8s.io", "Ingress"); ok {
		t.Error("an Ingress is read typed, not as a door")
	}
	// A TargetGroupBinding in IP mode wins over one in instance mode for the same Service.
	tgb, _ := DoorOf("elbv2.k8s.aws", "TargetGroupBinding")
	f := Frontends{}
	for _, tt := range []string{"instance", "ip", "instance"} {
		f.AddDoor(tgb, map[string]any{"spec": map[string]any{"serviceRef": map[string]any{"name": "web"}, "targetType": tt}})
	}
	if f.Of("web").TargetGroupType != "ip" {
		t.Errorf("ip and instance: %+v", f.Of("web"))
	}
}
