package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/calibrate"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/probe"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/test/forensic"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// A variant of the demo service: how its pods stop.
type variant struct {
	name   string
	mode   string // the app's shutdown: plain (Shutdown at SIGTERM) or drain (the drain library)
	inject *inject.Options
	env    []corev1.EnvVar
	// control: no delay and no drain, how pods stop without nap: the negative control
	// of the scenarios it shares a path and a disruption with.
	control bool
	// webhook: the namespace opts in (nap.dev/inject: enabled) and nap's controller,
	// installed, publishes the ConfigMap and injects the hook; annotations go on the
	// pod template.
	webhook     bool
	annotations map[string]string
	// policy, with webhook: the namespace is not opted in but labelled with this scope
	// (nap.dev/policy): under scope.Default the webhook gives the hook to the pods
	// because a Service selects them.
	policy scope.Scope
	// install are napctl install's arguments for the webhook variants, beyond its image
	// and --delay 5s (nil: --admission webhook).
	install []string
	// nodeSelector pins the pods (nap's image volume: node 2's containerd 2.x mounts
	// them, node 1's 1.6 does not).
	nodeSelector map[string]string
	// calibrated: nap's binary at the delay napctl calibrate recommends for the lab's
	// load balancer paths, measured once per experiment (the variant's wait is set
	// then).
	calibrated bool
	// rollAfterRoutes: once the path's objects exist (a load balancer's Service), the
	// Deployment is rolled, so that the webhook admits the pods measured with every
	// path that reaches them (nap by path, paths_test.go).
	rollAfterRoutes bool
	// hold: the preStop asks the endpoint hold (hold_test.go), the alternative to the
	// adaptive wait, to hold until the pod is ready in no EndpointSlice plus this
	// propagation; 0: no hold.
	hold time.Duration
	// outOfRoutes: once a kubelet's eviction of a pod shows (its Evicted Event), the
	// test takes the pod out of its Service as a controller would (kubelet_test.go,
	// takeOutOfRoutes): the two mechanisms #48 weighs, measured before nap's
	// controller does either.
	outOfRoutes routesOut
}

// expectation is what a scenario must show: the claim of its row, written in the row
// (a variant is how the pods stop; what that must show depends on the path and the
// disruption).
type expectation int

const (
	// fails: requests fail: the negative control, or a leak the row records (a delay
	// where the kubelet keeps the endpoint until the app has exited).
	fails expectation = iota
	// newClean: no request over a new connection fails. A keep-alive connection to an
	// old pod outlives its removal from the Service (routing applies to new
	// connections), and a plain app closes it when it shuts down after the delay: a
	// request racing that close fails unless the client resends it. Counted, not hidden.
	// Where the scenario has a bound, the bound is the claim over new connections.
	newClean
	// clean: no request fails at all (the app tells keep-alive clients to leave
	// during the delay: Connection: close, HTTP/2 GOAWAY). With a bound, as newClean's
	// over new connections, and none over kept ones.
	clean
	// bounded: over new connections, the scenario's bound (lossBound) holds; what kept
	// connections lose is recorded.
	bounded
)

func (e expectation) String() string {
	return [...]string{"fails", "none lost over new connections", "none lost", "a bound"}[e]
}

var (
	noDelay   = variant{name: "no preStop", mode: "plain", control: true}
	napBinary = variant{name: "nap preStop (binary)", mode: "plain", inject: &inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("5s")}}
	napNative = variant{name: "native sleep preStop", mode: "plain", inject: &inject.Options{Mode: inject.ModeNative, Wait: fixedWait("5s")}}
	drainOnly = variant{name: "drain library alone", mode: "drain"}
	napDrain  = variant{name: "nap preStop + drain", mode: "drain", inject: &inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("5s")},
		env: []corev1.EnvVar{{Name: "NAP_DRAIN_DELAY", Value: "1s"}}}
	// napDrainResolve: the same with a delay past gRPC's re-resolution interval
	// (grpcResolveEvery): a gRPC client balancing over a headless Service's addresses
	// learns the new pods at the first GOAWAY however recently it resolved.
	napDrainResolve = variant{name: "nap preStop 32s + drain", mode: "drain", inject: &inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("32s")},
		env: []corev1.EnvVar{{Name: "NAP_DRAIN_DELAY", Value: "1s"}}}
	// The controller installed; the webhook injects a 4.5 s delay (not whole seconds:
	// the nap binary, mounted from the ConfigMap the controller published).
	viaWebhook = variant{name: "nap preStop by the webhook", mode: "plain", webhook: true,
		annotations: map[string]string{wait.DelayAnnotation: "4.5"}}
	// nap from its image volume (napctl inject --delivery image), on node 2.
	napImage = variant{name: "nap preStop (image volume, node 2)", mode: "plain",
		inject:       &inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("5s"), Delivery: inject.DeliveryImage, Image: napImageRef},
		nodeSelector: map[string]string{"kubernetes.io/hostname": node2}}
	// nap's adaptive wait: until no new connection has reached the pod for 2 s (beyond
	// its readiness probe's, which inject counts), at most 60 s.
	napAdaptive = variant{name: "nap adaptive wait", mode: "plain", inject: &inject.Options{Mode: inject.ModeBinary, Wait: wait.DefaultAdaptive()}}
	// napRequests: the adaptive wait with the request signal (--requests 1s): a request
	// on a connection the pod accepted before holds it too (pooled_test.go).
	napRequests = variant{name: "nap adaptive wait --requests 1s", mode: "plain", inject: &inject.Options{Mode: inject.ModeBinary, Wait: adaptiveRequests()}}
	// napRequestsMin: the same with MIN at the path's calibrated delay, as the webhook
	// gives it with a stored calibration: sparse traffic leaves quiet windows the
	// request signal cannot see across, MIN covers them (docs/adaptive.md).
	napRequestsMin = variant{name: "nap adaptive wait 13s --requests 1s", mode: "plain", inject: &inject.Options{Mode: inject.ModeBinary, Wait: func() wait.Wait {
		w := adaptiveRequests()
		w.Min, w.Delay = lbPodsMin, max(w.Delay, lbPodsMin)
		return w
	}()}}
	// The alternative to the adaptive wait (hold_test.go): a server that watches the
	// EndpointSlices holds the preStop until the pod is ready in none, plus 2 s, the
	// propagation calibrate measures on the lab's in-cluster routes (at most 2.1 s).
	holdEndpoints = variant{name: "endpoint hold + 2s", mode: "plain", hold: 2 * time.Second}
	// nap at the delay calibrate recommends (TestDowntimeExperiment measures it).
	napCalibrated = variant{name: "nap preStop at the calibrated delay", mode: "plain", calibrated: true}
	// The same with the drain library: streams behind a load balancer.
	napCalibratedDrain = variant{name: "nap preStop at the calibrated delay + drain", mode: "drain", calibrated: true,
		env: []corev1.EnvVar{{Name: "NAP_DRAIN_DELAY", Value: "1s"}}}
	// The same, installed with --admission policy: the API server injects (CEL).
	viaPolicy = variant{name: "nap preStop by the policy", mode: "plain", webhook: true, install: []string{"--admission", "policy"},
		annotations: map[string]string{wait.DelayAnnotation: "4.5"}}
	// The controller installed; the webhook gives the pods the delay calibrate
	// recommends for the lab's load balancers (nap.dev/delay), its Router takes them out
	// of their routes when a kubelet stops them: the kubelet's terminations behind a
	// load balancer.
	viaWebhookCalibrated = variant{name: "nap preStop by the webhook at the calibrated delay", mode: "plain", webhook: true, calibrated: true}
	// nap's 5 s, and the pod taken out of its Service once a kubelet evicts it: by a
	// deletion (grace period its own), or by removing the label its Service selects.
	napDeleted = variant{name: "nap preStop + deleted at the eviction", mode: "plain",
		inject: &inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("5s")}, outOfRoutes: byDeletion}
	napUnlabelled = variant{name: "nap preStop + unlabelled at the eviction", mode: "plain",
		inject: &inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("5s")}, outOfRoutes: byLabel}
	// The third: a readiness gate the test keeps open, closed at the eviction. It does
	// not take the pod out: the kubelet, stopping the pod, does not recompute its Ready
	// condition, and the EndpointSlice follows Ready (2026-11-29, docs/downtime.md); the
	// day it does, this fails and the gate can be reconsidered.
	napGated = variant{name: "nap preStop + readiness gate closed at the eviction", mode: "plain",
		inject: &inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("5s")}, outOfRoutes: byGate}
)

// failedNew is how many requests over new connections failed.
func (d downtime) failedNew() int {
	if r := d.summary.Streams; r != nil {
		return r.ConnectFailed + r.Lost // streams: what new connections lose
	}
	if c := d.summary.Modes[probe.New]; c != nil {
		return c.Failed
	}
	return 0
}

// check fails the test when d does not show what its row claims; a loss the claim does
// not allow is reported with what the records say of it (downtime.explained). There is
// no second measurement: the delay a row holds is the lab's calibrated one (5 s covers
// the in-cluster paths' tails, calibrate measures the load balancers'), so a route that
// outruns it is a calibration miss, and fails as a user's pods would have lost then.
func (d downtime) check(t *testing.T) {
	t.Helper()
	if p := d.problem(); p != "" {
		if why, ok := d.explained(); ok {
			p += "; the records: " + why
		}
		t.Error(p)
	}
}

// problem says how d does not show what its row claims ("": it does).
func (d downtime) problem() string {
	s := d.summary
	failedNew := d.failedNew()
	failed := s.Total.Failed
	if s.Streams != nil {
		failed = s.Streams.Failed()
	}
	if b := d.scenario.bound; b != nil && d.scenario.expect != fails {
		return b.problem(d)
	}
	switch d.scenario.expect {
	case bounded:
		return fmt.Sprintf("%s: a bound with no bound", d.scenario)
	case fails:
		if failed == 0 {
			return fmt.Sprintf("%s: no request failed: the negative control no longer shows the problem", d.scenario)
		}
	case newClean:
		if failedNew > 0 {
			return fmt.Sprintf("%s: %d requests over new connections failed, want none: %+v", d.scenario, failedNew, s.Outages)
		}
	case clean:
		if failed > 0 {
			return fmt.Sprintf("%s: %d requests (or broken streams) failed, want none: %+v %+v", d.scenario, failed, s.Outages, s.Streams)
		}
	}
	return ""
}

// prove measures sc once, logs its row (and its bound) and checks its claim: every
// measurement counts.
func prove(t *testing.T, cs *kubernetes.Clientset, sc scenario, rate float64) downtime {
	t.Helper()
	m := measure(t, cs, sc, rate)
	t.Log(m.row())
	if sc.bound != nil {
		t.Logf("%s: a bound: %s; measured %.1f per 10,000", sc, sc.bound, newRate(m.summary))
	}
	m.check(t)
	return m
}

// labPath is a traffic path (package traffic, the list calibrate measures) and where
// the lab probes it from.
type labPath struct {
	path  traffic.Path
	node2 bool // from node 2's network namespace, through its own kube-proxy
	// checks are the lab load balancer's health check timings (hack/lb's annotations),
	// when not its NLB-shaped defaults.
	checks map[string]string
}

// lbService is the name of the Service of type LoadBalancer that package calibrate opens
// for the path in front of the demo service.
func (p labPath) lbService() string {
	return calibrate.LoadBalancerService(p.path, calibrate.Target{Service: "app"})
}

