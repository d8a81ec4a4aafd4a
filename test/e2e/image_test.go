package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestImageVolume: nap delivered as an image volume of its own image (napctl image),
// which node 2's containerd 2.x mounts and node 1's containerd 1.6 does not.
// `napctl inject --delivery auto` with the lab's nodes falls back to the ConfigMap and
// names node 1's runtime. With --delivery image and the pods on node 2: a rolling restart
// under load loses no request over a new connection, every pod mounts nap's image, a
// terminated pod takes the whole delay to go (the sleeper ran from the image volume), and
// no FailedPreStopHook.
func TestImageVolume(t *testing.T) {
	cs := client(t)
	ctx := context.Background()

	cmd := exec.Command(napctl(t), "inject", "--delivery", "auto", "--image", napImageRef, "--kubeconfig", kubeconfigPath(), "--mode", "binary")
	cmd.Stdin = strings.NewReader(serviceDeployment)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("napctl inject --delivery auto: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "configMap:") || strings.Contains(out.String(), "reference:") ||
		!strings.Contains(errOut.String(), "node "+node1+" runs containerd://1.") {
		t.Errorf("--delivery auto on the lab: want the ConfigMap and node 1's containerd named; stderr %q\n%s", errOut.String(), out.String())
	}

	d := prove(t, cs, scenario{path: clusterIPNode1, disruption: rollingRestart, variant: napImage, expect: newClean, rounds: 1}, 200)
	pods, err := cs.CoreV1().Pods(d.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods: %v", err)
	}
	for _, p := range pods.Items {
		image := ""
		for _, v := range p.Spec.Volumes {
			if v.Name == "nap" && v.Image != nil {
				image = v.Image.Reference
			}
		}
		if image != napImageRef || p.Spec.NodeName != node2 {
			t.Errorf("pod %s on %s: nap's image volume %q, want %s on %s", p.Name, p.Spec.NodeName, image, napImageRef, node2)
		}
	}
	// The hook runs /nap/nap 5s from the image: the pod takes at least that long to go.
	took, reasons := terminate(t, cs, &pods.Items[0])
	if took < 5*time.Second || hasReason(reasons, "FailedPreStopHook") {
		t.Errorf("pod %s took %v to terminate, events %q: the 5 s preStop did not run", pods.Items[0].Name, took.Round(10*time.Millisecond), reasons)
	} else {
		t.Logf("pod %s took %v to terminate (preStop /nap/nap 5s from the image volume)", pods.Items[0].Name, took.Round(10*time.Millisecond))
	}
	noFailedPreStopHook(t, cs, d.ns)
}
