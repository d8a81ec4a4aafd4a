package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestProbeWatch: napctl probe --watch on the lab sees what the kubelets, the
// EndpointSlice controller and the API server do in a rolling restart of the demo
// service (no preStop delay): every old pod's termination, exit, removal from the
// Service's EndpointSlice and deletion, in that order, and every new pod's readiness;
// the report names, under each outage, the pods whose termination explains it.
func TestProbeWatch(t *testing.T) {
	t.Parallel() // see doc.go: with the preStop tests, after the others
	cs := client(t)
	ctx := context.Background()
	ns := namespace(t, cs)
	d := demoDeployment(t, []byte(serviceDeployment))
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "app"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intOrPort(8080)}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, cs, ns)
	url := "http://" + svc.Spec.ClusterIP + "/"
	waitServing(t, url, "")
	before, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil {
		t.Fatal(err)
	}

	plot := filepath.Join(t.TempDir(), "rollout.html")
	cmd := exec.Command(napctl(t), "probe", url, "--rate", "200", "--duration", "40s", "--watch", "deploy/app", "-n", ns,
		"--kubeconfig", kubeconfigPath(), "-o", "json", "--plot", plot, "--max-failures", "100000")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	disrupt(t, cs, ns, rollingRestart, 0, nil)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("napctl probe --watch: %v", err)
	}
	var s struct {
		Total struct {
			Failed int `json:"failed"`
		} `json:"total"`
		Events []struct {
			Seconds float64 `json:"offset_seconds"`
			Kind    string  `json:"kind"`
			Pod     string  `json:"pod"`
			Node    string  `json:"node"`
			Service string  `json:"service"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(out.String()), &s); err != nil {
		t.Fatal(err)
	}
	first := map[string]map[string]float64{} // pod → kind → first offset
	for _, e := range s.Events {
		if first[e.Pod] == nil {
			first[e.Pod] = map[string]float64{}
		}
		if _, seen := first[e.Pod][e.Kind]; !seen {
			first[e.Pod][e.Kind] = e.Seconds
		}
		if strings.HasPrefix(e.Kind, "endpoint-") && e.Service != "app" || e.Node == "" && e.Kind != "pod-created" {
			t.Errorf("event %+v", e)
		}
	}
	for _, p := range before.Items {
		ev := first[p.Name]
		order := []string{"pod-deleting", "container-exited", "pod-deleted"}
		for i, k := range order {
			if _, ok := ev[k]; !ok {
				t.Errorf("old pod %s: no %s event (%v)", p.Name, k, ev)
			} else if i > 0 && ev[k] < ev[order[i-1]] {
				t.Errorf("old pod %s: %s at %.2fs before %s at %.2fs", p.Name, k, ev[k], order[i-1], ev[order[i-1]])
			}
		}
		if r, ok := ev["endpoint-removed"]; !ok || r < ev["pod-deleting"] {
			t.Errorf("old pod %s: left the EndpointSlice at %.2fs (seen: %v), termination began at %.2fs", p.Name, r, ok, ev["pod-deleting"])
		}
	}
	created := 0
	for pod, ev := range first {
		if _, ok := ev["pod-created"]; !ok {
			continue
		}
		created++
		for _, k := range []string{"pod-ready", "endpoint-ready"} {
			if _, ok := ev[k]; !ok {
				t.Errorf("new pod %s: no %s event (%v)", pod, k, ev)
			}
		}
	}
	if created != len(before.Items) {
		t.Errorf("%d new pods seen, want %d", created, len(before.Items))
	}
	// Without a delay the restart loses requests; each outage names a terminating pod.
	page, err := os.ReadFile(plot)
	if err != nil {
		t.Fatal(err)
	}
	if s.Total.Failed == 0 {
		t.Errorf("no failed request in a rolling restart without a preStop delay")
	}
	// The outages while the old pods terminate each name one; later ones (timeouts on new
	// connections, seen for tens of seconds after such a rollout ended) are logged.
	lastDeleted := 0.0
	for _, p := range before.Items {
		lastDeleted = max(lastDeleted, first[p.Name]["pod-deleted"])
	}
	outages := regexp.MustCompile(`(?m)^outage +([0-9.]+)s .*\n((?:  pod .*\n)*)`).FindAllStringSubmatch(string(page), -1)
	if len(outages) == 0 && s.Total.Failed > 0 {
		t.Errorf("no outage in the report:\n%s", page)
	}
	var during, after []string
	for _, o := range outages {
		start, _ := strconv.ParseFloat(o[1], 64)
		if start > lastDeleted+1 {
			after = append(after, o[0])
			continue
		}
		during = append(during, o[0])
		if !strings.Contains(o[2], "termination began") {
			t.Errorf("an outage during the rollout without a terminating pod near it:\n%s", o[0])
		}
	}
	if len(during) == 0 {
		t.Errorf("no outage while the old pods terminated (the last deleted at %.2fs)", lastDeleted)
	}
	t.Logf("%d failed; %d events; the last old pod deleted at %.2fs; outages during the rollout:\n%s\nafter it:\n%s",
		s.Total.Failed, len(s.Events), lastDeleted, strings.Join(during, ""), strings.Join(after, ""))
}