// The lab load balancer's annotations (hack/lb).
const (
	lbInterval  = "lb.lab.nap.dev/health-check-interval"
	lbUnhealthy = "lb.lab.nap.dev/unhealthy-threshold"
	lbLag       = "lb.lab.nap.dev/deregistration-lag"
	// albClass: the IngressClass of the lab's application load balancer, the AWS Load
	// Balancer Controller's; kube.ALBTargetType: ip makes it send to the pods.
	albClass = "alb"
)

// The lab's paths.
var (
	// clusterIPNode1: the Service's ClusterIP, from node 1 (this host), through node 1's
	// kube-proxy.
	clusterIPNode1 = labPath{path: traffic.ClusterIP}
	// clusterIPNode2: the same ClusterIP from node 2, through node 2's kube-proxy, which
	// learns of every change on its own schedule.
	clusterIPNode2 = labPath{path: traffic.ClusterIP, node2: true}
	// viaIngress: Traefik in the cluster, which routes to pod IPs from the EndpointSlices
	// it watches; probed at its Service from node 1.
	viaIngress = labPath{path: traffic.Ingress}
	// viaGateway: the same Traefik through the Gateway API: an HTTPRoute attached to the
	// lab's Gateway (hack/ingress.yaml), on the same Service.
	viaGateway = labPath{path: traffic.GatewayRoute}
	// viaDNS: a headless Service beside the Service, its name resolved at the lab's
	// cluster DNS (clusterDNS) at each new connection, from node 1: the pods' own
	// addresses. Kept connections stay on the pod they went to (a pinning client).
	viaDNS = labPath{path: traffic.HeadlessDNS}
	// lbLocal and lbCluster: the lab's load balancer (HAProxy in its own network
	// namespace, hack/lb) in front of a Service with externalTrafficPolicy Local or
	// Cluster, with an AWS NLB's health check defaults (3 checks 10 s apart).
	lbLocal   = labPath{path: traffic.LoadBalancerLocal}
	lbCluster = labPath{path: traffic.LoadBalancerCluster}
	// lbLocalQuick: the same with Local and checks 1 s apart, quick enough for every
	// make test. One interval, not more: a node is out 2 to 3 checks after its last pod
	// went unready, so one calibration sample can fall an interval short of the worst
	// case, and calibrate's 2 s margin covers a 1 s interval.
	lbLocalQuick = labPath{path: traffic.LoadBalancerLocal, checks: map[string]string{lbInterval: "1s", lbUnhealthy: "3"}}
	// lbLocalSlow: checks 3 s apart, a node out 6 to 9 s after its last pod went: slower
	// than the in-cluster paths' calibrated 5 s, quick enough for every make test.
	lbLocalSlow = labPath{path: traffic.LoadBalancerLocal, checks: map[string]string{lbInterval: "3s", lbUnhealthy: "3"}}
	// lbPods: the lab's application load balancer (hack/lb/pods.go), for an Ingress of
	// class alb whose Service says alb.ingress.kubernetes.io/target-type: ip, as an AWS
	// ALB in IP mode: HTTP, the pods as targets over one pool of kept server
	// connections, an ALB's health checks (every 30 s, 2 failures), and a pod
	// deregistered 10 s after its endpoint stopped being ready (the cloud controller's
	// lag: 10 s to 2 min reported; short, for make test).
	lbPods = labPath{path: traffic.LoadBalancerPods, checks: map[string]string{kube.ALBTargetType: "ip", lbLag: "10s"}}
)

// podTargets: the path is the lab's load balancer with pod targets.
func (p labPath) podTargets() bool { return p.path.Name == traffic.LoadBalancerPods.Name }

// viaTraefik: the path is the lab's Traefik, through an Ingress or an HTTPRoute, with
// its API and its access log to read.
func (p labPath) viaTraefik() bool {
	return p.path.Name == traffic.Ingress.Name || p.path.Name == traffic.GatewayRoute.Name
}

// watchLetGo starts recording when the proxy of p that sends to the pods of ns itself
// lets each one go (the load balancer lbName with pod targets, the ingress); nil on a
// path without one (kube-proxy's: forensic.RouteTimes).
func (p labPath) watchLetGo(t *testing.T, cs *kubernetes.Clientset, ns, lbName string) (stop func() map[string]time.Time) {
	switch {
	case p.podTargets():
		return watchDeregistrations(ns, lbName)
	case p.viaTraefik():
		return watchIngress(t, cs, ns)
	}
	return nil
}

func (p labPath) String() string {
	switch {
	case p.podTargets():
		return fmt.Sprintf("L7 load balancer to pods, deregistered %s late", p.checks[lbLag])
	case p.path.Name == traffic.Ingress.Name:
		return "ingress (Traefik)"
	case p.path.Name == traffic.GatewayRoute.Name:
		return "Gateway API route (Traefik)"
	case p.path.Name == traffic.HeadlessDNS.Name:
		return "headless Service (CoreDNS)"
	case p.node2:
		return p.path.Title + " from node 2"
	case p.path.NodeChecked && p.checks != nil:
		return fmt.Sprintf("%s, checks every %s", p.path.Title, p.checks[lbInterval])
	case p.path.NodeChecked:
		return p.path.Title + ", NLB-like checks"
	}
	return p.path.Title + " from node 1"
}

// The disruptions: how the demo service's pods go away.
type disruption int

const (
	// rollingRestart: `kubectl rollout restart` of 3 replicas (maxSurge 1, maxUnavailable 0).
	rollingRestart disruption = iota
	// scaleDown: 4 replicas scaled to 1 (three pods terminate at once), then back to 4.
	scaleDown
	// nodeDrain: `kubectl drain` of node 2 (its pods of the demo service, 2 of 4) under a
	// PodDisruptionBudget of maxUnavailable 1; node 2 is uncordoned after.
	nodeDrain
	// The terminations the kubelet starts, with no deletion (kubelet_test.go):
	// deadlineExceeded: one pod on each node (of 4) gets an activeDeadlineSeconds that
	// ends 2 s later; its kubelet stops it, the ReplicaSet replaces it.
	deadlineExceeded
	// nodePressure: a pod on node 2 fills node 2's file system past its kubelet's soft
	// eviction threshold (hack/cluster.sh node2fs); the kubelet evicts the demo
	// service's pods there (2 of 4: their priority is below every other pod's), then the
	// filler, and the pressure ends.
	nodePressure
	// nodeShutdown: node 2's logind announces a shutdown (hack/logind); its kubelet's
	// graceful node shutdown stops every pod there (the demo service's: 2 of 4), then
	// the shutdown is cancelled and node 2 serves again. The machine is never touched.
	nodeShutdown
)

func (d disruption) String() string {
	return [...]string{"rolling restart", "scale-down", "node drain", "deadline exceeded", "node-pressure eviction", "graceful node shutdown"}[d]
}

// byKubelet: the kubelet starts d's terminations; no one deletes a pod.
func (d disruption) byKubelet() bool {
	return d == deadlineExceeded || d == nodePressure || d == nodeShutdown
}

// onNode2: d stops the demo service's pods on node 2 only.
func (d disruption) onNode2() bool { return d == nodeDrain || d == nodePressure || d == nodeShutdown }

// replicas is how many pods the demo service runs for d.
func (d disruption) replicas() int32 {
	if d == rollingRestart {
		return 3
	}
	return 4
}

// scenario is one measurement: a variant on a path under a disruption, rounds times.
type scenario struct {
	path       labPath
	disruption disruption
	variant    variant
	// expect is the row's claim: what the variant must show on this path in this
	// disruption.
	expect expectation
	rounds int
	// grpc: probe the demo app's gRPC health service (grpc://, port 9090) instead of
	// HTTP; ClusterIP paths only.
	grpc bool
	// aged: the probe's clients are this old when the disruption starts (0: 2 s). gRPC's
	// DNS resolver resolves a name again at most every 30 s (grpcResolveEvery): a
	// client older than that learns the pods of the moment at the first GOAWAY.
	aged time.Duration
	// streams: hold heldStreams of the demo app's streams open instead ("websocket" or
	// "sse"); from node 1.
	streams string
	// vegeta: vegeta attacks the same URL beside the prober, and both must count the
	// same failures over new connections (vegeta_test.go).
	vegeta bool
	// server: the pods run a third-party server instead of the demo app (HTTP only).
	server *server
	// replicas: the Deployment's; 0, the disruption's (disruption.replicas).
	replicas int32
	// bound, when set, is the row's claim over new connections in place of "none
	// lost": a claim that is a bound (lossBound). Its kept connections still lose
	// nothing where the variant says so.
	bound *lossBound
}

// lossBound is a claim that is a bound: over new connections at most perTenThousand
// requests in 10,000 fail and, where ofControl is set, at most ofControl times the rate
// at which they failed in control, the same path and disruption without a delay
// measured in the same run (the experiment fills it in from that row).
type lossBound struct {
	perTenThousand float64
	ofControl      float64
	control        *probe.Summary
}

// atMost is the bound of perTenThousand failures in 10,000 requests over new
// connections, with no control to compare with.
func atMost(perTenThousand float64) *lossBound { return &lossBound{perTenThousand: perTenThousand} }

// shareOfControl is the bound of share times the control's rate of failures over new
// connections (measured in the same run), with no bound of its own.
func shareOfControl(share float64) *lossBound {
	return &lossBound{perTenThousand: 10000, ofControl: share}
}

// newRate is the failures over new connections per 10,000 requests over them in s.
func newRate(s probe.Summary) float64 {
	c := s.Modes[probe.New]
	if c == nil || c.Requests == 0 {
		return 0
	}
	return 10000 * float64(c.Failed) / float64(c.Requests)
}

// String is the claim, for the row's log.
func (b lossBound) String() string {
	var parts []string
	if b.perTenThousand < 10000 {
		parts = append(parts, fmt.Sprintf("%g per 10,000", b.perTenThousand))
	}
	switch {
	case b.ofControl == 0:
	case b.control == nil:
		parts = append(parts, fmt.Sprintf("%g of the control's (not measured)", b.ofControl))
	default:
		parts = append(parts, fmt.Sprintf("%g of the control's %.0f per 10,000", b.ofControl, newRate(*b.control)))
	}
	return "over new connections at most " + strings.Join(parts, " and ")
}

// problem says how d breaks the bound ("": it holds it).
func (b lossBound) problem(d downtime) string {
	if b.ofControl > 0 {
		switch {
		case b.control == nil:
			return fmt.Sprintf("%s: no control measured in this run: no rate to bound by", d.scenario)
		case newRate(*b.control) == 0:
			return fmt.Sprintf("%s: the control lost nothing over new connections: no rate to bound by", d.scenario)
		}
	}
	failedNew := d.failedNew()
	if kept := d.summary.Total.Failed - failedNew; d.scenario.expect == clean && kept > 0 {
		return fmt.Sprintf("%s: %d requests over kept connections failed, want none: %+v", d.scenario, kept, d.summary.Outages)
	}
	r := newRate(d.summary)
	if r > b.perTenThousand || b.ofControl > 0 && r > b.ofControl*newRate(*b.control) {
		return fmt.Sprintf("%s: %d requests over new connections failed, %.1f per 10,000; the claim: %s", d.scenario, failedNew, r, b)
	}
	return ""
}

// size is the Deployment's replicas.
func (sc scenario) size() int32 {
	if sc.replicas > 0 {
		return sc.replicas
	}
	return sc.disruption.replicas()
}

