package main

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/kube"
)

// An Ingress of the class alb gets an application (L7) load balancer with the pods as
// its targets, as the AWS Load Balancer Controller gives it an ALB in IP mode
// (alb.ingress.kubernetes.io/target-type: ip, on the Ingress or on its Service; the
// ALB's default, instance, sends to the nodes and is not imitated): HAProxy in HTTP
// mode sends each request to a pod address from the Service's EndpointSlices, over
// server connections it keeps and reuses for any client (http-reuse always), so that a
// pod sees few new connections whatever the clients do. Its address goes to the
// Ingress's status.loadBalancer.ingress. An ALB listens on 80 (the Ingress's backend
// port behind it); a port of the Service whose appProtocol is kubernetes.io/h2c (gRPC)
// gets a listener of its own at its own number, HTTP/2 on both sides (an ALB's gRPC
// target group, without the TLS an ALB's gRPC listener needs).
//
// Like the cloud's, it learns that a pod leaves late: a target leaves the load balancer
// only when the cloud's controller deregisters it, deregistrationLag after its pod's
// endpoint stopped being ready (the AWS Load Balancer Controller and ingress-gce apply
// endpoint changes through the cloud's API: users report 10 s to 2 min,
// aws-load-balancer-controller #2366 and #1719, ingress-gce #583; the default 20 s is
// what was seen by hand on this lab's reproduction), or when its own health checks of
// the pod fail (an ALB's target group defaults: GET / every 30 s, unhealthy after 2;
// the lab's annotations as for nodes, on the Ingress or its Service, the Service's
// first, as the AWS controller reads a target group's). A deregistered target gets no
// new request; its connections are closed after the deregistration delay. A ready pod
// is a target at once: the cloud's pod readiness gate would have made the rollout wait
// until it was healthy.
const (
	annDeregistrationL = annotationPrefix + "deregistration-lag" // how long after its endpoint is not ready a pod stops getting requests
	// albController is the controller of the IngressClass alb, the AWS Load Balancer
	// Controller's.
	albController = "ingress.k8s.aws/alb"
	// albListener is the port an ALB listens on for HTTP.
	albListener = 80
	// podSlots are the servers of a backend that pods take in turn (HAProxy's
	// server-template): more than the lab ever runs of a Service at once, surge included.
	podSlots = 32
)

// podTimings are the defaults of a load balancer with pod targets: an ALB target
// group's health checks, the deregistration lag seen by hand.
var podTimings = timings{Interval: 30 * time.Second, Unhealthy: 2, Healthy: 5, Deregistration: 300 * time.Second, Lag: 20 * time.Second}

// ensureClass creates the IngressClass of the application load balancers, as the AWS
// Load Balancer Controller's chart does, unless there is one.
func (c *controller) ensureClass(ctx context.Context) error {
	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: c.albClass}, Spec: networkingv1.IngressClassSpec{Controller: albController}}
	_, err := c.cs.NetworkingV1().IngressClasses().Create(ctx, class, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// ensureALB makes ing's application load balancer match ing, its Service and the
// Service's ready pods, and ing's status name its address.
func (c *controller) ensureALB(ctx context.Context, ing *networkingv1.Ingress) error {
	name, port, err := albBackend(ing)
	if err != nil {
		return err
	}
	svc, err := c.cs.CoreV1().Services(ing.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	a := maps.Clone(ing.Annotations)
	if a == nil {
		a = map[string]string{}
	}
	maps.Copy(a, svc.Annotations)
	if v := a[kube.ALBTargetType]; v != "ip" {
		return fmt.Errorf("Service %s: %s %q: the lab's application load balancer sends to the pods (ip) only; instance, the default, sends to the nodes", name, kube.ALBTargetType, v)
	}
	t, err := c.timings(podTimings, a)
	if err != nil {
		return err
	}
	listeners, err := albListeners(svc, port)
	if err != nil {
		return err
	}
	var had []string
	for _, in := range ing.Status.LoadBalancer.Ingress {
		had = append(had, in.IP)
	}
	b, err := c.balancer("Ingress "+ing.Namespace+"/"+ing.Name, ing.Namespace+"_"+ing.Name, had)
	if err != nil {
		return err
	}
	b.t = t
	sync := func() error { return c.syncPods(ctx, b, svc, listeners) }
	if err := c.configure(b, renderPods(b, listeners, t), "pod targets of Service "+name, sync); err != nil {
		return err
	}
	want := []networkingv1.IngressLoadBalancerIngress{{IP: b.vip.String()}}
	if len(ing.Status.LoadBalancer.Ingress) == 1 && ing.Status.LoadBalancer.Ingress[0].IP == want[0].IP {
		return nil
	}
	ing = ing.DeepCopy()
	ing.Status.LoadBalancer.Ingress = want
	_, err = c.cs.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(ctx, ing, metav1.UpdateOptions{})
	return err
}

// albBackend is the Service and port ing sends to: the lab's application load balancer
// has one target group, so ing names one backend (its default, or in its rules).
func albBackend(ing *networkingv1.Ingress) (string, networkingv1.ServiceBackendPort, error) {
	var backends []*networkingv1.IngressServiceBackend
	if b := ing.Spec.DefaultBackend; b != nil && b.Service != nil {
		backends = append(backends, b.Service)
	}
	for _, r := range ing.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			if p.Backend.Service != nil {
				backends = append(backends, p.Backend.Service)
			}
		}
	}
	if len(backends) == 0 {
		return "", networkingv1.ServiceBackendPort{}, fmt.Errorf("no Service backend")
	}
	for _, b := range backends[1:] {
		if *b != *backends[0] {
			return "", networkingv1.ServiceBackendPort{}, fmt.Errorf("backends %s and %s: the lab's application load balancer has one target group", backends[0].Name, b.Name)
		}
	}
	return backends[0].Name, backends[0].Port, nil
}

