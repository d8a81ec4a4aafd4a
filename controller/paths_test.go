package controller

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nap-k8s/nap/controller/report"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/live"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

// healthCheck is the load balancer setting the lab calibration was measured with.
const healthCheck = "lb.example.com/healthcheck-interval"

// labCalibration is a calibration as napctl calibrate --store keeps it: the cluster's
// paths short, the load balancer's (Local) long.
var labCalibration = `{"apiVersion": "calibrate.nap.dev/v1", "kind": "Calibration", "measured": "2026-11-27T05:00:00Z", "rounds": 5, "margin_seconds": 1,
 "paths": [
  {"name": "clusterip", "samples": 15, "p50_seconds": 0.7, "p99_seconds": 1.6, "max_seconds": 1.8, "delay_seconds": 3},
  {"name": "nodeport", "samples": 15, "p50_seconds": 0.8, "p99_seconds": 2.0, "max_seconds": 2.2, "delay_seconds": 4},
  {"name": "ingress", "samples": 15, "p50_seconds": 1.1, "p99_seconds": 4.0, "max_seconds": 4.4, "delay_seconds": 6},
  {"name": "lb-local", "samples": 5, "p50_seconds": 24, "p99_seconds": 27.3, "max_seconds": 27.3, "delay_seconds": 29,
   "parameters": {"` + healthCheck + `": "10"}}
 ]}`

