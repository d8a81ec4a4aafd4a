package traffic

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/wait"
)

const stored = `{"apiVersion": "calibrate.nap.dev/v1", "kind": "Calibration", "measured": "2026-11-27T05:00:00Z", "namespace": "nap-calibrate", "rounds": 5,
 "margin_seconds": 2,
 "paths": [
  {"name": "clusterip", "samples": 15, "p50_seconds": 0.7, "p99_seconds": 1.9, "max_seconds": 2.1, "delay_seconds": 5},
  {"name": "ingress", "samples": 15, "p50_seconds": 1.1, "p99_seconds": 2.0, "max_seconds": 2.2, "delay_seconds": 5},
  {"name": "lb-local", "samples": 5, "p50_seconds": 24, "p99_seconds": 27.3, "max_seconds": 27.3, "delay_seconds": 30,
   "parameters": {"service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval": "10"}},
  {"name": "lb-cluster", "samples": 0, "p50_seconds": 0, "p99_seconds": 0, "max_seconds": 0, "delay_seconds": 0}
 ]}`

func TestReadCalibration(t *testing.T) {
	c, err := ReadCalibration(strings.NewReader(stored), "cal.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		paths []Path
		delay time.Duration
		path  string
		ok    bool
	}{
		{"in-cluster", []Path{ClusterIP}, 5 * time.Second, "clusterip", true},
		{"behind the ingress", []Path{ClusterIP, Ingress}, 5 * time.Second, "clusterip", true},
		{"behind a load balancer (Local)", []Path{ClusterIP, NodePort, LoadBalancerLocal}, 30 * time.Second, "lb-local", true},
		{"a path without samples, another unmeasured", []Path{LoadBalancerCluster, NodePort}, 0, "", false},
		{"none", nil, 0, "", false},
	} {
		d, p, ok := c.Needs(tc.paths)
		if d != tc.delay || p != tc.path || ok != tc.ok {
			t.Errorf("%s: needs %v for %q (%v), want %v for %q (%v)", tc.name, d, p, ok, tc.delay, tc.path, tc.ok)
		}
	}
	if tl, ok := c.Tail("lb-local"); !ok || tl.Max != 27.3 || tl.Parameters == nil {
		t.Errorf("lb-local: %+v %v", tl, ok)
	}

	for _, tc := range []struct{ name, doc, want string }{
		{"not JSON", "paths: []", "cal.json: not a calibration"},
		{"an unknown field", strings.Replace(stored, `"rounds"`, `"round"`, 1), `unknown field "round"`},
		{"another version", strings.Replace(stored, "calibrate.nap.dev/v1", "calibrate.nap.dev/v2", 1), `cal.json: apiVersion "calibrate.nap.dev/v2", kind "Calibration": want "calibrate.nap.dev/v1", "Calibration"`},
		{"no kind", strings.Replace(stored, `"kind": "Calibration", `, "", 1), `kind ""`},
		{"an unknown path", strings.Replace(stored, `"ingress"`, `"gateway"`, 1), `cal.json: paths[1]: path "gateway": want one of ` + strings.Join(Names(), ", ")},
		{"a path twice", strings.Replace(stored, `"ingress"`, `"clusterip"`, 1), `paths[1]: path "clusterip" twice`},
		{"a delay below the tail", strings.Replace(stored, `"delay_seconds": 30`, `"delay_seconds": 20`, 1), `paths[2] (lb-local): negative figures, or a delay below the longest tail`},
		{"a negative margin", strings.Replace(stored, `"margin_seconds": 2`, `"margin_seconds": -2`, 1), "margin_seconds is negative"},
	} {
		_, err := ReadCalibration(strings.NewReader(tc.doc), "cal.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestDelayFor(t *testing.T) {
	for _, tc := range []struct {
		tail, margin, want time.Duration
	}{
		{2100 * time.Millisecond, 2 * time.Second, 5 * time.Second},
		{3 * time.Second, 2 * time.Second, 5 * time.Second},
		{0, 2 * time.Second, 2 * time.Second},
		{27300 * time.Millisecond, 2 * time.Second, 30 * time.Second},
	} {
		if got := DelayFor(tc.tail, tc.margin); got != tc.want {
			t.Errorf("DelayFor(%v, %v) = %v, want %v", tc.tail, tc.margin, got, tc.want)
		}
	}
}

func TestRoute(t *testing.T) {
	c, err := ReadCalibration(strings.NewReader(stored), "cal.json")
	if err != nil {
		t.Fatal(err)
	}
	hc := map[string]string{"service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval": "10"}
	svc := func(name string, typ corev1.ServiceType, policy corev1.ServiceExternalTrafficPolicy, ann map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}, Spec: corev1.ServiceSpec{Type: typ, ExternalTrafficPolicy: policy}}
	}
	fixed := wait.Wait{Kind: wait.Fixed, Delay: 10 * time.Second, DelayText: "10"}
	adaptive := wait.Wait{Kind: wait.Adaptive, Min: 10 * time.Second, Delay: 20 * time.Second, Quiet: time.Second}
	for _, tc := range []struct {
		name      string
		svcs      []*corev1.Service
		ingressed string
		routed    string // a Gateway API route names it
		meshed    string // a service mesh's route names it
		// noRemedy: below it, nothing but the fleet's wait ends the shortfall (every
		// unmeasured path one calibrate cannot open).
		noRemedy   bool
		path, via  string
		unmeasured []string
		fixed      time.Duration // the fixed wait's delay from the fleet's 10 s
		min, max   time.Duration // the adaptive wait's from the fleet's 10 s to 20 s
		pooled     []string      // the adaptive wait watches requests for these
	}{
		{name: "no Service", fixed: 10 * time.Second, min: 10 * time.Second, max: 20 * time.Second},
		{name: "in the cluster only: the cluster's tail, below the fleet's",
			svcs: []*corev1.Service{svc("web", "", "", nil)}, path: "clusterip", via: "web",
			fixed: 5 * time.Second, min: 5 * time.Second, max: 20 * time.Second},
		{name: "behind the ingress: an HTTP proxy that pools, so requests",
			svcs: []*corev1.Service{svc("web", "", "", nil)}, ingressed: "web", path: "clusterip", via: "web",
			pooled: []string{"ingress via Service web"},
			fixed:  5 * time.Second, min: 5 * time.Second, max: 20 * time.Second},
		{name: "behind a load balancer (Local), its health checks as calibrated: above the fleet's",
			svcs: []*corev1.Service{svc("web", "", "", nil), svc("web-lb", corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, hc)},
			path: "lb-local", via: "web-lb", unmeasured: []string{"nodeport via Service web-lb (not calibrated)"},
			fixed: 30 * time.Second, min: 30 * time.Second, max: 30 * time.Second},
		{name: "a load balancer set otherwise: unmeasured, so at least the fleet's",
			svcs: []*corev1.Service{svc("web", "", "", nil), svc("web-lb", corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, nil)},
			path: "clusterip", via: "web",
			unmeasured: []string{"nodeport via Service web-lb (not calibrated)", "lb-local via Service web-lb (its annotations are not those calibrated)"},
			fixed:      10 * time.Second, min: 10 * time.Second, max: 20 * time.Second},
		{name: "behind a Gateway API route of HTTP, not calibrated: at least the fleet's; pooled",
			svcs: []*corev1.Service{svc("web", "", "", nil)}, routed: "web", path: "clusterip", via: "web",
			unmeasured: []string{"gateway-route via Service web (not calibrated)"},
			pooled:     []string{"gateway-route via Service web"},
			fixed:      10 * time.Second, min: 10 * time.Second, max: 20 * time.Second},
		{name: "behind a service mesh's route: never calibrated, so at least the fleet's; pooled",
			svcs: []*corev1.Service{svc("web", "", "", nil)}, meshed: "web", path: "clusterip", via: "web",
			unmeasured: []string{"mesh-route via Service web (not calibrated)"}, noRemedy: true,
			pooled: []string{"mesh-route via Service web"},
			fixed:  10 * time.Second, min: 10 * time.Second, max: 20 * time.Second},
		{name: "a load balancer (Cluster) without samples",
			svcs: []*corev1.Service{svc("web", corev1.ServiceTypeLoadBalancer, "", nil)}, path: "clusterip", via: "web",
			unmeasured: []string{"nodeport via Service web (not calibrated)", "lb-cluster via Service web (not calibrated)"},
			fixed:      10 * time.Second, min: 10 * time.Second, max: 20 * time.Second},
		{name: "behind a network load balancer in IP mode: not pooled",
			svcs: []*corev1.Service{svc("web", corev1.ServiceTypeLoadBalancer, "", map[string]string{"service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip"})}, path: "clusterip", via: "web",
			unmeasured: []string{"nodeport via Service web (not calibrated)", "lb-pods via Service web (not calibrated)"},
			fixed:      10 * time.Second, min: 10 * time.Second, max: 20 * time.Second},
		{name: "behind an AWS ALB in IP mode for an Ingress (set on the Service): pooled",
			svcs: []*corev1.Service{svc("web", "", "", map[string]string{"alb.ingress.kubernetes.io/target-type": "ip"})}, ingressed: "web", path: "clusterip", via: "web",
			unmeasured: []string{"lb-pods via Service web (not calibrated)"},
			pooled:     []string{"ingress via Service web", "lb-pods via Service web"},
			fixed:      10 * time.Second, min: 10 * time.Second, max: 20 * time.Second},
		{name: "the same annotation, no Ingress: in the cluster only",
			svcs: []*corev1.Service{svc("web", "", "", map[string]string{"alb.ingress.kubernetes.io/target-type": "ip"})}, path: "clusterip", via: "web",
			fixed: 5 * time.Second, min: 5 * time.Second, max: 20 * time.Second},
		{name: "behind GCP's container-native load balancing for an Ingress: pooled",
			svcs: []*corev1.Service{svc("web", "", "", map[string]string{"cloud.google.com/neg": `{"ingress": true}`})}, ingressed: "web", path: "clusterip", via: "web",
			unmeasured: []string{"lb-pods via Service web (not calibrated)"},
			pooled:     []string{"ingress via Service web", "lb-pods via Service web"},
			fixed:      10 * time.Second, min: 10 * time.Second, max: 20 * time.Second},
	} {
		n := c.Route(tc.svcs, func(s string) kube.Fronts {
			return kube.Fronts{Ingress: s == tc.ingressed, Route: s == tc.routed, RouteHTTP: s == tc.routed, Mesh: s == tc.meshed}
		})
		if strings.Join(n.Pooled, "; ") != strings.Join(tc.pooled, "; ") {
			t.Errorf("%s: pooled %q, want %q", tc.name, n.Pooled, tc.pooled)
		}
		wantRequests := map[bool]time.Duration{true: wait.PooledRequests}[len(tc.pooled) > 0]
		if w := n.Wait(adaptive); w.Requests != wantRequests || strings.Contains(n.Reason(w), "watches requests") != (wantRequests > 0) {
			t.Errorf("%s: the adaptive wait's WITHIN %v (%q), want %v", tc.name, w.Requests, n.Reason(w), wantRequests)
		}
		if n.MissesPool(adaptive) != (len(tc.pooled) > 0) || n.MissesPool(n.Wait(adaptive)) || n.MissesPool(fixed) {
			t.Errorf("%s: MissesPool of the fleet's adaptive wait %v, of the pod's %v, of a fixed wait %v; want %v, false, false",
				tc.name, n.MissesPool(adaptive), n.MissesPool(n.Wait(adaptive)), n.MissesPool(fixed), len(tc.pooled) > 0)
		}
		own := adaptive
		own.Requests = 3 * time.Second
		if w := n.Wait(own); w.Requests != own.Requests {
			t.Errorf("%s: the wait's own WITHIN became %v", tc.name, w.Requests)
		}
		if w := n.Wait(fixed); w.Requests != 0 || n.RequestsReason(w) != "" {
			t.Errorf("%s: a fixed wait with a WITHIN %v", tc.name, w.Requests)
		}
		// Without a calibration, the request signal all the same.
		if w := (*Calibration)(nil).Route(tc.svcs, func(s string) kube.Fronts {
			return kube.Fronts{Ingress: s == tc.ingressed, Route: s == tc.routed, RouteHTTP: s == tc.routed, Mesh: s == tc.meshed}
		}).Wait(adaptive); w.Requests != wantRequests || w.Min != adaptive.Min {
			t.Errorf("%s: without a calibration %+v, want WITHIN %v and the fleet's wait", tc.name, w, wantRequests)
		}
		if n.Path != tc.path || n.Service != tc.via || strings.Join(n.Unmeasured, "; ") != strings.Join(tc.unmeasured, "; ") {
			t.Errorf("%s: %q via %q, unmeasured %q; want %q via %q, %q", tc.name, n.Path, n.Service, n.Unmeasured, tc.path, tc.via, tc.unmeasured)
		}
		if w := n.Wait(fixed); w.Delay != tc.fixed || w.Kind != wait.Fixed || w.DelayArg() != map[bool]string{true: "10", false: wait.Arg(tc.fixed)}[tc.fixed == fixed.Delay] {
			t.Errorf("%s: fixed %+v, want a delay of %v", tc.name, w, tc.fixed)
		}
		if w := n.Wait(adaptive); w.Min != tc.min || w.Delay != tc.max || w.Quiet != time.Second || w.Check() != nil {
			t.Errorf("%s: adaptive %+v (%v), want MIN %v, MAX %v", tc.name, w, w.Check(), tc.min, tc.max)
		}
		// What a pod these paths reach must hold: what Wait gives it.
		if hold, why, ok := n.Requires(fixed); len(tc.svcs) > 0 && (!ok || hold != tc.fixed || why == "") || len(tc.svcs) == 0 && ok {
			t.Errorf("%s: requires %v (%q, %v), want %v", tc.name, hold, why, ok, tc.fixed)
		}
		// The one judgement of a pod's own wait (lint, status, the Reporter): below what
		// Wait would give it, by a second, and not at it.
		if len(tc.svcs) > 0 {
			short := fixed
			short.Delay = tc.fixed - time.Second
			s, below := n.Below(short, fixed)
			measuredDecides := n.Measured() && n.Delay >= tc.fixed
			if !below || s.Need != tc.fixed || s.Holds != short.Delay || s.Why == "" ||
				strings.HasPrefix(s.Remedy, "shorten the path's tail") != measuredDecides || !measuredDecides && (s.Remedy == "") != tc.noRemedy {
				t.Errorf("%s: a fixed wait of %v: %+v, %v; want below %v", tc.name, short.Delay, s, below, tc.fixed)
			}
			if _, below := n.Below(n.Wait(fixed), fixed); below {
				t.Errorf("%s: the wait the webhook gives is below its paths", tc.name)
			}
			low := adaptive
			low.Min = tc.min - time.Second
			if s, below := n.Below(low, adaptive); !below || s.Need != tc.min || s.Holds != low.Min {
				t.Errorf("%s: an adaptive MIN of %v: %+v, %v; want below %v", tc.name, low.Min, s, below, tc.min)
			}
		} else if _, below := n.Below(wait.Wait{Kind: wait.Fixed}, fixed); below {
			t.Errorf("%s: a pod no path reaches is below its paths", tc.name)
		}
		if tc.path != "" && !strings.Contains(n.Why(), "Service "+tc.via+" reaches the pod through the ") {
			t.Errorf("%s: why %q", tc.name, n.Why())
		}
	}
}
