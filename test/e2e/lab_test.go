package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/hack/lb/connlog"
	"github.com/nap-k8s/nap/napimage"
	"github.com/nap-k8s/nap/probe"
	"github.com/nap-k8s/nap/test/forensic"
)

// The lab of hack/cluster.sh: node 1 is this host's network namespace; node 2 is a
// network namespace of its own with an older kubelet and its own kube-proxy; Traefik
// runs in the cluster (hack/ingress.yaml).
// napImageRef is nap's own image (napctl image), which hack/images puts on both nodes
// under its default name.
var napImageRef = napimage.DefaultName

const (
	node1 = "nap-node"
	node2 = "nap-node2"
	// node2NetNS is node 2's network namespace: a probe run in it goes through node 2's
	// kube-proxy (its own iptables), as a client pod on another node would.
	node2NetNS = "/run/netns/nap-node2"
	// node2IP is node 2's InternalIP (hack/cluster.sh NODE2_IP).
	node2IP = "10.77.0.2"
	// The ingress controller's Service and IngressClass.
	ingressNamespace = "nap-ingress"
	ingressService   = "traefik"
	ingressClass     = "traefik"
	// labGateway is the Gateway Traefik serves (hack/ingress.yaml), on the same Service.
	labGateway = "nap-ingress/nap"
	// ingressAdminPort serves Traefik's ping and API (hack/ingress.yaml).
	ingressAdminPort = "9000"
)

// vantage is where a probe runs and what it sends to.
type vantage struct {
	url   string
	host  string // the name requests give the server, when not the URL's (probe.Options.Host)
	node2 bool   // from node 2's network namespace
}

// prober is a probe running in the background; stop ends it and returns its summary.
type prober interface {
	stop(t *testing.T) probe.Summary
}

// startProbe waits until v answers, then probes it at rate over new and keep-alive
// connections until stopped.
func startProbe(t *testing.T, v vantage, rate float64) prober {
	t.Helper()
	if v.node2 {
		waitServingNode2(t, v.url)
		return startNode2Probe(t, v.url, rate)
	}
	waitServing(t, v.url, v.host)
	ctx, cancel := context.WithCancel(context.Background())
	p := &localProbe{cancel: cancel, done: make(chan error, 1), start: time.Now()}
	p.rep = probe.NewReport(p.start, 500*time.Millisecond)
	// Names (a headless Service's) resolved at the lab's cluster DNS, never the host's.
	p.opts = probe.Options{URL: v.url, Host: v.host, Rate: rate, Timeout: 2 * time.Second, DNS: clusterDNS}
	go func() { p.done <- probe.Run(ctx, p.opts, p.rep.Add) }()
	return p
}

// localProbe runs in this process, on node 1.
type localProbe struct {
	cancel context.CancelFunc
	done   chan error
	start  time.Time
	rep    *probe.Report
	opts   probe.Options
}

func (p *localProbe) stop(t *testing.T) probe.Summary {
	t.Helper()
	p.cancel()
	if err := <-p.done; err != nil {
		t.Fatal(err)
	}
	return p.rep.Summarize(p.opts, time.Since(p.start), nil)
}

// streamProbe holds streams open from this process, on node 1.
type streamProbe struct {
	cancel context.CancelFunc
	done   chan struct{}
	rep    *probe.StreamReport
	err    error
	url    string
	start  time.Time
}

// heldStreams is how many streams a stream probe holds open.
const heldStreams = 20

// startStreams holds heldStreams streams open on url (ws:// or an event stream's
// http://) until stopped; check is an HTTP URL of the same service that must answer
// first.
func startStreams(t *testing.T, url, check string) prober {
	t.Helper()
	waitServing(t, check, "")
	ctx, cancel := context.WithCancel(context.Background())
	p := &streamProbe{cancel: cancel, done: make(chan struct{}), url: url, start: time.Now()}
	go func() {
		defer close(p.done)
		p.rep, p.err = probe.RunStreams(ctx, probe.Options{URL: url, Streams: heldStreams, Duration: 10 * time.Minute, Timeout: 2 * time.Second})
	}()
	return p
}