// listener is a port the load balancer listens on and the Service port it sends to.
type listener struct {
	port int32
	to   corev1.ServicePort
}

// h2c tells whether p's appProtocol is HTTP/2 in clear text (gRPC).
func h2c(p corev1.ServicePort) bool {
	return p.AppProtocol != nil && *p.AppProtocol == "kubernetes.io/h2c"
}

// albListeners are the listeners of an application load balancer to svc's port: 80 to
// it, and each other TCP port of svc that speaks HTTP/2 in clear text at its number.
func albListeners(svc *corev1.Service, port networkingv1.ServiceBackendPort) ([]listener, error) {
	var out []listener
	found := false
	for _, p := range tcpPorts(svc) {
		switch {
		case port.Name != "" && p.Name == port.Name || port.Name == "" && p.Port == port.Number:
			out = append(out, listener{port: albListener, to: p})
			found = true
		case h2c(p):
			out = append(out, listener{port: p.Port, to: p})
		}
	}
	if !found {
		return nil, fmt.Errorf("Service %s has no TCP port %s", svc.Name, cmp.Or(port.Name, strconv.Itoa(int(port.Number))))
	}
	return out, nil
}

// tcpPorts are s's TCP ports: one frontend and backend each.
func tcpPorts(s *corev1.Service) []corev1.ServicePort {
	var out []corev1.ServicePort
	for _, p := range s.Spec.Ports {
		if p.Protocol == corev1.ProtocolTCP || p.Protocol == "" {
			out = append(out, p)
		}
	}
	return out
}

// backendName is the frontend's and backend's name of port p.
func backendName(p corev1.ServicePort) string { return fmt.Sprintf("port%d", p.Port) }

// target is one pod address in one backend's slot.
type target struct {
	slot      int
	notReady  time.Time // when its endpoint was first seen not ready (or gone); zero while ready
	drainedAt time.Time // when it was deregistered; zero before
}

// renderPods is the configuration of a load balancer with pod targets: per listener, a
// frontend and a backend of podSlots servers, every one out of service until a pod
// takes it.
func renderPods(b *balancer, listeners []listener, t timings) string {
	var w strings.Builder
	fmt.Fprintf(&w, `# %s: written by hack/lb, pod targets (L7)
global
  daemon
  maxconn 4000
  stats socket %s mode 600 level admin
defaults
  mode http
  option http-keep-alive
  # One pool of server connections for every client, as an L7 load balancer keeps.
  http-reuse always
  timeout connect 5s
  timeout client 1h
  timeout server 1h
  # An ALB's idle timeout.
  timeout http-keep-alive 60s
  timeout check %s
  # A request that fails is the client's: no resend to another target.
  retries 0
`, b.key, filepath.Join(b.dir, "admin.sock"), min(t.Interval, 5*time.Second))
	for _, l := range listeners {
		name := backendName(l.to)
		// HTTP/2 in clear text (gRPC): HTTP/2 on both sides, each pod's requests
		// multiplexed over the connections kept to it (an ALB's gRPC target group); its
		// health check a TCP connection.
		h2, check := "", "  option httpchk GET /\n  http-check expect status 200\n"
		if h2c(l.to) {
			h2, check = " proto h2", ""
		}
		fmt.Fprintf(&w, "frontend %s\n  bind %s%s\n  default_backend %s\n", name, net.JoinHostPort(b.vip.String(), strconv.Itoa(int(l.port))), h2, name)
		// Random, as an ALB's weighted_random: round robin aliases with clients that send
		// at fixed rates (two of them, interleaved, would each always find the same pods).
		fmt.Fprintf(&w, "backend %s\n  balance random\n%s", name, check)
		fmt.Fprintf(&w, "  default-server check inter %dms fall %d rise %d%s\n", t.Interval.Milliseconds(), t.Unhealthy, t.Healthy, h2)
		fmt.Fprintf(&w, "  server-template pod 1-%d 127.0.0.1:1 disabled\n", podSlots)
	}
	return w.String()
}

