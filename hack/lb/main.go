package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nap-k8s/nap/hack/lb/connlog"
)

// The annotations a Service sets its load balancer's timings with.
const (
	annotationPrefix   = "lb.lab.nap.dev/"
	annInterval        = annotationPrefix + "health-check-interval" // a duration
	annUnhealthy       = annotationPrefix + "unhealthy-threshold"   // failed checks that take a node out
	annHealthy         = annotationPrefix + "healthy-threshold"     // passed checks that bring it back
	annDeregistration  = annotationPrefix + "deregistration-delay"  // how long a node out keeps its open connections
	excludeFromLBLabel = "node.kubernetes.io/exclude-from-external-load-balancers"
	// nlbTargetType is AWS's annotation by which an NLB sends to the pods (ip) rather
	// than to the nodes (instance).
	nlbTargetType = "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"
	// kubeProxyHealthPort is kube-proxy's /healthz, what a cloud load balancer checks
	// with externalTrafficPolicy Cluster.
	kubeProxyHealthPort = 10256
)

// timings are a load balancer's health checking and deregistration.
type timings struct {
	Interval       time.Duration
	Unhealthy      int
	Healthy        int
	Deregistration time.Duration
	// Lag: pod targets only, how long after its endpoint is not ready a pod is
	// deregistered.
	Lag time.Duration
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the cluster's kubeconfig")
	netns := flag.String("netns", "nap-lb", "the load balancer's network namespace (ip netns)")
	cidr := flag.String("range", "10.77.1.0/24", "the load balancers' addresses (the first ten are the network's own)")
	dir := flag.String("dir", "", "where each load balancer's HAProxy configuration, socket and pid live")
	haproxy := flag.String("haproxy", "haproxy", "the HAProxy binary")
	def := timings{}
	flag.DurationVar(&def.Interval, "interval", 10*time.Second, "default health check interval")
	flag.IntVar(&def.Unhealthy, "unhealthy", 3, "default failed checks before a node is out")
	flag.IntVar(&def.Healthy, "healthy", 3, "default passed checks before a node is in")
	flag.DurationVar(&def.Deregistration, "deregistration-delay", 300*time.Second, "default time a node out keeps its open connections")
	source := flag.String("source", "", "the address the network load balancers connect to the nodes from, their network namespace's own (hack/cluster.sh's LB_IP)")
	ports := flag.String("source-ports", "10000-60999", "the source ports they take in turn, each at most once per round of the range (HAProxy's source port range)")
	albClass := flag.String("alb-class", "alb", "the IngressClass whose Ingresses get an application load balancer with pod targets, as the AWS Load Balancer Controller's")
	flag.Parse()
	if *dir == "" || *source == "" {
		log.Fatal("--dir and --source are required")
	}
	prefix, err := netip.ParsePrefix(*cidr)
	if err != nil {
		log.Fatalf("--range: %v", err)
	}
	src, err := sourceRange(*source, *ports)
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &controller{cs: cs, netns: *netns, prefix: prefix, dir: *dir, haproxy: *haproxy, def: def, albClass: *albClass, source: src,
		running: map[string]*balancer{}}
	if err := c.ensureClass(ctx); err != nil {
		log.Fatal(err)
	}
	c.run(ctx)
	c.stopAll()
}

// controller keeps one balancer per LoadBalancer Service and per Ingress of albClass.
type controller struct {
	cs       kubernetes.Interface
	netns    string
	prefix   netip.Prefix
	dir      string
	haproxy  string
	def      timings
	albClass string
	// source is HAProxy's source for the connections to the nodes: an address and a
	// range of ports (sourceRange).
	source  string
	running map[string]*balancer // "Service NAMESPACE/NAME" or "Ingress NAMESPACE/NAME" → its balancer
}