func (p *streamProbe) stop(t *testing.T) probe.Summary {
	t.Helper()
	p.cancel()
	<-p.done
	if p.err != nil {
		t.Fatal(p.err)
	}
	return probe.Summary{URL: p.url, DurationSeconds: time.Since(p.start).Seconds(), Streams: p.rep}
}

// node2Probe is `napctl probe` run in node 2's network namespace, as a user would run
// it there; SIGINT ends it with the report so far, as JSON, which lists each failed
// request (--list-failures): the verdicts and the loss's records are held to them as to
// a probe in this process's.
type node2Probe struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	errOut bytes.Buffer
}

func startNode2Probe(t *testing.T, url string, rate float64) prober {
	t.Helper()
	// --duration bounds it should the test die before stopping it; --max-failures high
	// enough that failures are reported, not an exit status.
	p := &node2Probe{cmd: exec.Command("nsenter", "--net="+node2NetNS, napctl(t), "probe", url,
		"--rate", strconv.FormatFloat(rate, 'f', -1, 64), "--duration", "10m", "--timeout", "2s", "--bucket", "500ms",
		"--max-failures", strconv.Itoa(int(rate)*600), "-o", "json", "--list-failures")}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errOut
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill() })
	return p
}

func (p *node2Probe) stop(t *testing.T) probe.Summary {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("napctl probe on node 2: %v\n%s", err, p.errOut.String())
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("napctl probe on node 2 did not stop 30 s after SIGINT\n%s", p.errOut.String())
	}
	var s probe.Summary
	if err := json.Unmarshal(p.out.Bytes(), &s); err != nil {
		t.Fatalf("napctl probe on node 2: %v\n%s\n%s", err, p.out.String(), p.errOut.String())
	}
	s.Failures = s.ListedFailures()
	if len(s.Failures) != s.Total.Failed {
		t.Fatalf("napctl probe on node 2 listed %d failed requests of %d", len(s.Failures), s.Total.Failed)
	}
	return s
}

// waitServingNode2 is waitServing from node 2: curl in its network namespace, one request
// at a time with a 1 s timeout, for at most 30 s.
func waitServingNode2(t *testing.T, url string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out, err := exec.Command("nsenter", "--net="+node2NetNS, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "1", url).Output()
		if err == nil && string(out) == "200" {
			return
		}
		last = fmt.Sprintf("%s %v", out, err)
	}
	t.Fatalf("%s never answered on node 2: %s", url, last)
}

var napctlBuild struct {
	sync.Once
	path string
	err  error
}

// napctl builds this tree's napctl once per test binary.
func napctl(t *testing.T) string {
	t.Helper()
	napctlBuild.Do(func() {
		dir, err := os.MkdirTemp("", "nap-e2e-napctl-")
		if err != nil {
			napctlBuild.err = err
			return
		}
		napctlBuild.path = filepath.Join(dir, "napctl")
		out, err := exec.Command("go", "build", "-o", napctlBuild.path, "github.com/nap-k8s/nap/cmd/napctl").CombinedOutput()
		if err != nil {
			napctlBuild.err = fmt.Errorf("go build napctl: %v\n%s", err, out)
		}
	})
	if napctlBuild.err != nil {
		t.Fatal(napctlBuild.err)
	}
	return napctlBuild.path
}

// ingressURL is where the ingress serves path: its Service's ClusterIP.
func ingressURL(t *testing.T, cs *kubernetes.Clientset, path string) string {
	t.Helper()
	svc, err := cs.CoreV1().Services(ingressNamespace).Get(context.Background(), ingressService, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the lab's ingress (hack/ingress.yaml): %v", err)
	}
	return "http://" + svc.Spec.ClusterIP + "/" + strings.TrimPrefix(path, "/")
}

