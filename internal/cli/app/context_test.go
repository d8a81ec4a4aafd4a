package app

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
)

// Every command that reads a cluster takes kubectl's connection flags: a kubeconfig whose
// current context points elsewhere (a closed port) is read through the context named.
func TestContextFlag(t *testing.T) {
	cfg := kubeenv.APIServer(t)
	kc, err := clientcmd.LoadFromFile(kubeenv.Kubeconfig(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	good := kc.CurrentContext
	kc.Clusters["elsewhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:9"}
	kc.Contexts["elsewhere"] = &clientcmdapi.Context{Cluster: "elsewhere", AuthInfo: kc.Contexts[good].AuthInfo}
	kc.CurrentContext = "elsewhere"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: x}]\n"
	for _, c := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		says  string
	}{
		{"status, the current context", "", []string{"status", "--kubeconfig", path}, 2, "127.0.0.1:9"},
		{"status --context", "", []string{"status", "--kubeconfig", path, "--context", good}, 0, "Service-backed workloads"},
		{"status -o yaml", "", []string{"status", "--kubeconfig", path, "--context", good, "-o", "yaml"}, 0, "namespaces: []\n"},
		{"inject --kubeconfig, the current context", pod, []string{"inject", "--kubeconfig", path}, 2, "127.0.0.1:9"},
		{"inject --kubeconfig --context", pod, []string{"inject", "--kubeconfig", path, "--context", good}, 0, "preStop"},
		{"inject --live, the current context", pod, []string{"inject", "--live", "--kubeconfig", path}, 2, "127.0.0.1:9"},
		{"inject --cluster: kubectl's, a cluster of the kubeconfig", pod, []string{"inject", "--kubeconfig", path, "--cluster", kc.Contexts[good].Cluster}, 0, "preStop"},
		{"inject --server: kubectl's", pod, []string{"inject", "--kubeconfig", path, "--server", kc.Clusters[kc.Contexts[good].Cluster].Server, "--insecure-skip-tls-verify"}, 0, "preStop"},
		{"inject --cluster given a kubeconfig file", pod, []string{"inject", "--cluster", path}, 2, "--kubeconfig " + path},
		{"lint --context", "", []string{"lint", "--kubeconfig", path, "--context", good, "-n", "default", "-o", "json"}, 0, "[]"},
		{"lint --context with a file", pod, []string{"lint", "--context", good, "-f", "-"}, 2, "--context lints the cluster's objects"},
		{"install --admission auto --context", "", []string{"install", "--admission", "auto", "--kubeconfig", path, "--context", good, "--image", "r/napctl:1"}, 0, "kind: Deployment"},
		{"probe --context without --watch", "", []string{"probe", "http://127.0.0.1:9/", "--context", good}, 2, "--context goes with --watch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runNapctlIn(c.stdin, c.args...)
			if code != c.code || !strings.Contains(out+errOut, c.says) {
				t.Errorf("exit %d, want %d saying %q:\n%s\n%s", code, c.code, c.says, out, errOut)
			}
		})
	}
}
