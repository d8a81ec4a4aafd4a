package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
)

// TestMain starts the suite on a lab with no nap in it. A run stopped halfway (Ctrl-C
// in a controller test, a run killed beside another on the same lab) can leave the
// controller, its webhook and the guard of its ConfigMap behind, and every later test
// would meet them: each namespace's nap ConfigMap refused, pods admitted by a webhook
// with no server. What it finds is printed with who wrote it and when, and deleted.
// Without a lab it does nothing: each test says what is missing.
func TestMain(m *testing.M) {
	if err := clearNap(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: clearing what an earlier run left of nap:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// napKinds are the cluster-wide kinds nap's installers (napctl install, the chart) make,
// all labelled app.kubernetes.io/name=nap.
var napKinds = []string{
	"mutatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings",
	"mutatingadmissionpolicies", "mutatingadmissionpolicybindings", "clusterroles", "clusterrolebindings",
}

// clearNap deletes nap's cluster-wide objects and its namespace from the lab, saying
// what it found.
func clearNap() error {
	kubectl := filepath.Join(kubeenv.KubeCache(), "bin", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		return nil
	}
	if _, err := os.Stat(kubeconfigPath()); err != nil {
		return nil
	}
	run := func(args ...string) (string, error) {
		out, err := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfigPath(), "--request-timeout", "20s"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if _, err := run("version"); err != nil {
		return nil // no lab: the tests say so
	}
	const who = `{.kind}/{.metadata.name}, made {.metadata.creationTimestamp} by {.metadata.managedFields[*].manager}{"\n"}`
	var found []string
	for _, kind := range napKinds {
		out, err := run("get", kind, "-l", "app.kubernetes.io/name="+controller.Name, "--ignore-not-found", "-o", "jsonpath={range .items[*]}"+who+"{end}")
		if err != nil {
			if strings.Contains(out, "doesn't have a resource type") {
				continue // an API this lab does not serve
			}
			return fmt.Errorf("kubectl get %s: %v: %s", kind, err, out)
		}
		if out != "" {
			found = append(found, strings.Split(out, "\n")...)
			if out, err := run("delete", kind, "-l", "app.kubernetes.io/name="+controller.Name, "--ignore-not-found"); err != nil {
				return fmt.Errorf("kubectl delete %s: %v: %s", kind, err, out)
			}
		}
	}
	ns := controller.DefaultNamespace
	if out, err := run("get", "namespace", ns, "--ignore-not-found", "-o", "jsonpath="+who); err != nil {
		return fmt.Errorf("kubectl get namespace %s: %v: %s", ns, err, out)
	} else if out != "" {
		found = append(found, out)
		if out, err := run("delete", "namespace", ns, "--ignore-not-found", "--timeout", "2m"); err != nil {
			return fmt.Errorf("kubectl delete namespace %s: %v: %s", ns, err, out)
		}
	}
	if len(found) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: the lab held nap from an earlier run; deleted (%s):\n  %s\n",
			time.Now().UTC().Format(time.RFC3339), strings.Join(found, "\n  "))
	}
	return nil
}