// podsByNode counts the pods labelled app=app in ns per node, but those deleted or
// ended.
func podsByNode(t *testing.T, cs *kubernetes.Clientset, ns string) map[string]int {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && !terminal(p) {
			n[p.Spec.NodeName]++
		}
	}
	return n
}

// terminal: p has ended (Failed or Succeeded), as a pod its kubelet stopped.
func terminal(p corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// waitLoadBalanced waits (at most 2 minutes) until the lab's load balancer of Service
// ns/name (hack/lb: one HAProxy each, its runtime API on a socket) has in service exactly
// the nodes it should send to: with Local, the nodes with a ready pod labelled app=app;
// with Cluster, every node. A load balancer takes a node in only after its checks pass,
// and out only after they fail (threshold × interval): a measurement starts with every
// route open, and a disruption ends when the routes have settled.
func waitLoadBalanced(t *testing.T, cs *kubernetes.Clientset, ns, name string, local bool) {
	t.Helper()
	sock := lbSocket(ns, name)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		want := map[string]bool{node1: true, node2: true}
		if local {
			want = map[string]bool{}
			for n := range podsByNode(t, cs, ns) {
				want[n] = true
			}
		}
		up, err := lbServersUp(sock)
		same := len(up) == len(want)
		for n := range want {
			same = same && up[n]
		}
		if err == nil && same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the load balancer of %s/%s has not settled on %v after 2 minutes: in service %v, %v", ns, name, want, up, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// lbSocket is the runtime API's socket of the lab load balancer of Service ns/name.
func lbSocket(ns, name string) string {
	return filepath.Join(filepath.Dir(kubeconfigPath()), "lb", ns+"_"+name, "admin.sock")
}

// lbAsk sends one command to a lab load balancer's runtime API at sock and returns its
// answer.
func lbAsk(sock, command string) (string, error) {
	conn, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write([]byte(command + "\n")); err != nil {
		return "", err
	}
	out, err := io.ReadAll(conn)
	return string(out), err
}

// lbServers asks a lab load balancer (HAProxy's runtime API at sock) for `show servers
// state`: each server's fields, be_id be_name srv_id srv_name srv_addr srv_op_state
// srv_admin_state ...
func lbServers(sock string) ([][]string, error) {
	out, err := lbAsk(sock, "show servers state")
	if err != nil {
		return nil, err
	}
	var servers [][]string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 6 && !strings.HasPrefix(line, "#") {
			servers = append(servers, f)
		}
	}
	return servers, nil
}

// lbConnections is what a lab load balancer with node targets (hack/lb, TCP) logged
// since it last started (package connlog), oldest first: its connections, and its own
// messages (a server's state changing).
func lbConnections(sock string) ([]connlog.Entry, []connlog.Line, error) {
	out, err := lbAsk(sock, "show events "+connlog.Ring)
	if err != nil {
		return nil, nil, err
	}
	var es []connlog.Entry
	var msgs []connlog.Line
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		l, err := connlog.ParseLine(line)
		if err != nil {
			return nil, nil, err
		}
		if l.Conn != nil {
			es = append(es, *l.Conn)
		} else {
			msgs = append(msgs, l)
		}
	}
	return es, msgs, nil
}