// balancer is one Service's or Ingress's HAProxy.
type balancer struct {
	key    string
	vip    netip.Addr
	dir    string
	config string
	down   map[string]time.Time // server → when it was first seen out of service
	closed map[string]bool      // server → its sessions were shut down after the deregistration delay
	t      timings
	// pods: the pods are the targets (L7); targets: backend → pod address → its slot.
	pods    bool
	targets map[string]map[string]*target
}

// run reconciles every 500 ms until ctx ends: a lab has a few Services, and a poll
// cannot miss an event.
func (c *controller) run(ctx context.Context) {
	for {
		if err := c.reconcile(ctx); err != nil && ctx.Err() == nil {
			log.Printf("reconcile: %v", err)
		}
		c.deregister()
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (c *controller) reconcile(ctx context.Context) error {
	svcs, err := c.cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	nodes, err := c.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var addrs []backend
	for _, n := range nodes.Items {
		if _, excluded := n.Labels[excludeFromLBLabel]; excluded {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				addrs = append(addrs, backend{name: n.Name, addr: a.Address})
				break
			}
		}
	}
	slices.SortFunc(addrs, func(a, b backend) int { return strings.Compare(a.name, b.name) })
	want := map[string]bool{}
	var errs []error
	for i := range svcs.Items {
		s := &svcs.Items[i]
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer || s.Spec.LoadBalancerClass != nil || s.DeletionTimestamp != nil {
			continue
		}
		key := "Service " + s.Namespace + "/" + s.Name
		want[key] = true
		if err := c.ensure(ctx, s, addrs); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	ings, err := c.cs.NetworkingV1().Ingresses("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for i := range ings.Items {
		ing := &ings.Items[i]
		if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != c.albClass || ing.DeletionTimestamp != nil {
			continue
		}
		key := "Ingress " + ing.Namespace + "/" + ing.Name
		want[key] = true
		if err := c.ensureALB(ctx, ing); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	for key, b := range c.running {
		if !want[key] {
			c.remove(b)
			delete(c.running, key)
			log.Printf("%s: removed %s", key, b.vip)
		}
	}
	return errors.Join(errs...)
}

type backend struct{ name, addr string }

// ensure makes s's balancer match s and the nodes, and s's status name its address: a
// network load balancer with the nodes as its targets.
func (c *controller) ensure(ctx context.Context, s *corev1.Service, nodes []backend) error {
	if v, ok := s.Annotations[nlbTargetType]; ok && v != "instance" {
		// An NLB in IP mode sends each connection to a pod: not imitated here, and
		// serving its Service with node targets would measure another path.
		return fmt.Errorf("%s: %q: the lab's network load balancer has the nodes as targets only", nlbTargetType, v)
	}
	t, err := c.timings(c.def, s.Annotations)
	if err != nil {
		return err
	}
	var had []string
	for _, in := range s.Status.LoadBalancer.Ingress {
		had = append(had, in.IP)
	}
	b, err := c.balancer("Service "+s.Namespace+"/"+s.Name, s.Namespace+"_"+s.Name, had)
	if err != nil {
		return err
	}
	b.t = t
	if err := c.configure(b, render(b, s, nodes, t, c.source), fmt.Sprintf("(%s), nodes %v", s.Spec.ExternalTrafficPolicy, nodes), nil); err != nil {
		return err
	}
	want := []corev1.LoadBalancerIngress{{IP: b.vip.String(), IPMode: ptrTo(corev1.LoadBalancerIPModeProxy)}}
	if len(s.Status.LoadBalancer.Ingress) == 1 && s.Status.LoadBalancer.Ingress[0].IP == want[0].IP &&
		s.Status.LoadBalancer.Ingress[0].IPMode != nil && *s.Status.LoadBalancer.Ingress[0].IPMode == corev1.LoadBalancerIPModeProxy {
		return nil
	}
	// ipMode Proxy: kube-proxy does not short-circuit the address to the Service's
	// endpoints, so that traffic to it goes through the load balancer, as a cloud's
	// proxying load balancer's does.
	s = s.DeepCopy()
	s.Status.LoadBalancer.Ingress = want
	_, err = c.cs.CoreV1().Services(s.Namespace).UpdateStatus(ctx, s, metav1.UpdateOptions{})
	return err
}

// balancer is the running balancer of key, its files in dir under the controller's;
// a new one is given an address (the first of had, the addresses its object's status
// names, when it is free) on the load balancer's network.
func (c *controller) balancer(key, dir string, had []string) (*balancer, error) {
	if b := c.running[key]; b != nil {
		return b, nil
	}
	dir = filepath.Join(c.dir, dir)
	for other, b := range c.running {
		if b.dir == dir {
			return nil, fmt.Errorf("its load balancer's files would be %s's (%s): the lab keeps one load balancer a name in a namespace", other, dir)
		}
	}
	vip, err := c.allocate(had)
	if err != nil {
		return nil, err
	}
	b := &balancer{key: key, vip: vip, dir: dir, down: map[string]time.Time{}, closed: map[string]bool{}}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return nil, err
	}
	if err := c.ip("addr", "replace", vip.String()+"/32", "dev", "lo"); err != nil {
		return nil, err
	}
	c.running[key] = b
	return b, nil
}

// configure makes b's HAProxy run config (what says what it is, for the log); with
// pod targets (sync), sync then registers the ready pods and deregisters the gone.
func (c *controller) configure(b *balancer, config, what string, sync func() error) error {
	b.pods = sync != nil
	if config != b.config {
		if err := c.start(b, config); err != nil {
			return err
		}
		b.targets = map[string]map[string]*target{} // a new HAProxy: every pod slot free
		log.Printf("%s: HAProxy on %s, %s, %+v", b.key, b.vip, what, b.t)
	}
	if sync != nil {
		return sync()
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// timings are def with what the annotations a set.
func (c *controller) timings(def timings, a map[string]string) (timings, error) {
	t := def
	var err error
	dur := func(k string, d *time.Duration) {
		if v, ok := a[k]; ok && err == nil {
			if *d, err = time.ParseDuration(v); err == nil && *d <= 0 {
				err = fmt.Errorf("%s: %q is not positive", k, v)
			}
		}
	}
	num := func(k string, n *int) {
		if v, ok := a[k]; ok && err == nil {
			if *n, err = strconv.Atoi(v); err == nil && *n <= 0 {
				err = fmt.Errorf("%s: %q is not positive", k, v)
			}
		}
	}
	dur(annInterval, &t.Interval)
	num(annUnhealthy, &t.Unhealthy)
	num(annHealthy, &t.Healthy)
	dur(annDeregistration, &t.Deregistration)
	dur(annDeregistrationL, &t.Lag)
	return t, err
}

// allocate gives a load balancer an address: the first of had (what its object's status
// names) that is free and in range, else the first free one after the network's own ten.
func (c *controller) allocate(had []string) (netip.Addr, error) {
	taken := map[netip.Addr]bool{}
	for _, b := range c.running {
		taken[b.vip] = true
	}
	for _, ip := range had {
		if a, err := netip.ParseAddr(ip); err == nil && c.prefix.Contains(a) && !taken[a] {
			return a, nil
		}
	}
	a := c.prefix.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	for ; c.prefix.Contains(a); a = a.Next() {
		if !taken[a] && c.prefix.Contains(a.Next()) { // not the broadcast address
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no address left in %s", c.prefix)
}

// render is b's HAProxy configuration: TCP, like a network load balancer, a frontend
// and a backend per port, every node a server checked over HTTP at the port a cloud
// load balancer checks, each connection logged (package connlog), each from source
// (sourceRange).
func render(b *balancer, s *corev1.Service, nodes []backend, t timings, source string) string {
	checkPort := kubeProxyHealthPort
	if s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal && s.Spec.HealthCheckNodePort != 0 {
		checkPort = int(s.Spec.HealthCheckNodePort)
	}
	ring, logs := connlog.Config()
	var w strings.Builder
	fmt.Fprintf(&w, `# %s: written by hack/lb
global
  daemon
  maxconn 4000
  stats socket %s mode 600 level admin
  server-state-file %s
%sdefaults
  mode tcp
%s  load-server-state-from-file global
  timeout connect 5s
  timeout client 1h
  timeout server 1h
  timeout check %s
  # A network load balancer forwards a connection once: no retry on another node.
  retries 0
`, b.key, filepath.Join(b.dir, "admin.sock"), filepath.Join(b.dir, "state"), ring, logs, min(t.Interval, 5*time.Second))
	for _, p := range tcpPorts(s) {
		if p.NodePort == 0 {
			continue
		}
		name := backendName(p)
		fmt.Fprintf(&w, "frontend %s\n  bind %s\n  default_backend %s\n", name, net.JoinHostPort(b.vip.String(), strconv.Itoa(int(p.Port))), name)
		fmt.Fprintf(&w, "backend %s\n  # A flow hash spreads connections as a network load balancer does: at random.\n  balance random\n  option httpchk GET /healthz\n  http-check expect status 200\n", name)
		fmt.Fprintf(&w, "  # Each node's source ports in turn, as a cloud load balancer's translation pool\n  # gives them: not the kernel's choice, which gave a port back within seconds.\n")
		fmt.Fprintf(&w, "  default-server check port %d inter %dms fall %d rise %d source %s\n", checkPort, t.Interval.Milliseconds(), t.Unhealthy, t.Healthy, source)
		for _, n := range nodes {
			fmt.Fprintf(&w, "  server %s %s\n", n.name, net.JoinHostPort(n.addr, strconv.Itoa(int(p.NodePort))))
		}
	}
	return w.String()
}

// sourceRange is HAProxy's source for the network load balancers' connections to the
// nodes: addr, and the ports HAProxy takes in turn (a port comes back only after every
// other of the range has been used: HAProxy keeps the free ones in a ring). Left to the
// kernel, which picks each port from a hash of the destination with a few bits of
// randomness, one address's connections to a node reused a port within seconds: a new
// connection then matched a conntrack entry its node still kept of the old one, in
// CLOSE for 10 s, and followed that entry's translation to a pod that had gone (a CI
// run's TestMixedFleet lost a request so, 2026-12-07). A cloud load balancer keeps its
// clients' addresses, or gives ports from a pool; at the lab's 200 connections a
// second, 51,000 ports come back after about 4 minutes.
func sourceRange(addr, ports string) (string, error) {
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is4() {
		return "", fmt.Errorf("--source %q: not an IPv4 address", addr)
	}
	lo, hi, ok := strings.Cut(ports, "-")
	l, errL := strconv.Atoi(lo)
	h, errH := strconv.Atoi(hi)
	if !ok || errL != nil || errH != nil || l < 1024 || h > 65535 || l > h {
		return "", fmt.Errorf("--source-ports %q: want LOW-HIGH within 1024-65535", ports)
	}
	return fmt.Sprintf("%s:%d-%d", a, l, h), nil
}

// start runs b's HAProxy with config in the load balancer's network namespace: the
// first time, with every node out of service until its checks pass (a new target is not
// sent to before it is healthy); over a running one (-sf), with the servers' states
// carried over, the old process finishing its connections.
func (c *controller) start(b *balancer, config string) error {
	cfgPath := filepath.Join(b.dir, "haproxy.cfg")
	pidPath := filepath.Join(b.dir, "haproxy.pid")
	old, _ := os.ReadFile(pidPath)
	fresh := len(old) == 0
	if fresh {
		if err := os.WriteFile(filepath.Join(b.dir, "state"), nil, 0o644); err != nil {
			return err
		}
	} else {
		state, err := c.socket(b, "show servers state")
		if err != nil {
			return fmt.Errorf("saving the servers' state: %w", err)
		}
		if err := os.WriteFile(filepath.Join(b.dir, "state"), []byte(state), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		return err
	}
	args := []string{"--net=/run/netns/" + c.netns, c.haproxy, "-f", cfgPath, "-p", pidPath}
	if !fresh {
		args = append(args, "-sf", strings.TrimSpace(string(old)))
	}
	if out, err := exec.Command("nsenter", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("haproxy: %v: %s", err, out)
	}
	b.config = config
	if fresh && !b.pods {
		servers, err := c.servers(b)
		if err != nil {
			return err
		}
		for _, s := range servers {
			if _, err := c.socket(b, "set server "+s.backend+"/"+s.name+" health down"); err != nil {
				return err
			}
		}
	}
	return nil
}

// server is one line of `show servers state`.
type server struct {
	backend, name string
	up            bool
}

func (c *controller) servers(b *balancer) ([]server, error) {
	out, err := c.socket(b, "show servers state")
	if err != nil {
		return nil, err
	}
	var servers []server
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		// be_id be_name srv_id srv_name srv_addr srv_op_state ...; op state 2 is running.
		if len(f) < 6 || strings.HasPrefix(line, "#") || f[0] == "1" && len(f) == 1 {
			continue
		}
		if _, err := strconv.Atoi(f[0]); err != nil {
			continue
		}
		servers = append(servers, server{backend: f[1], name: f[3], up: f[5] == "2"})
	}
	return servers, nil
}

// deregister closes the sessions of every server out of service for longer than its
// balancer's deregistration delay, once.
func (c *controller) deregister() {
	for _, b := range c.running {
		if b.pods { // syncPods deregisters its own
			continue
		}
		servers, err := c.servers(b)
		if err != nil {
			continue
		}
		for _, s := range servers {
			id := s.backend + "/" + s.name
			if s.up {
				delete(b.down, id)
				delete(b.closed, id)
				continue
			}
			if _, ok := b.down[id]; !ok {
				b.down[id] = time.Now()
			}
			if !b.closed[id] && time.Since(b.down[id]) >= b.t.Deregistration {
				if _, err := c.socket(b, "shutdown sessions server "+id); err == nil {
					b.closed[id] = true
					log.Printf("%s: %s out for %v: its connections closed", b.key, id, b.t.Deregistration)
				}
			}
		}
	}
}

// socket sends one command to b's HAProxy's runtime API and returns the answer.
func (c *controller) socket(b *balancer, cmd string) (string, error) {
	var last error
	for range 50 { // a HAProxy just started binds its socket a moment later
		conn, err := net.DialTimeout("unix", filepath.Join(b.dir, "admin.sock"), time.Second)
		if err != nil {
			last = err
			time.Sleep(100 * time.Millisecond)
			continue
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(conn, "%s\n", cmd)
		var out strings.Builder
		r := bufio.NewReader(conn)
		_, err = r.WriteTo(&out)
		conn.Close()
		if err != nil {
			return "", err
		}
		return out.String(), nil
	}
	return "", fmt.Errorf("%s's runtime API: %w", b.key, last)
}

// remove stops b's HAProxy and releases its address.
func (c *controller) remove(b *balancer) {
	if pid, err := os.ReadFile(filepath.Join(b.dir, "haproxy.pid")); err == nil {
		for _, p := range strings.Fields(string(pid)) {
			if n, err := strconv.Atoi(p); err == nil {
				syscall.Kill(n, syscall.SIGTERM)
			}
		}
	}
	c.ip("addr", "del", b.vip.String()+"/32", "dev", "lo")
	os.RemoveAll(b.dir)
}

func (c *controller) stopAll() {
	for key, b := range c.running {
		c.remove(b)
		delete(c.running, key)
	}
}

// ip runs `ip -n NETNS args...`.
func (c *controller) ip(args ...string) error {
	out, err := exec.Command("ip", append([]string{"-n", c.netns}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}
