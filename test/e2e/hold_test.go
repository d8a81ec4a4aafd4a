package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// endpointHold is the alternative to nap's adaptive wait that docs/adaptive.md measures
// against it: the pod's preStop is an httpGet that the kubelet sends to a server that
// watches the EndpointSlices, as nap's controller could, and that answers once no
// EndpointSlice of the pod's namespace has the pod's address ready, plus a propagation
// allowance (what calibrate measures for the routes beyond the EndpointSlices).
//
// An httpGet hook cannot name its pod: the kubelet expands nothing in its path, host or
// headers, and the server sees the node's address. So the lab's server takes, for a
// request from a node for namespace NS (the path /hold/NS), the oldest terminating pod of
// NS on that node that no request has claimed yet; a product would have to give each
// pod a token at admission. It listens on node 1's address (the kubelets of both nodes
// reach it; nothing leaves the machine), and answers every request within holdMax.
type endpointHold struct {
	cs          *kubernetes.Clientset
	propagation time.Duration
	nodes       map[string]string // InternalIP: node name
	host        string            // where it listens: node 1's InternalIP
	port        int
	srv         *http.Server

	mu      sync.Mutex
	claimed map[string]bool // pod names
	records []holdRecord
}

// holdRecord is one preStop the server held.
type holdRecord struct {
	pod, node string
	// left is the time from the request until no EndpointSlice had the pod ready (-1:
	// not seen within holdMax); held, until the answer.
	left, held time.Duration
}

// holdMax bounds every hold, as a grace period bounds a preStop.
const holdMax = 60 * time.Second

// startHold serves the hold until the test ends.
func startHold(t *testing.T, cs *kubernetes.Clientset, propagation time.Duration) *endpointHold {
	t.Helper()
	ctx := context.Background()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &endpointHold{cs: cs, propagation: propagation, nodes: map[string]string{}, claimed: map[string]bool{}}
	listen := ""
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				h.nodes[a.Address] = n.Name
				if n.Name == node1 {
					listen = a.Address
				}
			}
		}
	}
	if listen == "" {
		t.Fatalf("no InternalIP of %s among the nodes %v", node1, h.nodes)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(listen, "0"))
	if err != nil {
		t.Fatal(err)
	}
	h.host, h.port = listen, l.Addr().(*net.TCPAddr).Port
	h.srv = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go h.srv.Serve(l)
	t.Cleanup(func() { h.srv.Close() })
	return h
}

// hook is the preStop handler that asks h to hold a pod of namespace ns.
func (h *endpointHold) hook(ns string) *corev1.LifecycleHandler {
	return &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: h.host, Port: intstr.FromInt(h.port), Path: "/hold/" + ns}}
}

func (h *endpointHold) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	began := time.Now()
	ns, ok := strings.CutPrefix(r.URL.Path, "/hold/")
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	node := h.nodes[host]
	if !ok || ns == "" || node == "" {
		http.Error(w, "want /hold/NAMESPACE from a node", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), holdMax)
	defer cancel()
	rec := holdRecord{node: node, left: -1}
	if pod := h.claim(ctx, ns, node); pod != nil {
		rec.pod = pod.Name
		if h.leave(ctx, ns, pod.Status.PodIP) {
			rec.left = time.Since(began)
			select {
			case <-ctx.Done():
			case <-time.After(h.propagation):
			}
		}
	}
	if rec.left < 0 {
		<-ctx.Done() // not seen leaving: hold to the end, never shorter
	}
	rec.held = time.Since(began)
	h.mu.Lock()
	h.records = append(h.records, rec)
	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// claim returns the oldest terminating pod of ns on node that no request claimed, as
// soon as the API shows one (the kubelet runs the hook once it has seen the deletion).
func (h *endpointHold) claim(ctx context.Context, ns, node string) *corev1.Pod {
	for {
		pods, err := h.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err == nil {
			slices.SortFunc(pods.Items, func(a, b corev1.Pod) int {
				return ptr.Deref(a.DeletionTimestamp, metav1.Time{}).Compare(ptr.Deref(b.DeletionTimestamp, metav1.Time{}).Time)
			})
			h.mu.Lock()
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.DeletionTimestamp != nil && p.Status.PodIP != "" && !h.claimed[p.Name] {
					h.claimed[p.Name] = true
					h.mu.Unlock()
					return p
				}
			}
			h.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leave waits until no EndpointSlice of ns lists ip as ready (a terminating endpoint
// is listed not ready; kube-proxy, the ingress and the load balancer's health checks
// stop choosing it then), polling every 100 ms; false when ctx ends first.
func (h *endpointHold) leave(ctx context.Context, ns, ip string) bool {
	for {
		eps, err := h.cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
		if err == nil && !readyIn(eps.Items, ip) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readyIn says whether an endpoint of ip is ready in one of slices.
func readyIn(eps []discoveryv1.EndpointSlice, ip string) bool {
	for _, s := range eps {
		for _, e := range s.Endpoints {
			if ptr.Deref(e.Conditions.Ready, true) && (len(e.Addresses) > 0 && e.Addresses[0] == ip) {
				return true
			}
		}
	}
	return false
}

// report is what the server held, a line per pod.
func (h *endpointHold) report() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, r := range h.records {
		left := "never within " + holdMax.String()
		if r.left >= 0 {
			left = r.left.Round(10 * time.Millisecond).String()
		}
		fmt.Fprintf(&b, "\n  %s on %s: not ready in any EndpointSlice after %s, held %s", r.pod, r.node, left, r.held.Round(10*time.Millisecond))
	}
	return b.String()
}