// lbLookup says, for each of the first failures over new connections (the probe's, with
// the client's address), the connection the load balancer logged from that address
// while the client waited (es, msgs: its log, lbConnections): the node it went to, from
// which port, how it ended, and that connection as the node's conntrack holds it; and
// how many it had no connection for. First, what the load balancer said of its servers
// since start. Times are from start.
func lbLookup(t *testing.T, es []connlog.Entry, msgs []connlog.Line, fails []probe.Result, start time.Time) (lines []string, missing int) {
	t.Helper()
	var looked []probe.Result
	for _, f := range fails {
		if f.Mode == probe.New && len(looked) < 5 {
			looked = append(looked, f)
		}
	}
	var said []string
	for _, m := range msgs {
		if m.At.After(start) {
			// "Server port80/nap-node is DOWN, reason: ...": up to the reason.
			said = append(said, fmt.Sprintf("%.2f s: %s", m.At.Sub(start).Seconds(), strings.SplitN(m.Message, ",", 2)[0]))
		}
	}
	out := []string{fmt.Sprintf("the load balancer's servers: %q", said)}
	for _, f := range looked {
		sent := f.Due.Add(f.Lag)
		what := fmt.Sprintf("a request at %.2f s (%s over a new connection from %s)", sent.Sub(start).Seconds(), f.Kind, cmp.Or(f.Local, "nowhere"))
		i := forensic.LBEntry(es, f)
		if i < 0 {
			out = append(out, what+": the load balancer logged no connection from it")
			missing++
			continue
		}
		e := es[i]
		line := fmt.Sprintf("%s: the load balancer took it at %.2f s, %s", what, e.Accepted.Sub(start).Seconds(), e)
		if host, port, err := net.SplitHostPort(e.Source); err == nil && e.Server != "<NOSRV>" {
			// The load balancer's connections from that port (another client's may
			// share the number).
			conns := slices.DeleteFunc(connsFrom(t, e.Server == node2, port), func(c string) bool { return !strings.Contains(c, "src="+host+" ") })
			line += fmt.Sprintf("; %s's conntrack of it: %q", e.Server, conns)
		}
		out = append(out, line)
	}
	return out, missing
}

// lbServersUp asks a lab load balancer which nodes are in service (operational state 2).
func lbServersUp(sock string) (map[string]bool, error) {
	servers, err := lbServers(sock)
	up := map[string]bool{}
	for _, f := range servers {
		if f[5] == "2" {
			up[f[3]] = true
		}
	}
	return up, err
}

// lbTargets asks a lab load balancer with pod targets (hack/lb/pods.go) which pod
// addresses it sends new requests to: servers up (operational state 2), neither drained
// (their deregistration) nor in maintenance.
func lbTargets(sock string) (map[string]bool, error) {
	servers, err := lbServers(sock)
	in := map[string]bool{}
	for _, f := range servers {
		// The administrative flags that keep a server from new requests: forced and
		// inherited maintenance (1, 2, 0x20), drain (8, 0x10). A template's slot keeps
		// the flag of its configuration's "disabled" (4) once in service.
		if admin, err := strconv.Atoi(f[6]); err == nil && f[5] == "2" && admin&(0x01|0x02|0x08|0x10|0x20) == 0 {
			in[f[4]] = true
		}
	}
	return in, err
}

// watchDeregistrations records, every 100 ms, when each pod address that the lab's
// load balancer ns/name (pod targets) sent new requests to first stops getting them
// (lbTargets): its deregistration as the load balancer carried it out, the end of the
// requests a pooling client sends the pod. stop ends the recording and returns the
// times by address.
func watchDeregistrations(ns, name string) (stop func() map[string]time.Time) {
	sock := lbSocket(ns, name)
	return watchTargets(func() (map[string]bool, error) { return lbTargets(sock) })
}

// watchIngress records, every 100 ms, when each pod address the lab's ingress sent the
// requests for ns's Service "app" to first leaves its servers (ingressServers): when the
// ingress let the pod go, which the endpoint's change only starts.
func watchIngress(t *testing.T, cs *kubernetes.Clientset, ns string) (stop func() map[string]time.Time) {
	t.Helper()
	api := ingressAPI(t, cs)
	return watchTargets(func() (map[string]bool, error) { return ingressServers(api, ns) })
}