// syncPods registers b's ready pod addresses and deregisters those whose endpoint has
// not been ready for the lag, on the backend of each of s's ports that listeners send to.
func (c *controller) syncPods(ctx context.Context, b *balancer, s *corev1.Service, listeners []listener) error {
	eps, err := c.cs.DiscoveryV1().EndpointSlices(s.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + s.Name})
	if err != nil {
		return err
	}
	for _, l := range listeners {
		p := l.to
		be := backendName(p)
		ready := readyAddresses(eps.Items, p.Name)
		if b.targets[be] == nil {
			b.targets[be] = map[string]*target{}
		}
		if err := c.syncBackend(b, be, ready); err != nil {
			return err
		}
	}
	return nil
}

// readyAddresses are the IP:port of the ready endpoints of the port named port.
func readyAddresses(eps []discoveryv1.EndpointSlice, port string) map[string]bool {
	out := map[string]bool{}
	for _, es := range eps {
		var num int32
		for _, p := range es.Ports {
			if p.Name != nil && *p.Name == port && p.Port != nil {
				num = *p.Port
			}
		}
		if num == 0 {
			continue
		}
		for _, e := range es.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				out[net.JoinHostPort(a, strconv.Itoa(int(num)))] = true
			}
		}
	}
	return out
}

func (c *controller) syncBackend(b *balancer, be string, ready map[string]bool) error {
	targets := b.targets[be]
	now := time.Now()
	for addr, tg := range targets {
		id := fmt.Sprintf("%s/pod%d", be, tg.slot)
		switch {
		case ready[addr] && tg.drainedAt.IsZero():
			tg.notReady = time.Time{}
		case ready[addr]:
			// Its address is a ready pod's again (a new pod given a freed address, as the
			// CNI's allocator does once it wrapped around): a target once more.
			if err := c.commands(b, "set server "+id+" state ready", "set server "+id+" health up"); err != nil {
				return err
			}
			tg.notReady, tg.drainedAt = time.Time{}, time.Time{}
			log.Printf("%s: %s (%s) registered again", b.key, id, addr)
		case tg.notReady.IsZero():
			tg.notReady = now
		case tg.drainedAt.IsZero() && now.Sub(tg.notReady) >= b.t.Lag:
			if err := c.commands(b, "set server "+id+" state drain"); err != nil {
				return err
			}
			tg.drainedAt = now
			log.Printf("%s: %s (%s) deregistered, %v after its endpoint was not ready", b.key, id, addr, now.Sub(tg.notReady).Round(100*time.Millisecond))
		case !tg.drainedAt.IsZero() && now.Sub(tg.drainedAt) >= b.t.Deregistration:
			if err := c.commands(b, "shutdown sessions server "+id, "set server "+id+" state maint"); err != nil {
				return err
			}
			delete(targets, addr)
			log.Printf("%s: %s (%s) out for %v: its connections closed, its slot free", b.key, id, addr, b.t.Deregistration)
		}
	}
	var add []string
	for addr := range ready {
		if targets[addr] == nil {
			add = append(add, addr)
		}
	}
	slices.Sort(add)
	for _, addr := range add {
		slot := freeSlot(targets)
		if slot == 0 {
			return fmt.Errorf("%s: no slot left for %s: more than %d targets", be, addr, podSlots)
		}
		host, port, _ := net.SplitHostPort(addr)
		id := fmt.Sprintf("%s/pod%d", be, slot)
		if err := c.commands(b, "set server "+id+" addr "+host+" port "+port, "set server "+id+" state ready", "set server "+id+" health up"); err != nil {
			return err
		}
		targets[addr] = &target{slot: slot}
		log.Printf("%s: %s (%s) registered", b.key, id, addr)
	}
	return nil
}

// commands sends cmds to b's HAProxy in turn; an answer other than silence or a change
// made ("IP changed from ...", "no need to change the addr") is an error.
func (c *controller) commands(b *balancer, cmds ...string) error {
	for _, cmd := range cmds {
		out, err := c.socket(b, cmd)
		if out = strings.TrimSpace(out); err != nil || out != "" && !strings.Contains(out, "changed") && !strings.Contains(out, "no need") {
			return fmt.Errorf("%s: %q: %v %s", b.key, cmd, err, out)
		}
	}
	return nil
}

// freeSlot is the lowest slot no target holds, 0 when none is free.
func freeSlot(targets map[string]*target) int {
	used := map[int]bool{}
	for _, t := range targets {
		used[t.slot] = true
	}
	for i := 1; i <= podSlots; i++ {
		if !used[i] {
			return i
		}
	}
	return 0
}