// server is a third-party server the proof runs unmodified in the demo app's place: its
// image (hack/images), which answers every path on port 8080, the readiness probe's
// too.
type server struct {
	name, image string
	// ready is the path its readiness probe asks (default the demo app's /readyz).
	ready string
	// tmp: it writes under /tmp, an emptyDir (its image is read-only, without one).
	tmp bool
}

// nginxServer is Debian's nginx (hack/server-bins.sh). Its image's STOPSIGNAL is
// SIGQUIT, with which containerd stops it: nginx then finishes its requests and closes
// its idle keep-alive connections (SIGTERM would drop them at once).
var nginxServer = &server{name: "nginx", image: "nap/nginx:e2e", tmp: true}

// httpbinServer is go-httpbin (hack/tool-versions), a Go server: http.Server.Shutdown
// at SIGTERM.
var httpbinServer = &server{name: "go-httpbin", image: "nap/httpbin:e2e", ready: "/status/200"}

// grpcPort is the demo app's gRPC port, and its Service's.
const grpcPort = 9090

// grpcResolveEvery is how often at most gRPC's DNS resolver resolves a name again
// (grpc-go's resolver/dns MinResolutionInterval, gRPC C-core's
// grpc.dns_min_time_between_resolutions_ms): only when a connection is lost, and not
// within this long of its last resolution.
const grpcResolveEvery = 30 * time.Second