// watchTargets records, every 100 ms, when each address that read gave first leaves
// it. stop ends the recording and returns the times by address.
func watchTargets(read func() (map[string]bool, error)) (stop func() map[string]time.Time) {
	var mu sync.Mutex
	in, left := map[string]bool{}, map[string]time.Time{}
	sample := func(context.Context) {
		now, err := read()
		if err != nil { // a missed sample
			return
		}
		at := time.Now()
		mu.Lock()
		defer mu.Unlock()
		for addr := range in {
			if _, seen := left[addr]; !seen && !now[addr] {
				left[addr] = at
			}
		}
		for addr := range now {
			in[addr] = true
		}
	}
	sample(context.Background())
	end := every(100*time.Millisecond, sample)
	return func() map[string]time.Time {
		end()
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(left)
	}
}

// ingressAPI is the address of the lab's ingress's API (Traefik's, on its admin port:
// hack/ingress.yaml), on its ready pod.
func ingressAPI(t *testing.T, cs *kubernetes.Clientset) string {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ingressNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=traefik"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && podReady(&p) {
			return "http://" + net.JoinHostPort(p.Status.PodIP, ingressAdminPort)
		}
	}
	t.Fatalf("the lab's ingress (hack/ingress.yaml) has no ready pod in %s", ingressNamespace)
	return ""
}

