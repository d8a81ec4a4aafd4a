package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCalibrate: napctl calibrate on the lab measures the tail of every path (the
// ClusterIP and a NodePort from node 1, the ingress), recommends a delay that covers
// the longest, loses no request on the way, and leaves nothing behind; it refuses a
// namespace it did not create.
func TestCalibrate(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	ns := "nap-calibrate-e2e"
	args := []string{"calibrate", "--kubeconfig", kubeconfigPath(), "-n", ns, "--image", controllerImage, "--rounds", "2", "--quiet", "5s",
		"--ingress-class", "traefik", "--ingress-url", strings.TrimSuffix(ingressURL(t, cs, ""), "/"), "-o", "json"}
	cmd := exec.Command(napctl(t), args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	began := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("napctl calibrate: %v\n%s", err, out.String())
	}
	t.Logf("calibrated in %v:\n%s", time.Since(began).Round(time.Second), out.String())
	var rep struct {
		Rounds []struct {
			Pod      string             `json:"pod"`
			Tails    map[string]float64 `json:"tails_seconds"`
			Censored bool               `json:"censored"`
		} `json:"rounds"`
		Paths []struct {
			Path struct {
				Name string `json:"name"`
			} `json:"path"`
			Samples  int     `json:"samples"`
			Max      float64 `json:"max_seconds"`
			Failed   int     `json:"failed"`
			Requests int     `json:"requests"`
		} `json:"paths"`
		Delay   float64 `json:"recommended_delay_seconds"`
		Grace   float64 `json:"recommended_grace_period_seconds"`
		Longest string  `json:"longest_path"`
	}
	if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rounds) != 2 || len(rep.Paths) != 3 {
		t.Fatalf("%d rounds, %d paths; want 2 and 3 (clusterip, nodeport, ingress)", len(rep.Rounds), len(rep.Paths))
	}
	longest := 0.0
	for _, p := range rep.Paths {
		// A tail is how long the path still sent to the pod after its termination
		// began: 0 when routes forgot it first, never the whole hold.
		if p.Samples != 2 || p.Max < 0 || p.Max >= 60 || p.Failed != 0 || p.Requests < 300 {
			t.Errorf("path %s: %d samples, max %.2fs, %d of %d requests failed", p.Path.Name, p.Samples, p.Max, p.Failed, p.Requests)
		}
		longest = max(longest, p.Max)
	}
	for _, r := range rep.Rounds {
		if r.Censored {
			t.Errorf("pod %s still answered when its hold ended", r.Pod)
		}
	}
	if rep.Delay < longest+2 || rep.Delay >= longest+3 || rep.Grace != rep.Delay+30 {
		t.Errorf("recommended delay %gs and grace %gs for a longest tail of %.2fs", rep.Delay, rep.Grace, longest)
	}
	// Nothing left: the namespace it created is deleted (it may still be terminating).
	if n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil && n.DeletionTimestamp == nil {
		t.Errorf("namespace %s left behind", ns)
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	// Ctrl-C while it runs: it deletes what it made and exits 130.
	cmd = exec.Command(napctl(t), "calibrate", "--kubeconfig", kubeconfigPath(), "-n", ns, "--image", controllerImage, "--rounds", "5")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		// The namespace of the first run must be gone before a second can create it.
		if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s still there 2 minutes after the first calibration", ns)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(stderr.String(), "deployed"); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("calibrate did not deploy within a minute:\n%s", stderr.String())
		}
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "cleaned up "+ns) {
		t.Errorf("interrupted calibrate: %v\n%s", err, stderr.String())
	}
	if n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil && n.DeletionTimestamp == nil {
		t.Errorf("namespace %s left behind after Ctrl-C", ns)
	}

	// A namespace it did not create: refused, exit 2, nothing made there.
	other := namespace(t, cs)
	cmd = exec.Command(napctl(t), "calibrate", "--kubeconfig", kubeconfigPath(), "-n", other, "--image", controllerImage)
	msg, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(msg), "calibrate did not create it") {
		t.Errorf("calibrate in %s: %v\n%s", other, err, msg)
	}
	if d, err := cs.AppsV1().Deployments(other).List(ctx, metav1.ListOptions{}); err != nil || len(d.Items) != 0 {
		t.Errorf("deployments in %s after the refusal: %v %v", other, d, err)
	}
}

// syncBuffer is a buffer a process writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