// The demo service: pods spread over both nodes when they can be.
const serviceDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 3
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {matchLabels: {app: app}}}
      containers:
      - name: app
        image: nap/app:e2e
        imagePullPolicy: Never
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 1
`

// demoDeployment decodes src, the demo service's Deployment (or an edit of it).
func demoDeployment(t *testing.T, src []byte) appsv1.Deployment {
	t.Helper()
	objs, err := manifest.Read("deployment.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := objs[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// downtime is one scenario's measurement.
type downtime struct {
	ns       string
	scenario scenario
	summary  probe.Summary
	start    time.Time // when the probe began
	// terminations are the pods' times from deletion to their app's exit (whole
	// seconds: the API's timestamps), sorted.
	terminations []time.Duration
	// routes is what each node's kube-proxy programmed meanwhile, and how late.
	routes forensic.RouteTimes
	// kubelet: the pods a kubelet stopped (a disruption byKubelet), each with its
	// endpoint's and its app's times.
	kubelet []kubeletStop
	// deregistered: on a path whose proxy sends to the pods itself (the ingress, the
	// load balancer with pod targets), each pod's time from when the proxy let it go
	// to its app's exit, by name (terminations.letGo); negative: it exited first.
	deregistered map[string]time.Duration
	// ingress: on the ingress's path, when requests failed, whether its access log shows
	// them lost by the ingress and not by a pod's exit (forensic.IngressVerdict).
	ingress forensic.Verdict
	// lbLate: behind the load balancer (node targets), when every failed request over a
	// new connection was refused by a node the load balancer still sent to with no pod
	// left on it, says so (forensic.LBRefused); "": not so.
	lbLate string
	// verdicts: each pod that ran nap's binary, its verdict beside what failed over new
	// connections after its app exited (forensic.Attribute): the confusion table's
	// rows.
	verdicts []forensic.Judged
}

// explained says whether m's records clear the hold of its loss, and how: a route
// took a pod out later than the pod stayed, or the ingress lost the requests itself.
// Late: a node's kube-proxy (forensic.RouteTimes.Late), the path's proxy letting a pod go more
// than a second after its app's exit (the exit's time is cut to whole seconds), or the
// load balancer still sending to a node left without a pod (forensic.LBRefused). A
// SYN or a request could then follow the route to a pod that was gone, what no wait
// that ends before the route does prevents: the adaptive wait sees only the traffic
// that comes, and a proxy that holds a pod but sends it nothing for QUIET looks like
// one that let it go (docs/downtime.md, "Reading it"). The ingress's own: its access
// log puts every failed request on a pod it had let go, on a pod still running after
// the request, or on none (forensic.IngressVerdict).
func (m downtime) explained() (string, bool) {
	if len(m.terminations) > 0 {
		if why, late := m.routes.Late(m.terminations[0]); late {
			return why, true
		}
	}
	for _, pod := range slices.Sorted(maps.Keys(m.deregistered)) {
		if d := m.deregistered[pod]; d < -time.Second {
			return fmt.Sprintf("the %s let pod %s go %v after its app exited", m.scenario.path, pod, -d), true
		}
	}
	if m.ingress.Cause == forensic.IngressOwn {
		return m.ingress.Why, true
	}
	if m.lbLate != "" {
		return m.lbLate, true
	}
	return "", false
}

// measure deploys sc's variant behind a Service (and an Ingress for the ingress path),
// probes it from sc's path at rate over new and keep-alive connections while sc's
// disruption runs sc.rounds times, and returns the report.
func measure(t *testing.T, cs *kubernetes.Clientset, sc scenario, rate float64) downtime {
	t.Helper()
	tr := prepare(t, cs, sc)
	tr.begin(t, cs, rate)
	for i := range sc.rounds {
		disrupt(t, cs, tr.ns, sc.disruption, i, tr.settle)
		tr.settled()
		if sc.disruption == nodeShutdown {
			// The pods' own status says nothing until they have stopped: the stop
			// began when the kubelet was told of the shutdown.
			tr.term.stoppedOn(node2, lastShutdown)
		}
	}
	return tr.finish(t, cs)
}

// trial is one scenario's measurement under way: its service deployed behind its path
// (prepare), probed and recorded (begin), disrupted — by measure, or at once with
// others (a fleet) — and read (finish).
type trial struct {
	sc                   scenario
	ns                   string
	target               vantage
	url, httpURL, lbName string
	settle               func() // nil: nothing to settle
	held                 *endpointHold
	// The recorders, from begin.
	routes          func() forensic.RouteTimes
	term            *terminations
	deregistrations func() map[string]time.Time
	left            *endpointTimes
	reacted         func() []string
	scrapes         *scraper
	start           time.Time
	pr              prober
	vg              *vegeta
	// drops are both nodes' drop counters at the start (dropCounters).
	drops [2]map[string]int
}

// settled waits until the routes that learn late have settled (trial.settle).
func (tr *trial) settled() {
	if tr.settle != nil {
		tr.settle()
	}
}

// prepare deploys sc's service behind its path and waits until every route serves it.
func prepare(t *testing.T, cs *kubernetes.Clientset, sc scenario) *trial {
	t.Helper()
	return prepareAll(t, cs, sc)[0]
}

// prepareAll prepares each scenario as prepare does, one after the other, but for the
// rollouts of the variants that roll once their routes exist (rollAfterRoutes): those
// roll at once, each Deployment's pods in their own namespace (TestMixedFleet's three
// services: about 9 s sooner than one after the other in make test, 2026-12-07).
func prepareAll(t *testing.T, cs *kubernetes.Clientset, scs ...scenario) []*trial {
	t.Helper()
	trials := make([]*trial, len(scs))
	for i, sc := range scs {
		trials[i] = prepareRoutes(t, cs, sc)
	}
	var rolled []*trial
	for _, tr := range trials {
		if tr.sc.variant.rollAfterRoutes {
			if tr.sc.variant.policy != "" {
				waitInjectsBacked(t, cs, tr.ns)
			}
			restart(t, cs, tr.ns, 0)
			rolled = append(rolled, tr)
		}
	}
	for _, tr := range rolled {
		waitRolledOut(t, cs, tr.ns)
	}
	for _, tr := range rolled {
		tr.settled()
	}
	for _, tr := range trials {
		if tr.sc.disruption.onNode2() {
			if n := podsByNode(t, cs, tr.ns); n[node2] == 0 {
				t.Fatalf("no pod of the demo service on %s to %s: %v", node2, tr.sc.disruption, n)
			}
			// Pods of earlier tests still stopping on node 2 keep its kubelet busy:
			// the drained pods would then stop late, after every route forgot them.
			waitNoPodStopping(t, cs, node2)
		}
	}
	return trials
}

// prepareRoutes is prepare but for what prepareAll does for each trial once every route
// serves it: the variant's rollout after its routes and node 2's checks.
func prepareRoutes(t *testing.T, cs *kubernetes.Clientset, sc scenario) *trial {
	t.Helper()
	ctx := context.Background()
	v := sc.variant
	var ns string
	switch {
	case v.webhook && v.policy != "":
		ns = policyNamespace(t, cs, v.policy)
	case v.webhook:
		ns = optedInNamespace(t, cs)
	default:
		ns = namespace(t, cs)
	}
	src := []byte(serviceDeployment)
	if v.inject != nil {
		src = injectManifest(t, src, *v.inject)
	}
	d := demoDeployment(t, src)
	d.Spec.Replicas = ptr.To(sc.size())
	d.Spec.Template.Annotations = v.annotations
	d.Spec.Template.Spec.NodeSelector = v.nodeSelector
	c := &d.Spec.Template.Spec.Containers[0]
	c.Env = append([]corev1.EnvVar{{Name: "APP_MODE", Value: v.mode}}, v.env...)
	if sv := sc.server; sv != nil {
		if sc.grpc || sc.streams != "" || v.mode != "plain" {
			t.Fatalf("%s: %s serves plain HTTP, with its own shutdown", sc, sv.name)
		}
		c.Image, c.Env = sv.image, nil
		if sv.ready != "" {
			c.ReadinessProbe.HTTPGet.Path = sv.ready
		}
		if sv.tmp {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
			d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
	}
	if sc.disruption == nodePressure {
		evictable(t, cs, &d.Spec.Template.Spec)
	}
	if v.outOfRoutes == byGate {
		d.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gateCondition}}
		openGates(t, cs, ns)
	}
	var held *endpointHold
	if v.hold > 0 {
		held = startHold(t, cs, v.hold)
		c.Lifecycle = &corev1.Lifecycle{PreStop: held.hook(ns)}
		d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(int64((holdMax + 5*time.Second) / time.Second))
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "app"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intOrPort(8080)}}},
	}
	if sc.grpc {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "grpc", Port: grpcPort, TargetPort: intOrPort(grpcPort), AppProtocol: ptr.To("kubernetes.io/h2c")})
	}
	svc, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.disruption == nodeDrain {
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "app"},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}}},
		}
		if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitRolledOut(t, cs, ns)
	cfg := calibrate.PathConfig{IngressClass: ingressClass, IngressURL: ingressURL(t, cs, ""), Gateway: labGateway, GatewayURL: ingressURL(t, cs, ""), LBAnnotations: sc.path.checks, DNS: clusterDNS,
		LoadBalancers: []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyLocal, corev1.ServiceExternalTrafficPolicyCluster}}
	if sc.path.podTargets() {
		cfg.PodLBAnnotations, cfg.PodLBIngressClass = sc.path.checks, albClass
	}
	url, err := calibrate.Open(ctx, cs, sc.path.path, cfg, calibrate.Target{Namespace: ns, Service: "app", Prefix: "/" + ns + "/"}, svc)
	if err != nil {
		t.Fatal(err)
	}
	host := ""
	if sc.grpc {
		switch {
		case sc.path.node2 || sc.path.path.NodeChecked || sc.path.path.Name == traffic.GatewayRoute.Name:
			t.Fatalf("%s: gRPC is probed at the ClusterIP, through the ingress, the load balancer with pod targets and the headless Service, from node 1", sc)
		case sc.path.path.Name == traffic.Ingress.Name:
			url, host = grpcIngress(t, cs, ns, svc)
		case sc.path.podTargets(), sc.path.path.Name == traffic.HeadlessDNS.Name:
			// The load balancer's own gRPC port (HTTP/2 both sides); the headless
			// Service's name, resolved by gRPC's DNS resolver at the cluster DNS.
			u, err := neturl.Parse(url)
			if err != nil {
				t.Fatal(err)
			}
			url = fmt.Sprintf("grpc://%s:%d", u.Hostname(), grpcPort)
		default:
			url = fmt.Sprintf("grpc://%s:%d", svc.Spec.ClusterIP, grpcPort)
		}
	}
	httpURL := url
	if sc.streams != "" {
		if sc.path.node2 {
			t.Fatalf("%s: streams are held from node 1 only", sc)
		}
		u := strings.TrimSuffix(url, "/")
		url = map[string]string{"websocket": "ws" + strings.TrimPrefix(u, "http") + "/ws", "sse": u + "/events"}[sc.streams]
	}
	target := vantage{url: url, host: host, node2: sc.path.node2}
	lbName := sc.path.lbService()
	lbLocal := sc.path.path.Name == traffic.LoadBalancerLocal.Name
	var settle func() // after each round: the load balancer in its steady state
	switch {
	case sc.path.path.NodeChecked:
		// Behind a load balancer, a round lasts until it has taken out the nodes left
		// without a pod (Local) and, at its end, taken them back: what it sends to a
		// node meanwhile is what the measurement is about.
		settle = func() { waitLoadBalanced(t, cs, ns, lbName, lbLocal) }
	case sc.path.podTargets():
		// With pod targets: until the pods gone are deregistered, the new ones registered.
		settle = func() { waitPodTargets(t, cs, ns, lbName) }
	}
	if settle != nil {
		t.Cleanup(func() {
			calibrate.Close(context.Background(), cs, sc.path.path, calibrate.Target{Namespace: ns, Service: "app"})
		})
		settle()
	}
	return &trial{sc: sc, ns: ns, target: target, url: url, httpURL: httpURL, lbName: lbName, settle: settle, held: held}
}

// begin starts the recorders and the probe at rate, and returns 2 s into the probe
// (scenario.aged, when set, into it).
func (tr *trial) begin(t *testing.T, cs *kubernetes.Clientset, rate float64) {
	t.Helper()
	sc, ns, v, url, httpURL, target, lbName := tr.sc, tr.ns, tr.sc.variant, tr.url, tr.httpURL, tr.target, tr.lbName
	clearSynSent(t)
	routes := startRouteTimes(t)
	term := watchTerminations(t, cs, ns)
	deregistrations := sc.path.watchLetGo(t, cs, ns, lbName)
	var left *endpointTimes
	if sc.disruption.byKubelet() {
		left = watchEndpoints(t, cs, ns)
	}
	var reacted func() []string
	if v.outOfRoutes != 0 {
		reacted = takeOutOfRoutes(t, cs, ns, v.outOfRoutes)
	}
	var scrapes *scraper
	if v.inject != nil && v.inject.Wait.IsAdaptive() || v.hold > 0 {
		// Background the adaptive wait must not count on; beside the endpoint hold too,
		// so that both are measured under the same traffic.
		scrapes = startScraper(t, cs, ns)
	}
	drops := [2]map[string]int{dropCounters(t, false), dropCounters(t, true)}
	start := time.Now()
	var pr prober
	if sc.streams != "" {
		pr = startStreams(t, url, httpURL)
	} else {
		pr = startProbe(t, target, rate)
	}
	var vg *vegeta
	if sc.vegeta {
		if sc.grpc || sc.streams != "" {
			t.Fatalf("%s: vegeta sends HTTP requests", sc)
		}
		vg = startVegeta(t, target, rate/2)
	}
	tr.routes, tr.term, tr.deregistrations, tr.left, tr.reacted, tr.scrapes, tr.start, tr.pr, tr.vg, tr.drops =
		routes, term, deregistrations, left, reacted, scrapes, start, pr, vg, drops
	time.Sleep(cmp.Or(sc.aged, 2*time.Second))
}

// finish stops the probe 2 s after the disruption and the recorders, and returns the
// report.
func (tr *trial) finish(t *testing.T, cs *kubernetes.Clientset) downtime {
	t.Helper()
	sc, ns, held := tr.sc, tr.ns, tr.held
	pr, vg, term, routes, reacted, left, scrapes, start, deregistrations := tr.pr, tr.vg, tr.term, tr.routes, tr.reacted, tr.left, tr.scrapes, tr.start, tr.deregistrations
	time.Sleep(2 * time.Second)
	if vg != nil {
		vg.interrupt() // the same moment as the prober: both count the same window
	}
	s := pr.stop(t)
	stopped := time.Now()
	var vr *vegetaReport
	if vg != nil {
		r := vg.stop(t)
		crossCheck(t, sc, s, r)
		vr = &r
	}
	took := term.stop()
	programmed := routes()
	if reacted != nil {
		for _, r := range reacted() {
			t.Logf("%s: %s", sc, r)
		}
	}
	var stops []kubeletStop
	if left != nil {
		events, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		served, gone := left.stop()
		stops = term.kubeletStops(served, gone, events.Items)
		for _, k := range stops {
			t.Logf("%s: %s", sc, k)
		}
	}
	t.Logf("%s: probed for %v; pods from deletion to exit: %v; kube-proxy: %v", sc, time.Since(start).Round(time.Second), took, programmed)
	var deregistered map[string]time.Duration
	var letGo map[string]time.Time
	if deregistrations != nil {
		var sinceDeletion map[string]time.Duration
		letGo = deregistrations()
		sinceDeletion, deregistered = term.letGo(letGo)
		t.Logf("%s: pods from deletion to the %s letting them go: %v; from then to exit: %v", sc, sc.path, sinceDeletion, deregistered)
	}
	var ingress forensic.Verdict
	var lbLate string
	if sc.path.viaTraefik() && (s.Total.Failed > 0 || vr != nil && vr.failed() > 0) {
		// Where the ingress sent each failed request, from its access log.
		entries := ingressAccess(t, cs, ns, start)
		if s.Total.Failed > 0 {
			ingress = forensic.IngressVerdict(entries, s.Failures, term.addresses(letGo), start)
			t.Logf("%s: the ingress's access log: %s", sc, ingress.Why)
		}
		if vr != nil {
			vegetaLogged(t, sc, *vr, entries, s.Failures)
		}
	}
	if scrapes != nil {
		t.Logf("%s: %d scrapes, one per pod every %v", sc, scrapes.stop(), scrapeEvery)
	}
	if held != nil {
		t.Logf("%s: the endpoint hold:%s", sc, held.report())
	}
	if len(s.FirstErrors) > 0 {
		t.Logf("%s: first errors %q", sc, s.FirstErrors)
	}
	if c := s.Modes[probe.New]; c != nil && c.ByKind[probe.Timeout] > 0 && sc.expect != fails {
		// What the nodes' connection tracking held right after (docs/downtime.md: stale
		// SYN_SENT entries were the suspects of timeouts with a delay).
		young1, young2 := synSent(t, false), synSent(t, true)
		t.Logf("%s: %d timeouts over new connections; SYN_SENT entries now: node 1 %q, node 2 %q", sc, c.ByKind[probe.Timeout], young1, young2)
		// The young ones are this measurement's: each one's connection as both nodes
		// track it, in any state, and the pods that came and went.
		// And the connections the timed-out requests got (a gRPC call's TCP connection
		// whose HTTP/2 handshake went unanswered leaves no SYN_SENT entry), the first few.
		ports := youngPorts(append(young1, young2...))
		for _, port := range timedOutPorts(s.Failures, 5) {
			if !slices.Contains(ports, port) {
				ports = append(ports, port)
			}
		}
		for _, port := range ports {
			t.Logf("%s: the connection from port %s: node 1 %q, node 2 %q", sc, port, connsFrom(t, false, port), connsFrom(t, true, port))
		}
		// A SYN that leaves no entry of its own was dropped (the counters) or went
		// along an older entry of the same client port (an open one to the same
		// address).
		if u, err := neturl.Parse(tr.url); err == nil && !sc.path.node2 {
			to := u.Host
			if u.Port() == "" {
				to = net.JoinHostPort(u.Hostname(), "80")
			}
			states, open := connsTo(t, false, to)
			t.Logf("%s: node 1's entries to %s by state %v; open ones %q", sc, to, states, open)
		}
		t.Logf("%s: drops meanwhile: node 1 %v, node 2 %v", sc, countersSince(tr.drops[0], dropCounters(t, false)), countersSince(tr.drops[1], dropCounters(t, true)))
	}
	if c := s.Modes[probe.New]; c != nil && c.Failed > 0 && sc.expect != fails {
		// Every loss with a delay is to be explained: the pods' times beside the outages.
		t.Logf("%s: outages %+v; pods (seconds from the probe's start): %q", sc, s.Outages, term.pods(start))
		if sc.path.path.NodeChecked {
			// Behind the load balancer, where it sent each failed connection.
			if es, msgs, err := lbConnections(lbSocket(ns, tr.lbName)); err != nil {
				t.Logf("%s: the load balancer's connection log: %v", sc, err)
			} else {
				lines, _ := lbLookup(t, es, msgs, s.Failures, start)
				for _, l := range lines {
					t.Logf("%s: %s", sc, l)
				}
				lbLate = forensic.LBRefused(es, msgs, s.Failures, start)
			}
		}
	}
	var verdicts []forensic.Judged
	if ends := term.ends(start); len(ends) > 0 {
		var failed []time.Time
		for _, f := range s.Failures {
			if f.Mode == probe.New {
				failed = append(failed, f.Due)
			}
		}
		verdicts = forensic.Attribute(ends, failed, stopped)
		t.Log(forensic.VerdictsLine(sc.String(), verdicts, start))
	}
	return downtime{ns: ns, scenario: sc, summary: s, start: start, lbLate: lbLate, terminations: took, routes: programmed, kubelet: stops, deregistered: deregistered, ingress: ingress, verdicts: verdicts}
}

// timedOutPorts returns the client ports of the first n requests of fails that timed
// out over a new connection they got (probe.Result.Local).
func timedOutPorts(fails []probe.Result, n int) []string {
	var out []string
	for _, f := range fails {
		if f.Mode != probe.New || f.Kind != probe.Timeout || f.Local == "" || len(out) == n {
			continue
		}
		if _, port, err := net.SplitHostPort(f.Local); err == nil && !slices.Contains(out, port) {
			out = append(out, port)
		}
	}
	return out
}

func (sc scenario) String() string {
	return fmt.Sprintf("%s, %s, %s", sc.pathName(), sc.disruption, sc.variant.name)
}

// pathName is the path, and the protocol when it is not HTTP.
func (sc scenario) pathName() string {
	switch {
	case sc.grpc && sc.aged > 0:
		return fmt.Sprintf("%s (gRPC, its client %v old)", sc.path.String(), sc.aged)
	case sc.grpc:
		return sc.path.String() + " (gRPC)"
	case sc.streams == "websocket":
		return sc.path.String() + " (WebSocket)"
	case sc.streams == "sse":
		return sc.path.String() + " (SSE)"
	case sc.server != nil:
		return sc.path.String() + " (" + sc.server.name + ")"
	}
	return sc.path.String()
}

// disrupt runs round i of d on the demo service in ns and waits until it is whole again.
// settle, when not nil, runs once the service is at its smallest (the old pods gone, the
// Deployment scaled down, the node drained), before it grows back: routes that learn
// late (a load balancer's checks) have settled on what is left.
func disrupt(t *testing.T, cs *kubernetes.Clientset, ns string, d disruption, i int, settle func()) {
	if settle == nil {
		settle = func() {}
	}
	t.Helper()
	switch d {
	case rollingRestart:
		restart(t, cs, ns, i)
		waitRolledOut(t, cs, ns)
		settle()
	case scaleDown:
		scale(t, cs, ns, 1)
		waitRolledOut(t, cs, ns)
		settle()
		scale(t, cs, ns, d.replicas())
		waitRolledOut(t, cs, ns)
	case nodeDrain:
		// Only the demo service's pods: other tests' pods are not this test's to move.
		t.Cleanup(func() { kubectl(t, nil, "uncordon", node2) })
		t.Log(strings.TrimSpace(kubectl(t, nil, "drain", node2, "--pod-selector", "app=app", "--timeout", "3m", "--ignore-daemonsets", "--delete-emptydir-data")))
		waitRolledOut(t, cs, ns)
		settle()
		kubectl(t, nil, "uncordon", node2)
		if n := podsByNode(t, cs, ns); n[node2] != 0 {
			t.Errorf("pods on %s after draining it: %v", node2, n)
		}
	case deadlineExceeded:
		expire(t, cs, ns)
		waitRolledOut(t, cs, ns)
		settle()
	case nodePressure:
		pressure(t, cs, ns)
		waitRolledOut(t, cs, ns)
		settle()
	case nodeShutdown:
		shutdownNode2(t, cs, ns)
		waitRolledOut(t, cs, ns)
		settle()
	}
}

// restart begins round i of a rolling restart of the Deployment app in ns (as kubectl
// rollout restart does: a new annotation on its pod template).
func restart(t *testing.T, cs *kubernetes.Clientset, ns string, i int) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"nap.dev/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339Nano)+strconv.Itoa(i))
	if _, err := cs.AppsV1().Deployments(ns).Patch(context.Background(), "app", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func scale(t *testing.T, cs *kubernetes.Clientset, ns string, n int32) {
	t.Helper()
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(context.Background(), "app", s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func injectManifest(t *testing.T, src []byte, opts inject.Options) []byte {
	t.Helper()
	p, err := inject.NewPlan(opts)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := inject.Inject("deployment.yaml", src, p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitRolledOut waits until every pod of the Deployment is updated and available and no
// old pod is left, terminating or not (a pod the kubelet stopped stays, terminal, as
// the record of its end: it counts no more).
func waitRolledOut(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(3 * time.Minute); !rolledOut(ctx, cs, ns); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("rollout in %s not done after 3 minutes", ns)
		}
	}
}

// rolledOut says whether the Deployment app in ns is rolled out (waitRolledOut).
func rolledOut(ctx context.Context, cs *kubernetes.Clientset, ns string) bool {
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
	if err != nil || d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != *d.Spec.Replicas ||
		d.Status.AvailableReplicas != *d.Spec.Replicas || d.Status.Replicas != *d.Spec.Replicas {
		return false
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
	return err == nil && len(slices.DeleteFunc(pods.Items, terminal)) == int(*d.Spec.Replicas)
}

// grpcIngress routes the demo app's gRPC port through the ingress by host (a gRPC
// call's path is its method: no prefix can tell one namespace's from another's), to
// the backend over h2c (Traefik's service.serversscheme), and returns the ingress's
// address and the host to call it by.
func grpcIngress(t *testing.T, cs *kubernetes.Clientset, ns string, svc *corev1.Service) (url, host string) {
	t.Helper()
	ctx := context.Background()
	host = "grpc." + ns + ".nap.test"
	svc.Annotations = map[string]string{"traefik.ingress.kubernetes.io/service.serversscheme": "h2c"}
	if _, err := cs.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "app-grpc"}, Spec: networkingv1.IngressSpec{
		IngressClassName: ptr.To(ingressClass),
		Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix), Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: svc.Name, Port: networkingv1.ServiceBackendPort{Number: grpcPort}}}}}}}}}}}
	if _, err := cs.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return "grpc://" + strings.TrimSuffix(strings.TrimPrefix(ingressURL(t, cs, ""), "http://"), "/") + ":80", host
}

// waitServing waits until url answers (kube-proxy has its rules, the pod listens): one
// request at a time with a short timeout, for at most 30 s, before any load is sent.
// host, when not empty, is the name the requests give (probe.Options.Host).
func waitServing(t *testing.T, url, host string) {
	t.Helper()
	if strings.HasPrefix(url, "grpc://") {
		// One call of the probe's own: it answers once one succeeds.
		var last probe.Result
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			probe.Run(context.Background(), probe.Options{URL: url, Host: host, Rate: 10, Duration: 100 * time.Millisecond, Timeout: time.Second, Modes: []probe.Mode{probe.New}, DNS: clusterDNS},
				func(r probe.Result) { last = r })
			if last.Kind == probe.OK {
				return
			}
		}
		t.Fatalf("%s never answered: %s %s", url, last.Kind, last.Err)
	}
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil, DialContext: probe.Dialer(time.Second, clusterDNS).DialContext}}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var resp *http.Response
		if resp, err = c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
	}
	t.Fatalf("%s never answered: %v", url, err)
}

func (d downtime) row() string {
	s := d.summary
	if r := s.Streams; r != nil {
		// The table's columns, for held streams: messages for requests; what failed
		// (broken ends of all ends, connections that delivered nothing, messages lost);
		// empty connections / broken ends for new / reuse; the reconnect's p99 for the
		// outage.
		sc := d.scenario
		return fmt.Sprintf("| %s | %s | %s | %d | %d | %d (%d broken of %d ends, %d empty connections, %d lost) | %d / %d | %.2f s |", sc.pathName(), sc.disruption, sc.variant.name, sc.rounds,
			r.Messages, r.Failed(), r.Broken, r.Broken+r.Clean, r.ConnectFailed, r.Lost, r.ConnectFailed, r.Broken, r.Reconnect.P99/1000)
	}
	var kinds []string
	for _, k := range probe.Kinds {
		if n := s.Total.ByKind[k]; n > 0 && k != probe.OK {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	codes := make([]int, 0, len(s.Total.ByStatus))
	for c := range s.Total.ByStatus {
		if c >= 400 {
			codes = append(codes, c)
		}
	}
	slices.Sort(codes)
	for _, c := range codes {
		kinds = append(kinds, fmt.Sprintf("HTTP %d: %d", c, s.Total.ByStatus[c]))
	}
	failed := fmt.Sprintf("%d", s.Total.Failed)
	if len(kinds) > 0 {
		failed += " (" + strings.Join(kinds, ", ") + ")"
	}
	perMode := func(m probe.Mode) int {
		if c := s.Modes[m]; c != nil {
			return c.Failed
		}
		return 0
	}
	sc := d.scenario
	return fmt.Sprintf("| %s | %s | %s | %d | %d | %s | %d / %d | %.2f s |", sc.pathName(), sc.disruption, sc.variant.name, sc.rounds,
		s.Total.Requests, failed, perMode(probe.New), perMode(probe.Reuse), s.LongestOutage)
}

// pair measures a scenario without a delay and with nap's binary at the lab's
// calibrated 5 s, once each: the first must lose requests, the second none over new
// connections. With NAP_PROOF_OUT=DIR it writes their probe reports there,
// without.json and with.json (make proof-picture: the README's picture).
func pair(t *testing.T, path labPath, d disruption) {
	cs := client(t)
	out := os.Getenv("NAP_PROOF_OUT")
	for _, row := range []scenario{
		{path: path, disruption: d, variant: noDelay, expect: fails, rounds: 1, vegeta: true},
		{path: path, disruption: d, variant: napBinary, expect: newClean, rounds: 1, vegeta: true},
	} {
		m := prove(t, cs, row, 200)
		if row.expect == fails && path.viaTraefik() && m.summary.Total.Failed > 0 && m.ingress.Cause != forensic.PodExit {
			// The access log's verdict can fail: without a delay, the pods leave while
			// the ingress still sends to them, and the log holds every failed request.
			t.Errorf("%s: the ingress's access log does not put the loss on the pods' exits: %s", row, m.ingress.Why)
		}
		proofOut(t, out, row, m)
	}
}

// proofOut writes m's summary into the directory out for the README's picture (make
// proof-picture), when out is set and the test has not failed.
func proofOut(t *testing.T, out string, sc scenario, m downtime) {
	t.Helper()
	if out == "" || t.Failed() {
		return
	}
	m.summary.Title = fmt.Sprintf("%s, %s, %s", sc.disruption, sc.path, sc.variant.name)
	name := map[bool]string{true: "without.json", false: "with.json"}[sc.expect == fails]
	b, err := json.MarshalIndent(m.summary, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, name), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitNoPodStopping waits (at most 2 minutes) until no pod on node is being torn down.
func waitNoPodStopping(t *testing.T, cs *kubernetes.Clientset, node string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			t.Fatal(err)
		}
		var stopping []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				stopping = append(stopping, p.Namespace+"/"+p.Name)
			}
		}
		if len(stopping) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("pods still stopping on %s after 2 minutes: %v", node, stopping)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestRolloutDowntime is the proof, small enough for every `make test`: a rolling
// restart of 3 replicas under 200 req/s (no client-side resend) drops requests without
// a preStop delay, and none over new connections with nap's. (nap with drain, expected
// clean on every connection, is held to it by the experiment, `make e2e-downtime`: in
// one run of this test it lost one request to a timeout, not yet explained.)
func TestRolloutDowntime(t *testing.T) { pair(t, clusterIPNode1, rollingRestart) }

// TestDrainDowntime: `kubectl drain` of node 2 under a PodDisruptionBudget, behind the
// lab's load balancer with externalTrafficPolicy Local and checks 3 s apart
// (lbLocalSlow). The drain leaves node 2 without a pod of the service, and the load
// balancer sends to it until its checks take it out, 6 to 9 s later: without a delay
// those requests are lost, by construction and not by a race (927 of 7,711 with an
// NLB's checks in the experiment). With nap's adaptive wait each evicted pod serves
// until that traffic has stopped: none is lost over new connections, and each hold
// ends with the traffic, not at the wait's 60 s MAX (endedWithTraffic).
//
// Through the ingress or the Gateway API route the loss without a delay is a race
// (Traefik lets a pod go 0.1 to 2 s after its eviction, the app exits within 0.3 s):
// no loss in about one drain in four, 2026-12-06/07, so neither is a control that must
// fail; the experiment measures every path.
func TestDrainDowntime(t *testing.T) {
	cs := client(t)
	prove(t, cs, scenario{path: lbLocalSlow, disruption: nodeDrain, variant: noDelay, expect: fails, rounds: 1, vegeta: true}, 200)
	adaptive := prove(t, cs, scenario{path: lbLocalSlow, disruption: nodeDrain, variant: napAdaptive, expect: newClean, rounds: 1, vegeta: true}, 200)
	endedWithTraffic(t, adaptive)
}

// endedWithTraffic checks that each pod nap's adaptive wait held behind lbLocalSlow went
// once the load balancer stopped sending it traffic, well before the wait's 60 s MAX.
// The longest hold: the checks (up to 9 s after kube-proxy's check failed), kube-proxy's
// programming of the change (its slowest this measurement, 1 to 2 s on a quiet machine,
// 4 to 5 s seen, capped at 15 s to keep the bound below the MAX), QUIET (2 s), a
// reading, and the API's whole-second timestamps.
func endedWithTraffic(t *testing.T, m downtime) {
	t.Helper()
	most := time.Duration((9 + min(m.routes.Slowest(), 15) + 2 + 1 + 1) * float64(time.Second)).Round(time.Second)
	if len(m.terminations) == 0 || slices.Max(m.terminations) > most {
		t.Errorf("%s: pods from deletion to exit %v; want each within %v (the wait ended with the traffic, not at its 60 s); kube-proxy: %v",
			m.scenario, m.terminations, most, m.routes)
	}
}

// TestIngressDowntime: a rolling restart seen through Traefik, which learns of the
// change from EndpointSlices on its own schedule: 502s without a delay.
func TestIngressDowntime(t *testing.T) { pair(t, viaIngress, rollingRestart) }

// TestHeadlessDNSDowntime: a rolling restart seen by a client of a headless Service
// that resolves its name at the cluster DNS at each new connection and keeps its
// keep-alive connections on the pod they went to (the probe: Go's resolver, Go's
// transport). The cluster DNS leaves a terminating pod out of its answer at once (0 to
// 7 ms on the lab), and Go tries the next address when one refuses: without any delay
// requests over new connections fail only in the race of a name resolved just before
// the pod left the answer and a connection that reaches it as its app exits (an EOF,
// 1 of about 900 in one CI run, 2026-12-07, none in the seven before). The claim is a
// bound: at most 50 in 10,000 over new connections, a tenth or less of what the
// ClusterIP loses without a delay (459 to 958 per 10,000 in TestGRPCDowntime's
// controls): the path's tail is the DNS's, about none. What such a client can lose is
// on its pinned connections, when the app closes them under a request (1 of 1,417
// requests in the first run): no wait moves those, the app's drain does; with nap's
// 5 s and the drain library's Connection: close during it, none fails at all.
//
// Then gRPC's client-side balancing over the same name (round_robin over dns:///, the
// probe's shared connection): it learns of a pod's end from its connection alone (the
// GOAWAY of GracefulStop, what most gRPC servers do at SIGTERM) and of new pods only
// when it resolves again, at a lost connection and at most every grpcResolveEvery.
// Resolved 2 s before the rollout, it has no pod left once the last old one has gone
// (228 and 238 calls refused, without a delay and with nap's 5 s + drain, 2026-12-06);
// with a wait past its re-resolution interval, the first GOAWAY comes when it may
// resolve again: none fails. The experiment measures the 5 s and a client older than
// the interval (which loses nothing, even without a delay).
func TestHeadlessDNSDowntime(t *testing.T) {
	cs := client(t)
	for _, row := range []scenario{
		{path: viaDNS, disruption: rollingRestart, variant: noDelay, expect: newClean, rounds: 1, bound: atMost(50)},
		{path: viaDNS, disruption: rollingRestart, variant: napDrain, expect: clean, rounds: 1},
		{path: viaDNS, disruption: rollingRestart, variant: noDelay, expect: fails, rounds: 1, grpc: true},
		{path: viaDNS, disruption: rollingRestart, variant: napDrainResolve, expect: clean, rounds: 1, grpc: true},
	} {
		prove(t, cs, row, 200)
	}
}

// TestGatewayDowntime: the same through the Gateway API, an HTTPRoute attached to the
// lab's Gateway, which Traefik serves from the same EndpointSlices as its Ingresses.
func TestGatewayDowntime(t *testing.T) { pair(t, viaGateway, rollingRestart) }

// TestGRPCDowntime: a rolling restart probed with gRPC calls (the health service's
// Check, open loop, a connection per call and a shared one) at the ClusterIP from node
// 1. Without a delay, an app that stops gracefully at SIGTERM (GracefulStop: the
// listener closes at once) fails calls; with nap's delay and drain/grpcdrain, none
// fails on either kind of connection: the pod is out of the routes before it stops,
// and its GOAWAY moves the shared connection's calls to another pod.
//
// Over new connections the claim is a bound, measured against the control in the same
// run: at most 50 calls in 10,000 fail, and at most a tenth of the control's rate. In
// about one CI run in four, 1 to 3 of some 1,400 calls over new connections time out
// with nap and drain while every route was on time; the call's SYN leaves no entry in
// node 1's connection tracking, and it is not explained (docs/downtime.md, "gRPC").
// The shared connection, the one a gRPC client keeps, loses nothing.
func TestGRPCDowntime(t *testing.T) {
	cs := client(t)
	control := prove(t, cs, scenario{path: clusterIPNode1, disruption: rollingRestart, variant: noDelay, expect: fails, rounds: 1, grpc: true}, 200)
	prove(t, cs, scenario{path: clusterIPNode1, disruption: rollingRestart, variant: napDrain, expect: clean, rounds: 1, grpc: true,
		bound: &lossBound{perTenThousand: 50, ofControl: 0.1, control: &control.summary}}, 200)
}

// TestWebSocketDowntime: a rolling restart while 20 WebSockets of the demo app are held
// open at the ClusterIP from node 1, each reconnecting when it ends and resuming from
// the last message number it saw. Without a delay or drain the sockets die with the
// old pods, with no close frame; with nap's delay and drain/wsdrain every one is closed
// with 1001 going away, reconnects, and loses no message.
func TestWebSocketDowntime(t *testing.T) {
	cs := client(t)
	prove(t, cs, scenario{path: clusterIPNode1, disruption: rollingRestart, variant: noDelay, expect: fails, rounds: 1, streams: "websocket"}, 200)
	prove(t, cs, scenario{path: clusterIPNode1, disruption: rollingRestart, variant: napDrain, expect: clean, rounds: 1, streams: "websocket"}, 200)
}

// claim is a row of the experiment's tables: a variant and what it must show there
// (with a bound, when the claim is one: lossBound).
type claim struct {
	variant variant
	expect  expectation
	bound   *lossBound
}

// claims are the rows measured on one path in one disruption over one protocol: at is
// the scenario they share (its rounds: 0 for the experiment's, 1 where a round does not
// repeat, a drained node's pods not coming back, or takes a minute, a load balancer's
// checks taking nodes out and in).
type claims struct {
	at   scenario
	rows []claim
}

// The rows that recur: the in-cluster paths' matrix (the lab's calibrated 5 s covers
// them, nothing lost over new connections; the adaptive wait and the endpoint hold as
// well), and behind a load balancer with Local, where a node left without a pod (a
// scale-down, a drain) stays in it for three 10 s checks after its pods went: 5 s loses
// requests there, calibrate's delay and the adaptive wait must not.
var (
	inCluster = []claim{{noDelay, fails, nil}, {napBinary, newClean, nil}, {napNative, newClean, nil}, {napAdaptive, newClean, nil}, {holdEndpoints, newClean, nil}}
	lbServed  = []claim{{noDelay, fails, nil}, {napBinary, newClean, nil}, {napNative, newClean, nil}, {napCalibrated, newClean, nil}, {napAdaptive, newClean, nil}, {holdEndpoints, newClean, nil}}
	lbEmptied = []claim{{noDelay, fails, nil}, {napBinary, fails, nil}, {napNative, fails, nil}, {napCalibrated, newClean, nil}, {napAdaptive, newClean, nil}, {holdEndpoints, fails, nil}}
	// The request signal at the ClusterIP, whose clients pin their connections (the
	// webhook does not give it there), and through Traefik, an HTTP proxy that pools
	// (it does: traffic.Path.Pools): nothing lost; how long it holds is the figure.
	withRequests = append(slices.Clip(inCluster), claim{napRequests, newClean, nil})
	// gRPC, WebSockets and event streams: the delay, drain, and both.
	streamed = []claim{{noDelay, fails, nil}, {napBinary, newClean, nil}, {drainOnly, clean, nil}, {napDrain, clean, nil}}
	// The application load balancer with pod targets (#46): it sends over its pool of
	// server connections until it deregisters a pod, 10 s after its endpoint went; the
	// adaptive wait on new connections alone fails there, the request signal does not,
	// nor the calibrated delay (calibrateLoadBalancers measures this path too), nor MIN
	// at it with the request signal, for sparse traffic.
	pooled = []claim{{noDelay, fails, nil}, {napCalibrated, newClean, nil}, {napAdaptive, fails, nil}, {napRequests, newClean, nil}, {napRequestsMin, newClean, nil}}
	// A kubelet's node-pressure eviction or graceful node shutdown keeps the endpoint
	// ready until the app has exited: nap's delay alone only moves the loss.
	leaks = []claim{{noDelay, fails, nil}, {napBinary, fails, nil}}
)

// experiment is what `make e2e-downtime` measures, in this order: the terminations
// kubelets start (before any row installs nap's controller, whose Router takes out
// every pod a kubelet stops), none / nap / native and the other variants on every path
// × disruption, gRPC and held streams, nap by path, the application load balancer with
// pod targets, and last nap's controller in the kubelets' terminations. rounds is the
// rounds of the scenarios that repeat.
func experiment(rounds int) []scenario {
	var scs []scenario
	for _, g := range experimentTables() {
		for _, c := range g.rows {
			sc := g.at
			sc.variant, sc.expect, sc.bound = c.variant, c.expect, c.bound
			if sc.rounds == 0 {
				sc.rounds = rounds
			}
			scs = append(scs, sc)
		}
	}
	return scs
}

// experimentTables are the experiment's rows, each with its claim.
func experimentTables() []claims {
	type s = scenario
	return []claims{
		// The terminations the kubelet starts (kubelet_test.go). An exceeded deadline
		// takes the pod out of its routes as the kubelet stops it: nap's delay covers it.
		// Without one, through the ingress, which learns late, the loss is a race Traefik
		// mostly loses (none lost in 1 run of 10), behind the application load balancer,
		// which sends to a pod 10 s after its endpoint left, a loss by construction
		// (make test's pair). At the ClusterIP it is a race with no claim to hold (0 to
		// 317 per 10,000 in four measurements, 2026-12-06 and 07): no control there, nap's
		// rows claim that its delay loses none.
		{s{path: clusterIPNode1, disruption: deadlineExceeded, rounds: 1}, []claim{{napBinary, newClean, nil}}},
		{s{path: clusterIPNode1, disruption: nodePressure, rounds: 1}, leaks},
		{s{path: clusterIPNode1, disruption: nodeShutdown, rounds: 1}, leaks},
		{s{path: clusterIPNode2, disruption: deadlineExceeded, rounds: 1}, []claim{{napBinary, newClean, nil}}},
		{s{path: clusterIPNode2, disruption: nodePressure, rounds: 1}, leaks},
		{s{path: clusterIPNode2, disruption: nodeShutdown, rounds: 1}, leaks},
		{s{path: viaIngress, disruption: deadlineExceeded, rounds: 1}, []claim{{noDelay, fails, nil}, {napBinary, newClean, nil}}},
		{s{path: lbPods, disruption: deadlineExceeded, rounds: 1}, []claim{{noDelay, fails, nil}, {napPastLag, newClean, nil}}},
		{s{path: viaIngress, disruption: nodePressure, rounds: 1}, leaks},
		{s{path: viaIngress, disruption: nodeShutdown, rounds: 1}, leaks},
		// The same two leaks behind the load balancers: both empty node 2 of the demo
		// service's pods. With Local, node 2 then stays in the load balancer for its
		// checks; with pod targets, each pod until its deregistration.
		{s{path: lbLocal, disruption: nodePressure, rounds: 1}, leaks},
		{s{path: lbLocal, disruption: nodeShutdown, rounds: 1}, leaks},
		{s{path: lbCluster, disruption: nodePressure, rounds: 1}, leaks},
		{s{path: lbCluster, disruption: nodeShutdown, rounds: 1}, leaks},
		{s{path: lbPods, disruption: nodePressure, rounds: 1}, leaks},
		{s{path: lbPods, disruption: nodeShutdown, rounds: 1}, leaks},

		// Every path × disruption; the other variants on the first.
		{s{path: clusterIPNode1, disruption: rollingRestart}, append(slices.Clip(withRequests),
			claim{drainOnly, clean, nil}, claim{napDrain, clean, nil}, claim{viaWebhook, newClean, nil}, claim{viaPolicy, newClean, nil}, claim{napImage, newClean, nil})},
		{s{path: clusterIPNode1, disruption: scaleDown}, inCluster},
		{s{path: clusterIPNode1, disruption: nodeDrain, rounds: 1}, withRequests},
		{s{path: clusterIPNode2, disruption: rollingRestart}, inCluster},
		{s{path: clusterIPNode2, disruption: scaleDown}, inCluster},
		{s{path: clusterIPNode2, disruption: nodeDrain, rounds: 1}, inCluster},
		{s{path: viaIngress, disruption: rollingRestart}, withRequests},
		{s{path: viaIngress, disruption: scaleDown}, inCluster},
		{s{path: viaIngress, disruption: nodeDrain, rounds: 1}, withRequests},
		{s{path: viaGateway, disruption: rollingRestart}, withRequests},
		{s{path: viaGateway, disruption: scaleDown}, inCluster},
		{s{path: viaGateway, disruption: nodeDrain, rounds: 1}, withRequests},
		{s{path: lbLocal, disruption: rollingRestart, rounds: 1}, lbServed},
		{s{path: lbLocal, disruption: scaleDown, rounds: 1}, lbEmptied},
		{s{path: lbLocal, disruption: nodeDrain, rounds: 1}, lbEmptied},
		{s{path: lbCluster, disruption: rollingRestart, rounds: 1}, lbServed},
		{s{path: lbCluster, disruption: scaleDown, rounds: 1}, lbServed},
		{s{path: lbCluster, disruption: nodeDrain, rounds: 1}, lbServed},

		// gRPC at the ClusterIP from node 1 and through the ingress (by host, h2c to the
		// pods).
		{s{path: clusterIPNode1, disruption: rollingRestart, grpc: true}, streamed},
		{s{path: clusterIPNode1, disruption: nodeDrain, grpc: true, rounds: 1}, streamed},
		{s{path: viaIngress, disruption: rollingRestart, grpc: true}, streamed},
		{s{path: viaIngress, disruption: nodeDrain, grpc: true, rounds: 1}, streamed},
		// A headless Service, its name resolved at the cluster DNS: over HTTP at each new
		// connection (kept ones stay on their pod); gRPC's round_robin over its
		// addresses, which learns of a pod's end from its connection (GOAWAY) and of new
		// pods only when it resolves again, at most every grpcResolveEvery. A client
		// that resolved 2 s before the rollout is left without a pod whatever the wait
		// short of that; one older than it learns the new pods at the first GOAWAY.
		{s{path: viaDNS, disruption: rollingRestart}, []claim{{noDelay, newClean, atMost(50)}, {napBinary, newClean, nil}, {napDrain, clean, nil}}},
		{s{path: viaDNS, disruption: scaleDown}, []claim{{noDelay, newClean, atMost(50)}, {napBinary, newClean, nil}, {napDrain, clean, nil}}},
		{s{path: viaDNS, disruption: nodeDrain, rounds: 1}, []claim{{noDelay, newClean, atMost(50)}, {napBinary, newClean, nil}, {napDrain, clean, nil}}},
		{s{path: viaDNS, disruption: rollingRestart, grpc: true, rounds: 1}, []claim{{noDelay, fails, nil}, {napDrain, fails, nil}, {napDrainResolve, clean, nil}}},
		{s{path: viaDNS, disruption: rollingRestart, grpc: true, rounds: 1, aged: grpcResolveEvery + 2*time.Second}, []claim{{noDelay, clean, nil}, {napDrain, clean, nil}}},
		// Held WebSockets and event streams at the ClusterIP from node 1 and through the
		// ingress (Traefik passes /NAMESPACE/ws and /NAMESPACE/events on to the demo app).
		{s{path: clusterIPNode1, disruption: rollingRestart, streams: "websocket"}, streamed},
		{s{path: clusterIPNode1, disruption: rollingRestart, streams: "sse"}, streamed},
		{s{path: clusterIPNode1, disruption: nodeDrain, streams: "websocket", rounds: 1}, streamed},
		{s{path: clusterIPNode1, disruption: nodeDrain, streams: "sse", rounds: 1}, streamed},
		{s{path: viaIngress, disruption: rollingRestart, streams: "websocket"}, streamed},
		{s{path: viaIngress, disruption: rollingRestart, streams: "sse"}, streamed},
		{s{path: viaIngress, disruption: nodeDrain, streams: "websocket", rounds: 1}, streamed},
		{s{path: viaIngress, disruption: nodeDrain, streams: "sse", rounds: 1}, streamed},

		// Each pod the wait of its own paths (nap by path, paths_test.go): the controller
		// keeps a calibration of the ClusterIP, the ingress, the Gateway's route and the
		// load balancer with checks 3 s apart; a rollout and a node drain on each, with
		// the fleet's fixed wait, then with the adaptive wait (each pod's MIN its paths'
		// need), at 200, 2 and 0.2 req/s (NAP_DOWNTIME_RATE). The same paths rolled at
		// once are TestMixedFleet. One installation after the other: each one
		// calibrates anew.
		{s{path: clusterIPNode1, disruption: rollingRestart, rounds: 1}, []claim{{napByPath, newClean, nil}}},
		{s{path: clusterIPNode1, disruption: nodeDrain, rounds: 1}, []claim{{napByPath, newClean, nil}}},
		{s{path: viaIngress, disruption: rollingRestart, rounds: 1}, []claim{{napByPath, newClean, nil}}},
		{s{path: viaIngress, disruption: nodeDrain, rounds: 1}, []claim{{napByPath, newClean, nil}}},
		{s{path: viaGateway, disruption: rollingRestart, rounds: 1}, []claim{{napByPath, newClean, nil}}},
		{s{path: viaGateway, disruption: nodeDrain, rounds: 1}, []claim{{napByPath, newClean, nil}}},
		{s{path: lbLocalSlow, disruption: rollingRestart, rounds: 1}, []claim{{napByPath, newClean, nil}}},
		{s{path: lbLocalSlow, disruption: nodeDrain, rounds: 1}, []claim{{napByPath, newClean, nil}}},
		{s{path: clusterIPNode1, disruption: rollingRestart, rounds: 1}, []claim{{napByPathAdaptive, newClean, nil}}},
		{s{path: clusterIPNode1, disruption: nodeDrain, rounds: 1}, []claim{{napByPathAdaptive, newClean, nil}}},
		{s{path: viaIngress, disruption: rollingRestart, rounds: 1}, []claim{{napByPathAdaptive, newClean, nil}}},
		{s{path: viaIngress, disruption: nodeDrain, rounds: 1}, []claim{{napByPathAdaptive, newClean, nil}}},
		{s{path: viaGateway, disruption: rollingRestart, rounds: 1}, []claim{{napByPathAdaptive, newClean, nil}}},
		{s{path: viaGateway, disruption: nodeDrain, rounds: 1}, []claim{{napByPathAdaptive, newClean, nil}}},
		{s{path: lbLocalSlow, disruption: rollingRestart, rounds: 1}, []claim{{napByPathAdaptive, newClean, nil}}},
		{s{path: lbLocalSlow, disruption: nodeDrain, rounds: 1}, []claim{{napByPathAdaptive, newClean, nil}}},

		// The application load balancer with pod targets; gRPC through it (HTTP/2 on
		// both sides, a call per connection and one shared HTTP/2 connection), and
		// unmodified nginx and go-httpbin in the demo app's place. In the rolling
		// restart, the fleet's fixed 5 s too: shorter than the path's tail, it loses,
		// and its verdicts are the negative control of "a too-short delay reads late or
		// held" (docs/verdict-results.md).
		{s{path: lbPods, disruption: rollingRestart, rounds: 1}, append(slices.Clip(pooled), claim{napBinary, fails, nil})},
		{s{path: lbPods, disruption: rollingRestart, rounds: 1, grpc: true}, pooled},
		{s{path: lbPods, disruption: rollingRestart, rounds: 1, server: nginxServer}, pooled},
		{s{path: lbPods, disruption: rollingRestart, rounds: 1, server: httpbinServer}, pooled},
		{s{path: lbPods, disruption: scaleDown, rounds: 1}, pooled},
		{s{path: lbPods, disruption: scaleDown, rounds: 1, grpc: true}, pooled},
		{s{path: lbPods, disruption: scaleDown, rounds: 1, server: nginxServer}, pooled},
		{s{path: lbPods, disruption: scaleDown, rounds: 1, server: httpbinServer}, pooled},
		{s{path: lbPods, disruption: nodeDrain, rounds: 1}, pooled},
		{s{path: lbPods, disruption: nodeDrain, rounds: 1, grpc: true}, pooled},
		{s{path: lbPods, disruption: nodeDrain, rounds: 1, server: nginxServer}, pooled},
		{s{path: lbPods, disruption: nodeDrain, rounds: 1, server: httpbinServer}, pooled},

		// WebSockets behind the load balancer in a node drain: with Local, the drained
		// node stays in it for three checks after its pods went, and a reconnect sent
		// there finds no pod; drain ends the streams cleanly, the delay must cover the
		// checks.
		{s{path: lbLocal, disruption: nodeDrain, streams: "websocket", rounds: 1}, []claim{{noDelay, fails, nil}, {napDrain, fails, nil}, {napCalibratedDrain, clean, nil}}},
		{s{path: lbCluster, disruption: nodeDrain, streams: "websocket", rounds: 1}, []claim{{noDelay, fails, nil}, {napDrain, clean, nil}, {napCalibratedDrain, clean, nil}}},

		// nap's controller in the kubelets' terminations, last: its webhook gives the
		// hook, its Router takes each pod out of its routes when its kubelet stops it.
		// Behind the load balancer with Local bounds against the control (the leak's row
		// without a delay, above). In an eviction at most half its rate and 50 in
		// 10,000: one round of calibrate can fall an interval short of the checks. In a
		// node shutdown at most half its rate alone: the shutdown gives the pods at most
		// its shutdownGracePeriod less the critical pods' (20 s on the lab), short of the
		// checks (node 2 out 20 to 30 s after its pods stopped), so no delay the node
		// does not grant covers it, and the loss is the checks' phase past the budget
		// (286 per 10,000 against its control's 2,816 in one run; docs/downtime.md).
		{s{path: clusterIPNode1, disruption: nodePressure, rounds: 1}, []claim{{viaWebhook, newClean, nil}}},
		{s{path: clusterIPNode1, disruption: nodeShutdown, rounds: 1}, []claim{{viaWebhook, newClean, nil}}},
		{s{path: clusterIPNode2, disruption: nodePressure, rounds: 1}, []claim{{viaWebhook, newClean, nil}}},
		{s{path: clusterIPNode2, disruption: nodeShutdown, rounds: 1}, []claim{{viaWebhook, newClean, nil}}},
		{s{path: viaIngress, disruption: nodePressure, rounds: 1}, []claim{{viaWebhook, newClean, nil}}},
		{s{path: viaIngress, disruption: nodeShutdown, rounds: 1}, []claim{{viaWebhook, newClean, nil}}},
		{s{path: lbLocal, disruption: nodePressure, rounds: 1}, []claim{{viaWebhookCalibrated, bounded, &lossBound{perTenThousand: 50, ofControl: 0.5}}}},
		{s{path: lbLocal, disruption: nodeShutdown, rounds: 1}, []claim{{viaWebhookCalibrated, bounded, shareOfControl(0.5)}}},
		{s{path: lbCluster, disruption: nodePressure, rounds: 1}, []claim{{viaWebhookCalibrated, newClean, nil}}},
		{s{path: lbCluster, disruption: nodeShutdown, rounds: 1}, []claim{{viaWebhookCalibrated, newClean, nil}}},
		{s{path: lbPods, disruption: nodePressure, rounds: 1}, []claim{{viaWebhookCalibrated, newClean, nil}}},
		{s{path: lbPods, disruption: nodeShutdown, rounds: 1}, []claim{{viaWebhookCalibrated, newClean, nil}}},
	}
}

// calibrateLoadBalancers is napctl calibrate --lb local,cluster on the lab's load
// balancer at its NLB-shaped defaults, and on its pod targets (lbPods), at calibrate's
// default rounds (5), as a user runs it: the delay it recommends. One round gave 24 to
// 29 s where the checks take a node out up to 30 s after its last pod, and the
// calibrated rows lost requests (2026-11-29, docs/downtime.md).
func calibrateLoadBalancers(t *testing.T) string {
	t.Helper()
	rep := runCalibrate(t, "-n", "nap-calibrate-experiment", "--nodeport", "-", "--lb", "local,cluster",
		"--lb-pods-ingress-class", albClass, "--lb-pods-annotation", kube.ALBTargetType+"="+lbPods.checks[kube.ALBTargetType]+","+lbLag+"="+lbPods.checks[lbLag])
	t.Logf("calibrated through the load balancers: %gs, the %s path's tail decides", rep.Delay, rep.Longest)
	return fmt.Sprintf("%gs", rep.Delay)
}

// TestDowntimeExperiment is `make e2e-downtime`: every scenario of experiment,
// NAP_DOWNTIME_ROUNDS rounds each (default 3), its rows into the Markdown table at
// NAP_DOWNTIME_OUT (writeResults: each row replaces the one the table had for its
// scenario and rate, the moment it is measured). It runs only when NAP_DOWNTIME_OUT is
// set: it is an experiment that takes hours, not a check.
// NAP_DOWNTIME_ONLY=SUBSTRING[|SUBSTRING]... runs the scenarios whose "path,
// disruption, variant" contains one of them.
func TestDowntimeExperiment(t *testing.T) {
	out := os.Getenv("NAP_DOWNTIME_OUT")
	if out == "" {
		t.Skip("an experiment: run it with make e2e-downtime")
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("NAP_DOWNTIME_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	only := os.Getenv("NAP_DOWNTIME_ONLY")
	// NAP_DOWNTIME_RATE: the probe's requests per second (default 200); sparse traffic
	// is the adaptive wait's hard case (docs/adaptive.md).
	rate := 200.0
	if r, err := strconv.ParseFloat(os.Getenv("NAP_DOWNTIME_RATE"), 64); err == nil && r > 0 && r <= 200 {
		rate = r
	}
	cs := client(t)
	var b strings.Builder
	order, fresh, mark := experiment(rounds), map[resultKey]string{}, measuredMark()
	installed, uninstall := "", func() {}
	calibrated, stored := "", false
	controls := map[string]probe.Summary{} // the controls measured, by path and disruption
	// NAP_VERDICTS_OUT: the confusion table of nap's verdicts over the rows measured now
	// (writeConfusion), written whole.
	verdictsOut := os.Getenv("NAP_VERDICTS_OUT")
	var judged []judgedRow
	for i, sc := range order {
		if !slices.ContainsFunc(strings.Split(only, "|"), func(o string) bool { return strings.Contains(sc.String(), o) }) {
			continue
		}
		if sc.variant.calibrated {
			if calibrated == "" {
				calibrated = calibrateLoadBalancers(t)
			}
			if sc.variant.webhook {
				sc.variant.annotations = map[string]string{wait.DelayAnnotation: calibrated}
			} else {
				sc.variant.inject = &inject.Options{Mode: inject.ModeBinary, Wait: fixedWait(calibrated)}
			}
			sc.variant.name += " (" + calibrated + ")"
		}
		args := sc.variant.install
		if args == nil {
			args = []string{"--admission", "webhook"}
		}
		if want := strings.Join(args, " "); sc.variant.webhook && installed != want {
			uninstall()
			uninstall = installController(t, cs, args...)
			installed, stored = want, false
		}
		if sc.variant.rollAfterRoutes && !stored { // nap by path: a calibration kept in the cluster
			cal := calibrateStored(t, cs, lbLocalSlow.checks, "--ingress-class", ingressClass, "--ingress-url", strings.TrimSuffix(ingressURL(t, cs, ""), "/"),
				"--gateway", labGateway, "--gateway-url", strings.TrimSuffix(ingressURL(t, cs, ""), "/"))
			t.Logf("kept in the cluster: %+v", cal.Paths)
			stored = true
		}
		if b := sc.bound; b != nil && b.ofControl > 0 && b.control == nil {
			// The bound's control: the row without a delay on the same path, in the same
			// disruption, measured earlier in this run.
			filled := *b
			if c, ok := controls[sc.pathName()+", "+sc.disruption.String()]; ok {
				filled.control = &c
			}
			sc.bound = &filled
		}
		d := measure(t, cs, sc, rate)
		t.Log(d.row())
		if sc.bound != nil {
			t.Logf("%s: a bound: %s; measured %.1f per 10,000", sc, sc.bound, newRate(d.summary))
		}
		if sc.variant.control {
			controls[sc.pathName()+", "+sc.disruption.String()] = d.summary
		}
		line := resultLine(d.row(), rate, heldCell(d.terminations), mark)
		b.WriteString(line + "\n")
		fresh[resultKey{i, rate}] = line
		writeResults(t, out, order, fresh)
		if verdictsOut != "" && len(d.verdicts) > 0 {
			judged = append(judged, judgedRow{d, rate})
			writeConfusion(t, verdictsOut, judged, mark)
		}
		d.check(t)
		// Each scenario's pods go once it is measured: together they would pass a
		// node's pod limit (110) before the experiment ends.
		cs.CoreV1().Namespaces().Delete(context.Background(), d.ns, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	}
	t.Logf("measured now, in %s:\n%s%s", out, resultsHeader, b.String())
}

func intOrPort(p int) intstr.IntOrString { return intstr.FromInt32(int32(p)) }

// adaptiveRequests is the default adaptive wait with the request signal at the WITHIN
// nap's docs recommend (nap.ActiveWithin).
func adaptiveRequests() wait.Wait {
	w := wait.DefaultAdaptive()
	w.Requests = nap.ActiveWithin
	return w
}

// lbPodsMin is the MIN the webhook gives the pods behind lbPods with a stored
// calibration: the lab's calibrated delay of that path (its 10 s lag, a tail of 10.3 to
// 11.0 s, plus the margin: 13 s).
const lbPodsMin = 13 * time.Second

// fixedWait is the fixed wait of --delay s.
func fixedWait(s string) wait.Wait {
	w, err := wait.Input{Delay: s}.Wait()
	if err != nil {
		panic(err)
	}
	return w
}

// TestClaim: each row's claim can fail, and holds only where the measurement shows it.
func TestClaim(t *testing.T) {
	summary := func(failedNew, newRequests, failedKept int) probe.Summary {
		return probe.Summary{Total: probe.Counts{Requests: 2 * newRequests, Failed: failedNew + failedKept},
			Modes: map[probe.Mode]*probe.Counts{probe.New: {Requests: newRequests, Failed: failedNew}, probe.Reuse: {Requests: newRequests, Failed: failedKept}}}
	}
	control := summary(77, 785, 0) // a lab run's control: 981 per 10,000
	ofControl := func(c probe.Summary) *lossBound { return &lossBound{perTenThousand: 50, ofControl: 0.1, control: &c} }
	b := ofControl(control)
	withControl := func(b *lossBound, c probe.Summary) *lossBound { b.control = &c; return b }
	for _, c := range []struct {
		name   string
		expect expectation
		bound  *lossBound
		got    probe.Summary
		want   bool // the claim holds
	}{
		{"the control lost some", fails, nil, summary(3, 1400, 0), true},
		{"the control lost some over kept connections only", fails, nil, summary(0, 1400, 2), true},
		{"the control lost nothing", fails, nil, summary(0, 1400, 0), false},
		{"none lost over new connections", newClean, nil, summary(0, 1400, 2), true},
		{"one lost over a new connection", newClean, nil, summary(1, 1400, 0), false},
		{"none lost at all", clean, nil, summary(0, 1400, 0), true},
		{"one lost over a kept connection", clean, nil, summary(0, 1400, 1), false},
		{"a bound with none lost", clean, b, summary(0, 1400, 0), true},
		{"CI's worst: 3 of 1,783", clean, b, summary(3, 1783, 0), true},
		{"above 50 per 10,000", clean, b, summary(8, 1400, 0), false},
		{"a bound, a kept connection lost one", clean, b, summary(0, 1400, 1), false},
		{"a bound, a kept connection lost one, newClean", newClean, b, summary(0, 1400, 1), true},
		{"above a tenth of the control", clean, ofControl(summary(10, 1000, 0)), summary(2, 1400, 0), false},
		{"a control that lost nothing", clean, ofControl(summary(0, 800, 0)), summary(0, 1400, 0), false},
		{"no control measured in the run", bounded, &lossBound{perTenThousand: 50, ofControl: 0.5}, summary(0, 1400, 0), false},
		{"at most 200 per 10,000: 3 of 912", bounded, atMost(200), summary(3, 912, 5), true},
		{"at most 200 per 10,000: 30 of 912", bounded, atMost(200), summary(30, 912, 0), false},
		{"a bound with no bound", bounded, nil, summary(0, 1400, 0), false},
		// The node shutdown's row behind Local (2026-12-07): 90 of about 3,143 over new
		// connections (286 per 10,000), its control 748 of 2,656 (2,816).
		{"half the control's rate, no bound of its own: 90 of 3,143", bounded, withControl(shareOfControl(0.5), summary(748, 2656, 0)), summary(90, 3143, 1), true},
		{"half the control's rate, no bound of its own: 500 of 3,143", bounded, withControl(shareOfControl(0.5), summary(748, 2656, 0)), summary(500, 3143, 0), false},
	} {
		d := downtime{scenario: scenario{path: clusterIPNode1, disruption: rollingRestart, variant: variant{name: c.name}, expect: c.expect, bound: c.bound}, summary: c.got}
		if p := d.problem(); (p == "") != c.want {
			t.Errorf("%s: problem() = %q, want the claim to hold: %v", c.name, p, c.want)
		}
	}
}

// TestExperimentRows: every row of the experiment names a claim a measurement can break
// (a bound has its bound), and no two rows measure the same scenario.
func TestExperimentRows(t *testing.T) {
	seen := map[string]bool{}
	for _, sc := range experiment(3) {
		if sc.rounds < 1 || sc.expect == bounded && sc.bound == nil || sc.bound != nil && sc.expect == fails {
			t.Errorf("%s: %d rounds, claim %s, bound %v", sc, sc.rounds, sc.expect, sc.bound)
		}
		if seen[sc.String()] {
			t.Errorf("%s: measured twice", sc)
		}
		seen[sc.String()] = true
	}
}