// ingressServers asks the lab's ingress (its API at api) which pod addresses its
// services for ns's Service "app" send new requests to: Traefik names an Ingress's
// backend NAMESPACE-SERVICE-PORT, and lists a terminating endpoint that still serves
// as a fenced server, which gets no new requests (only those of sticky sessions).
func ingressServers(api, ns string) (map[string]bool, error) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(api + "/api/http/services?per_page=1000&search=" + url.QueryEscape(ns+"-app-"))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the ingress's API: %s", resp.Status)
	}
	var services []struct {
		Name         string `json:"name"`
		LoadBalancer *struct {
			Servers []struct {
				URL    string `json:"url"`
				Fenced bool   `json:"fenced"`
			} `json:"servers"`
		} `json:"loadBalancer"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&services); err != nil {
		return nil, fmt.Errorf("the ingress's API: %w", err)
	}
	in := map[string]bool{}
	for _, svc := range services {
		if !strings.HasPrefix(svc.Name, ns+"-app-") || svc.LoadBalancer == nil {
			continue
		}
		for _, s := range svc.LoadBalancer.Servers {
			if s.Fenced {
				continue
			}
			u, err := url.Parse(s.URL)
			if err != nil {
				return nil, fmt.Errorf("the ingress's API: server %q: %w", s.URL, err)
			}
			in[u.Hostname()] = true
		}
	}
	return in, nil
}

// waitPodTargets waits (at most 2 minutes) until the lab's load balancer name, with pod
// targets, sends to exactly the ready pods of ns: every new pod registered, every pod
// gone deregistered.
func waitPodTargets(t *testing.T, cs *kubernetes.Clientset, ns, name string) {
	t.Helper()
	sock := lbSocket(ns, name)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.PodIP != "" && podReady(&p) {
				want[p.Status.PodIP] = true
			}
		}
		in, err := lbTargets(sock)
		if err == nil && maps.Equal(in, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the load balancer %s/%s has not settled on the ready pods %v after 2 minutes: it sends to %v, %v", ns, name, want, in, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// synSent lists the TCP connection tracking entries in state SYN_SENT on a node (node 2:
// in its network namespace): connections whose SYN got no answer yet. A rollout without
// a delay leaves some, DNATed to pods that had exited; each lives 120 s
// (nf_conntrack_tcp_timeout_syn_sent) and is renewed by a SYN that matches it.
func synSent(t *testing.T, onNode2 bool) []string {
	t.Helper()
	cmd := onNode(onNode2, "conntrack", "-L", "-p", "tcp", "--state", "SYN_SENT")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
	}
	var entries []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, "tcp") {
			entries = append(entries, l)
		}
	}
	return entries
}

// youngPorts returns the source ports of the SYN_SENT entries (as synSent lists them)
// made or renewed within staleSynSent.
func youngPorts(entries []string) []string {
	var out []string
	for _, e := range entries {
		f := strings.Fields(e)
		left, err := strconv.Atoi(f[2])
		if err != nil || left <= int((synSentTimeout-staleSynSent).Seconds()) {
			continue
		}
		for _, kv := range f[4:8] {
			if k, v, _ := strings.Cut(kv, "="); k == "sport" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// connsFrom lists a node's TCP conntrack entries of any state from source port port, or
// answered to it (a connection whose source port the node rewrote to port, to keep its
// reply apart from another entry's).
func connsFrom(t *testing.T, onNode2 bool, port string) []string {
	t.Helper()
	var entries []string
	for _, by := range []string{"--orig-port-src", "--reply-port-dst"} {
		cmd := onNode(onNode2, "conntrack", "-L", "-p", "tcp", by, port)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
			entries = append(entries, fmt.Sprintf("%s: %v: %s", strings.Join(cmd.Args, " "), err, out))
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if strings.HasPrefix(l, "tcp") && !slices.ContainsFunc(entries, func(e string) bool { return sameConn(e, l) }) {
				entries = append(entries, l)
			}
		}
	}
	return entries
}

// connsTo lists a node's TCP conntrack entries of any state to hostPort (as a client
// addressed it: a ClusterIP), by state, with the entries in a state that would take a
// new SYN from the same client port along the entry's own translation instead of a
// new one (ESTABLISHED, FIN_WAIT, CLOSE_WAIT, LAST_ACK: the kernel ignores such a SYN
// and lets it through; TIME_WAIT and CLOSE reopen, SYN_SENT retransmits).
func connsTo(t *testing.T, onNode2 bool, hostPort string) (states map[string]int, open []string) {
	t.Helper()
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return nil, []string{err.Error()}
	}
	cmd := onNode(onNode2, "conntrack", "-L", "-p", "tcp", "--orig-dst", host, "--orig-port-dst", port)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		return nil, []string{fmt.Sprintf("%s: %v", strings.Join(cmd.Args, " "), err)}
	}
	states = map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || f[0] != "tcp" {
			continue
		}
		states[f[3]]++
		switch f[3] {
		case "ESTABLISHED", "FIN_WAIT", "CLOSE_WAIT", "LAST_ACK":
			open = append(open, l)
		}
	}
	return states, open
}

// dropCounters are a node's counts of packets its connection tracking found invalid or
// could not insert (conntrack -S, summed over CPUs), and of those kube-proxy dropped as
// invalid (its metric): before and after a measurement, they tell whether a lost SYN
// was dropped there.
func dropCounters(t *testing.T, onNode2 bool) map[string]int {
	t.Helper()
	run := func(args ...string) string {
		cmd := onNode(onNode2, args...)
		out, err := cmd.Output()
		if err != nil {
			t.Logf("%s: %v", strings.Join(cmd.Args, " "), err)
		}
		return string(out)
	}
	counts := map[string]int{}
	for _, f := range strings.Fields(run("conntrack", "-S")) {
		k, v, _ := strings.Cut(f, "=")
		if n, err := strconv.Atoi(v); err == nil && (k == "invalid" || k == "insert_failed" || k == "drop") {
			counts[k] += n
		}
	}
	const metric = "kubeproxy_iptables_ct_state_invalid_dropped_packets_total "
	for _, l := range strings.Split(run("curl", "-s", "--max-time", "2", "http://127.0.0.1:10249/metrics"), "\n") {
		if v, ok := strings.CutPrefix(l, metric); ok {
			if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				counts["kube-proxy invalid dropped"] = int(n)
			}
		}
	}
	return counts
}

// countersSince are the increases of after over before.
func countersSince(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}

// sameConn says whether two lines of conntrack -L are one entry: the same but for the
// seconds it has left (the third field) and its reference count (use=), which change
// between two listings.
func sameConn(a, b string) bool {
	key := func(l string) []string {
		f := strings.Fields(l)
		if len(f) >= 3 {
			f[2] = ""
		}
		return slices.DeleteFunc(f, func(s string) bool { return strings.HasPrefix(s, "use=") })
	}
	return slices.Equal(key(a), key(b))
}

// clearSynSent deletes the stale SYN_SENT entries of both nodes (before a measurement):
// a measurement starts with none left by the one before it, whatever the order of the
// variants. Stale: unanswered for more than staleSynSent; a younger one may be another
// test's connection being made (tests run in parallel), which it leaves alone. It logs
// what it found.
//
// Each delete reads the node's whole table (some 15,000 entries after a few rows at 200
// req/s, 20 to 40 ms), so the stale entries go by destination, and one by one only where
// a young entry shares their destination; all of a node's deletes go in one conntrack
// -R batch (a process per delete took 60 ms each: 300 of them, 19 s of a measurement).
func clearSynSent(t *testing.T) {
	t.Helper()
	for _, onNode2 := range []bool{false, true} {
		var stale []string
		byDest := map[[2]string][][]string{} // the stale entries' -D arguments by destination
		young := map[[2]string]bool{}
		for _, e := range synSent(t, onNode2) {
			// tcp 6 TIMEOUT SYN_SENT src=S dst=D sport=P dport=Q ...: TIMEOUT counts down
			// from nf_conntrack_tcp_timeout_syn_sent, renewed by each SYN.
			f := strings.Fields(e)
			var one []string // the original direction's addresses and ports
			var dest [2]string
			for _, kv := range f[4:8] {
				k, v, _ := strings.Cut(kv, "=")
				one = append(one, map[string]string{"src": "--orig-src", "dst": "--orig-dst", "sport": "--orig-port-src", "dport": "--orig-port-dst"}[k], v)
				switch k {
				case "dst":
					dest[0] = v
				case "dport":
					dest[1] = v
				}
			}
			left, err := strconv.Atoi(f[2])
			if err != nil || left > int((synSentTimeout-staleSynSent).Seconds()) {
				young[dest] = true
				continue
			}
			stale = append(stale, e)
			byDest[dest] = append(byDest[dest], one)
		}
		var deletes [][]string
		for dest, ones := range byDest {
			if young[dest] {
				deletes = append(deletes, ones...)
				continue
			}
			deletes = append(deletes, []string{"--state", "SYN_SENT", "--orig-dst", dest[0], "--orig-port-dst", dest[1]})
		}
		if len(deletes) == 0 {
			continue
		}
		var batch strings.Builder
		for _, d := range deletes {
			fmt.Fprintf(&batch, "-D -p tcp %s\n", strings.Join(d, " "))
		}
		cmd := onNode(onNode2, "conntrack", "-R", "-")
		cmd.Stdin = strings.NewReader(batch.String())
		// A line whose entries went by themselves meanwhile deletes nothing, and the batch
		// goes on; a failure of the batch itself is the test's.
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("conntrack -R (%d deletes): %v: %s", len(deletes), err, out)
		}
		node := node1
		if onNode2 {
			node = node2
		}
		t.Logf("%d stale SYN_SENT conntrack entries on %s before this measurement, deleted in one batch of %d; the first: %s", len(stale), node, len(deletes), stale[0])
	}
}

// onNode is the command args in node 1's network namespace (this host's), or in node
// 2's (nsenter).
func onNode(node2 bool, args ...string) *exec.Cmd {
	if node2 {
		args = append([]string{"nsenter", "--net=" + node2NetNS}, args...)
	}
	return exec.Command(args[0], args[1:]...)
}

// synSentTimeout is the kernel's nf_conntrack_tcp_timeout_syn_sent; an entry unanswered
// for staleSynSent is no connection being made (a SYN is retried after 1 s, 3 s, 7 s).
const (
	synSentTimeout = 120 * time.Second
	staleSynSent   = 10 * time.Second
)

// podReady tells whether p's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