// TestPathAwareWebhook has the real kube-apiserver call the webhook with a calibration
// kept in the cluster (its ConfigMap, read by CalibrationSource): each pod gets the
// wait of the slowest path that reaches it, and says why in nap.dev/delay-reason; a pod
// that sets its own delay, and every pod once the calibration is gone, get the fleet's.
// Then the Reporter, on a manager's caches, finds a pod whose routes outgrew its delay
// when a LoadBalancer Service is added.
func TestPathAwareWebhook(t *testing.T) {
	cfg, wopts := kubeenv.APIServerWithWebhooks(t, WebhookConfiguration("nap", "nap-system", "nap", nil, scope.OptIn))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	// The front doors, as their projects' releases define them: the Gateway API's routes
	// (standard channel), Istio's, Traefik's (the lab's version, hack/ingress-version)
	// and Contour's CRDs.
	gw := kubeenv.ModuleDir(t, "sigs.k8s.io/gateway-api@"+kubeenv.HackVersion(t, "gateway-api-version"))
	istio := kubeenv.ModuleDir(t, "istio.io/api@v1.32.0")
	traefik := kubeenv.ModuleDir(t, "github.com/traefik/traefik/v3@"+kubeenv.HackVersion(t, "ingress-version"))
	contour := kubeenv.ModuleDir(t, "github.com/projectcontour/contour@v1.33.8")
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{
		filepath.Join(gw, "config/crd/standard/gateway.networking.k8s.io_httproutes.yaml"),
		filepath.Join(gw, "config/crd/standard/gateway.networking.k8s.io_grpcroutes.yaml"),
		filepath.Join(istio, "kubernetes/customresourcedefinitions.gen.yaml"),
		filepath.Join(traefik, "docs/content/reference/dynamic-configuration/kubernetes-crd-definition-v1.yml"),
		filepath.Join(contour, "examples/contour/01-crds.yaml")}}); err != nil {
		t.Fatal(err)
	}
	// The AWS Load Balancer Controller's IngressClassParams: its CRD is on no module the
	// proxy serves, so a stand-in of its group, kind and scope with the field nap reads
	// (spec.targetType, instance or ip, as its CRD has it).
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{ingressClassParamsCRD()}}); err != nil {
		t.Fatal(err)
	}
	routes, err := live.ServedDoors(discovery.NewDiscoveryClientForConfigOrDie(cfg))
	if err != nil {
		t.Fatal(err)
	}
	paramsVersion, err := live.ServedClassParams(discovery.NewDiscoveryClientForConfigOrDie(cfg))
	if err != nil || paramsVersion != "v1beta1" {
		t.Fatalf("served IngressClassParams: %q, %v", paramsVersion, err)
	}
	params := &schema.GroupVersionKind{Group: kube.IngressClassParamsGroup, Version: paramsVersion, Kind: kube.IngressClassParamsKind}
	if got := fmt.Sprint(routes); got != "[gateway.networking.k8s.io/v1, Kind=GRPCRoute gateway.networking.k8s.io/v1, Kind=HTTPRoute "+
		"networking.istio.io/v1, Kind=VirtualService projectcontour.io/v1, Kind=HTTPProxy "+
		"traefik.io/v1alpha1, Kind=IngressRoute traefik.io/v1alpha1, Kind=IngressRouteTCP traefik.io/v1alpha1, Kind=IngressRouteUDP]" {
		t.Errorf("served front doors %v", got)
	}
	create := func(o client.Object) {
		t.Helper()
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nap-system"}})
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{InjectLabel: "enabled"}}})
	rec := record.NewFakeRecorder(10)
	src := &CalibrationSource{Client: cs, Namespace: "nap-system", Recorder: rec, Log: logr.Discard()}
	go src.Start(ctx)

	v := kube.Version{Major: 1, Minor: 34}
	i := &Injector{Options: inject.Options{Kube: &v}, Waits: waits5s, Calibration: src.Load, Services: ServicesFrom(c), Fronts: FrontendsFrom(c, routes, params)}
	serveWebhooks(t, wopts, map[string]http.Handler{WebhookPath: i.Handler()})

	svc := func(name string, typ corev1.ServiceType, policy corev1.ServiceExternalTrafficPolicy, ann map[string]string) {
		t.Helper()
		create(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Annotations: ann},
			Spec: corev1.ServiceSpec{Type: typ, ExternalTrafficPolicy: policy, Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Port: 80}}}})
	}
	svc("cart", corev1.ServiceTypeClusterIP, "", nil)
	svc("site", corev1.ServiceTypeClusterIP, "", nil)
	svc("edge", corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, map[string]string{healthCheck: "10"})
	svc("checkout", corev1.ServiceTypeClusterIP, "", nil)
	route := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"name": "checkout", "namespace": "shop"},
		"spec": map[string]any{"parentRefs": []any{map[string]any{"name": "edge-gateway"}},
			"rules": []any{map[string]any{"backendRefs": []any{map[string]any{"name": "checkout", "port": int64(80)}}}}}}}
	create(route)
	// Front doors no Service's type shows: a service mesh's route (nap cannot measure
	// it), an ingress controller's own routes (the ingress path).
	door := func(apiVersion, kind, name string, spec map[string]any) {
		t.Helper()
		create(&unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": "shop"}, "spec": spec}})
	}
	svc("reviews", corev1.ServiceTypeClusterIP, "", nil)
	door("networking.istio.io/v1", "VirtualService", "reviews", map[string]any{"hosts": []any{"reviews.example"},
		"http": []any{map[string]any{"route": []any{map[string]any{"destination": map[string]any{"host": "reviews.shop.svc.cluster.local"}}}}}})
	svc("web-ir", corev1.ServiceTypeClusterIP, "", nil)
	door("traefik.io/v1alpha1", "IngressRoute", "web-ir", map[string]any{"routes": []any{map[string]any{"match": "Host(`web.example`)", "kind": "Rule",
		"services": []any{map[string]any{"name": "web-ir", "port": int64(80)}}}}})
	svc("web-proxy", corev1.ServiceTypeClusterIP, "", nil)
	door("projectcontour.io/v1", "HTTPProxy", "web-proxy", map[string]any{"virtualhost": map[string]any{"fqdn": "proxy.example"},
		"routes": []any{map[string]any{"services": []any{map[string]any{"name": "web-proxy", "port": int64(80)}}}}})
	svc("other-lb", corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal, map[string]string{healthCheck: "5"})
	// An AWS ALB in IP mode: an Ingress of class alb, the target type on the Ingress (on
	// the Service: "late" below).
	svc("alb", corev1.ServiceTypeClusterIP, "", nil)
	create(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "alb", Namespace: "shop", Annotations: map[string]string{kube.ALBTargetType: "ip"}},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr.To("alb"),
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "alb", Port: networkingv1.ServiceBackendPort{Number: 80}}}}})
	// The target type set on the IngressClassParams of the Ingress's class, which no
	// annotation overrides: ip for one class, instance for another.
	for class, tt := range map[string]string{"alb-ip": "ip", "alb-instance": "instance"} {
		create(&unstructured.Unstructured{Object: map[string]any{"apiVersion": kube.IngressClassParamsGroup + "/v1beta1", "kind": kube.IngressClassParamsKind,
			"metadata": map[string]any{"name": class}, "spec": map[string]any{"targetType": tt}}})
		create(&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: networkingv1.IngressClassSpec{Controller: "ingress.k8s.aws/alb",
			Parameters: &networkingv1.IngressClassParametersReference{APIGroup: ptr.To(kube.IngressClassParamsGroup), Kind: kube.IngressClassParamsKind, Name: class}}})
	}
	for name, c := range map[string]struct{ class, annotation string }{"alb-class": {"alb-ip", "instance"}, "alb-class-inst": {"alb-instance", "ip"}} {
		svc(name, corev1.ServiceTypeClusterIP, "", nil)
		create(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Annotations: map[string]string{kube.ALBTargetType: c.annotation}},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(c.class),
				DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: 80}}}}})
	}
	pathType := networkingv1.PathTypePrefix
	create(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "shop"}, Spec: networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType, Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "site", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}})

	// admit creates a pod of app and returns its preStop and its delay-reason.
	n := 0
	admit := func(app string, annotations map[string]string) (*corev1.Pod, string, string) {
		t.Helper()
		n++
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, n), Namespace: "shop", Labels: map[string]string{"app": app}, Annotations: annotations},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
		create(p)
		got := "none"
		if lc := p.Spec.Containers[0].Lifecycle; lc != nil && lc.PreStop != nil {
			switch ps := lc.PreStop; {
			case ps.Sleep != nil:
				got = fmt.Sprintf("sleep %ds", ps.Sleep.Seconds)
			case ps.Exec != nil:
				got = "exec " + strings.Join(ps.Exec.Command, " ")
			}
		}
		return p, got, p.Annotations[wait.ReasonAnnotation]
	}

	// No calibration yet: the fleet's wait, and no reason.
	if _, got, why := admit("edge", nil); got != "sleep 5s" || why != "" {
		t.Fatalf("without a calibration: %q (%q), want the fleet's sleep 5s and no reason", got, why)
	}
	doc := CalibrationConfigMap("nap-system", []byte(labCalibration))
	create(doc)
	for deadline := time.Now().Add(10 * time.Second); src.Load() == nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the calibration was not read")
		}
	}
	if g := gauge(t, "nap_calibration_delay_seconds", map[string]string{"path": "lb-local"}); g != 29 {
		t.Errorf("nap_calibration_delay_seconds{path=lb-local} = %v, want 29", g)
	}
	for _, tc := range []struct {
		name, app   string
		annotations map[string]string
		want, why   string
		not         string // what the reason must not name
	}{
		{name: "in the cluster only: the cluster's tail", app: "cart", want: "sleep 3s",
			why: "holds 3s for clusterip via Service cart: its tail measured at 1.8 s (p99 1.6 s, 15 samples, calibrated 2026-11-27)"},
		{name: "behind the ingress", app: "site", want: "sleep 6s", why: "holds 6s for ingress via Service site"},
		{name: "behind a load balancer (Local) as calibrated", app: "edge", want: "sleep 29s", why: "holds 29s for lb-local via Service edge: its tail measured at 27.3 s"},
		{name: "a load balancer set otherwise: at least the fleet's", app: "other-lb", want: "sleep 5s",
			why: "holds 5s for nodeport via Service other-lb: its tail measured at 2.2 s (p99 2.0 s, 15 samples, calibrated 2026-11-27); not calibrated, so at least the fleet's: lb-local via Service other-lb (its annotations are not those calibrated)"},
		{name: "behind a Gateway API route: not calibrated, so at least the fleet's", app: "checkout", want: "sleep 5s",
			why: "holds 5s for clusterip via Service checkout: its tail measured at 1.8 s (p99 1.6 s, 15 samples, calibrated 2026-11-27); not calibrated, so at least the fleet's: gateway-route via Service checkout (not calibrated)"},
		{name: "no Service", app: "batch", want: "sleep 5s", why: "holds 5s, the fleet's: no Service path reaches the pod"},
		{name: "behind an Istio VirtualService: not calibrated, so at least the fleet's", app: "reviews", want: "sleep 5s",
			why: "holds 5s for clusterip via Service reviews: its tail measured at 1.8 s (p99 1.6 s, 15 samples, calibrated 2026-11-27); not calibrated, so at least the fleet's: mesh-route via Service reviews (not calibrated)"},
		{name: "behind Traefik's IngressRoute: the ingress's", app: "web-ir", want: "sleep 6s", why: "holds 6s for ingress via Service web-ir"},
		{name: "behind Contour's HTTPProxy: the ingress's", app: "web-proxy", want: "sleep 6s", why: "holds 6s for ingress via Service web-proxy"},
		{name: "the adaptive wait: MIN from the path", app: "edge", annotations: map[string]string{wait.KindAnnotation: "adaptive"},
			want: "exec /nap/nap 29s --quiet 2s --max 60s", why: "holds at least 29s for lb-local via Service edge"},
		{name: "its own delay", app: "edge", annotations: map[string]string{wait.DelayAnnotation: "2.5"}, want: "exec /nap/nap 2.5"},
		{name: "behind an application load balancer with pod targets: the adaptive wait watches requests", app: "alb", annotations: map[string]string{wait.KindAnnotation: "adaptive"},
			want: "exec /nap/nap 6s --quiet 2s --max 60s",
			why:  "holds at least 6s for ingress via Service alb: its tail measured at 4.4 s (p99 4.0 s, 15 samples, calibrated 2026-11-27); not calibrated, so at least the fleet's: lb-pods via Service alb (not calibrated); watches requests (--requests 1s): ingress via Service alb, lb-pods via Service alb, whose clients send over connections they keep"},
		{name: "an ALB in IP mode by its IngressClassParams, over the Ingress's annotation", app: "alb-class", want: "sleep 6s",
			why: "holds 6s for ingress via Service alb-class: its tail measured at 4.4 s (p99 4.0 s, 15 samples, calibrated 2026-11-27); not calibrated, so at least the fleet's: lb-pods via Service alb-class (not calibrated)"},
		{name: "an ALB in instance mode by its IngressClassParams, over the Ingress's annotation", app: "alb-class-inst", want: "sleep 6s",
			why: "holds 6s for ingress via Service alb-class-inst", not: "lb-pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, got, why := admit(tc.app, tc.annotations)
			if tc.not != "" && strings.Contains(why, tc.not) {
				t.Errorf("reason %q names %s", why, tc.not)
			}
			if !strings.HasPrefix(got, tc.want) || !strings.HasPrefix(why, tc.why) || (tc.why == "") != (why == "") {
				t.Errorf("preStop %q, reason %q; want %q, %q", got, why, tc.want, tc.why)
			}
			if strings.Contains(tc.why, "watches requests") != strings.Contains(got, " --requests 1s") {
				t.Errorf("preStop %q: --requests where the reason says so", got)
			}
			if g := p.Spec.TerminationGracePeriodSeconds; tc.want == "sleep 29s" && (g == nil || *g < 29) {
				t.Errorf("grace period %v does not cover the delay", g)
			}
		})
	}

	// The Reporter: a pod admitted with the cluster's 3 s, then a LoadBalancer Service
	// (Local, as calibrated) that selects it.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: CacheOptions(kube.ConfigMapName), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	go mgr.Start(ctx)
	events := record.NewFakeRecorder(100)
	r := &report.Reporter{Client: mgr.GetClient(), Informers: mgr.GetCache(), Recorder: events, Scope: scope.OptIn, Log: logr.Discard(),
		Kube: v, Waits: waits5s, Calibration: src.Load, Fronts: FrontendsFrom(mgr.GetCache(), routes, nil), FrontKinds: FrontKinds(routes, nil), Batch: 100 * time.Millisecond}
	src.OnChange = r.Recalibrated
	// Every namespace there at the start judged once: Synced counts syncs begun, and
	// the shop's may still be under way when the first has begun.
	firstReport := make(chan struct{})
	r.AfterSynced = func() { close(firstReport) }
	go r.Start(ctx)
	findings := func() []string {
		var out []string
		for _, f := range r.Findings() {
			if f.Workload.Namespace == "shop" {
				out = append(out, fmt.Sprintf("%s %s %s", f.Workload.Name, f.Reason, strings.Join(f.Pods, ",")))
			}
		}
		return out
	}
	select {
	case <-firstReport:
	case <-time.After(20 * time.Second):
		t.Fatal("the Reporter did not sync every namespace in 20 s")
	}
	// The pods above each hold what their paths need, or the fleet's where unmeasured,
	// but two behind edge: the one admitted before the calibration, and the one with its
	// own 2.5 s.
	if got := findings(); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"edge-1 delay-below-path edge-1", "edge-12 delay-below-path edge-12"}) {
		t.Fatalf("findings before the Service: %q", got)
	}
	cart, got, _ := admit("cart", nil)
	if got != "sleep 3s" {
		t.Fatalf("cart: %q", got)
	}
	added := time.Now()
	create(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "cart-lb", Namespace: "shop", Annotations: map[string]string{healthCheck: "10"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Selector: map[string]string{"app": "cart"}, Ports: []corev1.ServicePort{{Port: 80}}}})
	want := cart.Name + " delay-below-path"
	for !slices.ContainsFunc(findings(), func(f string) bool { return strings.HasPrefix(f, want) }) {
		if time.Since(added) > 30*time.Second {
			t.Fatalf("no %q 30 s after the LoadBalancer Service: %q", want, findings())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("reported %v after the LoadBalancer Service was added", time.Since(added).Round(10*time.Millisecond))
	for _, f := range r.Findings() {
		if f.Reason == report.DelayBelowPath && slices.Contains(f.Pods, cart.Name) &&
			!strings.Contains(f.Message, "'s preStop holds it 3s, but Service cart-lb reaches the pod through the load balancer (Local), whose tail napctl calibrate measured at 27.3 s") {
			t.Errorf("message %q", f.Message)
		}
	}
	if ev := drain(events); !slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, "Warning NapDelayBelowPath") }) {
		t.Errorf("no NapDelayBelowPath event: %q", ev)
	}
	// A new pod of cart, as after a rollout: the longer wait.
	if _, got, _ := admit("cart", nil); got != "sleep 29s" {
		t.Errorf("cart after the LoadBalancer Service: %q, want sleep 29s", got)
	}

	// A Gateway API route added in front of a pod that holds the cluster's 3 s: a path no
	// calibration measured, which needs at least the fleet's 5 s.
	svc("quiet", corev1.ServiceTypeClusterIP, "", nil)
	quiet, got, _ := admit("quiet", nil)
	if got != "sleep 3s" {
		t.Fatalf("quiet: %q", got)
	}
	create(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GRPCRoute",
		"metadata": map[string]any{"name": "quiet", "namespace": "shop"},
		"spec":     map[string]any{"rules": []any{map[string]any{"backendRefs": []any{map[string]any{"name": "quiet", "port": int64(80)}}}}}}})
	routed := time.Now()
	for !slices.ContainsFunc(r.Findings(), func(f report.Finding) bool {
		return f.Reason == report.DelayBelowPath && slices.Contains(f.Pods, quiet.Name) &&
			strings.Contains(f.Message, "'s preStop holds it 3s, but gateway-route via Service quiet (not calibrated) reaches the pod, and no calibration measured it: at least the fleet's 5s")
	}) {
		if time.Since(routed) > 30*time.Second {
			t.Fatalf("no delay-below-path for %s 30 s after a GRPCRoute named its Service: %q", quiet.Name, r.Findings())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The calibration gone: every pod the fleet's wait, and nothing below a path.
	if err := c.Delete(ctx, doc); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); src.Load() != nil || len(findings()) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("calibration deleted: still %v, findings %q", src.Load() != nil, findings())
		}
	}
	if _, got, why := admit("edge", nil); got != "sleep 5s" || why != "" {
		t.Errorf("after the calibration was deleted: %q (%q), want the fleet's sleep 5s and no reason", got, why)
	}
	// Clients that pool their connections (an ingress controller, an application load
	// balancer with the pods as targets): the adaptive wait watches requests, with or
	// without a calibration; a network load balancer in IP mode passes each client's
	// connection through.
	svc("nlb", corev1.ServiceTypeLoadBalancer, "", map[string]string{"service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip"})
	svc("neg", corev1.ServiceTypeClusterIP, "", map[string]string{"cloud.google.com/neg": `{"ingress": true}`})
	create(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "neg", Namespace: "shop"}, Spec: networkingv1.IngressSpec{
		DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "neg", Port: networkingv1.ServiceBackendPort{Number: 80}}}}})
	adaptive := map[string]string{wait.KindAnnotation: "adaptive"}
	for _, tc := range []struct {
		app         string
		annotations map[string]string
		requests    bool
		why         string
	}{
		{app: "alb", annotations: adaptive, requests: true, why: "watches requests (--requests 1s): ingress via Service alb, lb-pods via Service alb, whose clients send over connections they keep"},
		{app: "neg", annotations: adaptive, requests: true, why: "watches requests (--requests 1s): ingress via Service neg, lb-pods via Service neg, whose clients send over connections they keep"},
		{app: "site", annotations: adaptive, requests: true, why: "watches requests (--requests 1s): ingress via Service site, whose clients send over connections they keep"},
		{app: "nlb", annotations: adaptive},
		{app: "alb"}, // a fixed wait holds whatever the traffic
		{app: "edge", annotations: adaptive},
	} {
		if _, got, why := admit(tc.app, tc.annotations); strings.Contains(got, "--requests 1s") != tc.requests || why != tc.why {
			t.Errorf("%s (%v): preStop %q, reason %q; want --requests %v, reason %q", tc.app, tc.annotations, got, why, tc.requests, tc.why)
		}
	}

	// An adaptive pod admitted before an Ingress named its Service, which an AWS ALB in
	// IP mode then serves: the Reporter finds that its wait misses the pool, with no
	// calibration, and a rollout's pod watches requests.
	svc("late", corev1.ServiceTypeClusterIP, "", map[string]string{"alb.ingress.kubernetes.io/target-type": "ip"})
	late, got, _ := admit("late", adaptive)
	if strings.Contains(got, "--requests") {
		t.Fatalf("late, before its Ingress: %q", got)
	}
	drain(events)
	create(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "shop"}, Spec: networkingv1.IngressSpec{
		DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "late", Port: networkingv1.ServiceBackendPort{Number: 80}}}}})
	fronted := time.Now()
	for !slices.Equal(findings(), []string{late.Name + " adaptive-misses-pool " + late.Name}) {
		if time.Since(fronted) > 30*time.Second {
			t.Fatalf("no adaptive-misses-pool for %s alone 30 s after an Ingress named its Service: %q", late.Name, findings())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("reported %v after the Ingress was added", time.Since(fronted).Round(10*time.Millisecond))
	for _, f := range r.Findings() {
		if f.Reason == report.AdaptiveMissesPool && !strings.Contains(f.Message, "'s preStop: the adaptive wait watches new connections alone, but ingress via Service late and lb-pods via Service late reach the pod through clients that send over connections they keep") {
			t.Errorf("message %q", f.Message)
		}
	}
	if ev := drain(events); !slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, "Warning NapAdaptiveMissesPool") }) {
		t.Errorf("no NapAdaptiveMissesPool event: %q", ev)
	}
	if _, got, _ := admit("late", adaptive); !strings.Contains(got, "--requests 1s") {
		t.Errorf("late after its Ingress: %q, want --requests 1s", got)
	}

	// One that is not a calibration: none, and a Warning event on it.
	bad := CalibrationConfigMap("nap-system", []byte(`{"apiVersion": "calibrate.nap.dev/v2", "kind": "Calibration"}`))
	create(bad)
	for deadline := time.Now().Add(10 * time.Second); len(rec.Events) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no event on a ConfigMap that is not a calibration")
		}
	}
	if e := <-rec.Events; !strings.HasPrefix(e, `Warning NapCalibrationInvalid ConfigMap nap-system/nap-calibration key calibration.json: apiVersion "calibrate.nap.dev/v2"`) {
		t.Errorf("event %q", e)
	}
	if src.Load() != nil {
		t.Error("a ConfigMap that is not a calibration was taken for one")
	}
}

// ingressClassParamsCRD stands in for the AWS Load Balancer Controller's
// IngressClassParams CRD: its group, version, names and scope, and spec.targetType.
func ingressClassParamsCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: kube.IngressClassParamsResource + "." + kube.IngressClassParamsGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: kube.IngressClassParamsGroup, Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: kube.IngressClassParamsResource, Singular: "ingressclassparams", Kind: kube.IngressClassParamsKind, ListKind: kube.IngressClassParamsKind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1beta1", Served: true, Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
				OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true), Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"targetType": {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"instance"`)}, {Raw: []byte(`"ip"`)}}}}}}}}}}}}
}
