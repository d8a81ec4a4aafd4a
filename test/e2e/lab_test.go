package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/probe"
)

// The lab of hack/cluster.sh: node 1 is this host's network namespace; node 2 is a
// network namespace of its own with an older kubelet and its own kube-proxy; Traefik
// runs in the cluster (hack/ingress.yaml).
const (
	node1 = "nap-node"
	node2 = "nap-node2"
	// node2NetNS is node 2's network namespace: a probe run in it goes through node 2's
	// kube-proxy (its own iptables), as a client pod on another node would.
	node2NetNS = "/run/netns/nap-node2"
	// node2IP is node 2's InternalIP (hack/cluster.sh NODE2_IP).
	node2IP = "10.77.0.2"
	// napImageRef is nap's own image (napctl image), which hack/images puts on both nodes.
	napImageRef = "docker.io/nap/nap:e2e"
	// The ingress controller's Service and IngressClass.
	ingressNamespace = "nap-ingress"
	ingressService   = "traefik"
	ingressClass     = "traefik"
)

// vantage is where a probe runs and what it sends to.
type vantage struct {
	url   string
	node2 bool // from node 2's network namespace
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
	waitServing(t, v.url)
	ctx, cancel := context.WithCancel(context.Background())
	p := &localProbe{cancel: cancel, done: make(chan error, 1), start: time.Now()}
	p.rep = probe.NewReport(p.start, 500*time.Millisecond)
	p.opts = probe.Options{URL: v.url, Rate: rate, Timeout: 2 * time.Second}
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

// node2Probe is `napctl probe` run in node 2's network namespace, as a user would run
// it there; SIGINT ends it with the report so far, as JSON.
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
		"--max-failures", strconv.Itoa(int(rate)*600), "-o", "json")}
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

// podsByNode counts the Ready pods labelled app=app in ns per node.
func podsByNode(t *testing.T, cs *kubernetes.Clientset, ns string) map[string]int {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			n[p.Spec.NodeName]++
		}
	}
	return n
}
