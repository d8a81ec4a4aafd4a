package kubeenv

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nap-k8s/nap/internal/testenv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// RepoRoot is the repository's top folder.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// KubeVersion is the Kubernetes version the tests run (hack/kube-version).
func KubeVersion() string {
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "hack", "kube-version"))
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(b))
}

// HackVersion is the version a file of hack/ pins (ingress-version: the lab's Traefik).
func HackVersion(t testing.TB, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(RepoRoot(), "hack", file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// KubeCache is where hack/kube-bins.sh puts the Kubernetes binaries of KubeVersion.
func KubeCache() string {
	return filepath.Join(testenv.Cache(), "kube", KubeVersion())
}

// EnvtestAssets returns the folder holding etcd, kube-apiserver and kubectl for
// envtest: KUBEBUILDER_ASSETS when set, else the one `make kube-bins` builds.
func EnvtestAssets(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(KubeCache(), "envtest")
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			testenv.Missing(t, "envtest's "+b+" in "+dir, "kube-bins")
		}
	}
	return dir
}

// APIServer starts a real etcd and kube-apiserver (envtest, our own built binaries)
// for the test and stops them when it ends.
func APIServer(t testing.TB) *rest.Config {
	t.Helper()
	cfg, _ := APIServerWithWebhooks(t)
	return cfg
}

// Kubeconfig writes a kubeconfig file for cfg and returns its path.
func Kubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	return KubeconfigAs(t, cfg, "")
}

// KubeconfigAs is Kubeconfig impersonating user (with groups), so that the API server
// authorizes every call as that user: "system:serviceaccount:NS:NAME" tests a
// ServiceAccount's RBAC. An empty user is cfg's own.
func KubeconfigAs(t testing.TB, cfg *rest.Config, user string, groups ...string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
		Impersonate: user, ImpersonateGroups: groups,
	}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Kubectl returns the kubectl that `make kube-bins` builds.
func Kubectl(t testing.TB) string {
	t.Helper()
	p := filepath.Join(KubeCache(), "bin", "kubectl")
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(t, p, "kube-bins")
	}
	return p
}

// APIServerWithWebhooks is APIServer with mutating webhook configurations installed so
// that the API server calls a webhook server on this machine over TLS; it returns the
// options (host, port, certificate folder) that server must use. With no hooks it is
// APIServer.
func APIServerWithWebhooks(t testing.TB, hooks ...*admissionregistrationv1.MutatingWebhookConfiguration) (*rest.Config, *envtest.WebhookInstallOptions) {
	t.Helper()
	return start(t, hooks, nil)
}

// APIServerWithFlags is APIServer with flags of the kube-apiserver set (name without
// dashes: value), such as an admission plugin's configuration file.
func APIServerWithFlags(t testing.TB, flags map[string]string) *rest.Config {
	t.Helper()
	cfg, _ := start(t, nil, flags)
	return cfg
}

func start(t testing.TB, hooks []*admissionregistrationv1.MutatingWebhookConfiguration, flags map[string]string) (*rest.Config, *envtest.WebhookInstallOptions) {
	t.Helper()
	env := &envtest.Environment{BinaryAssetsDirectory: EnvtestAssets(t),
		WebhookInstallOptions: envtest.WebhookInstallOptions{MutatingWebhooks: hooks}}
	for name, value := range flags {
		env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	// etcd's data in memory: a disposable API server, and the tests and benchmarks
	// measure nap, not this machine's disk (its fsyncs put tens of ms into the
	// admission benchmark's p99).
	if dir, err := os.MkdirTemp("/dev/shm", "nap-envtest-etcd-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(dir) }) // after env.Stop: cleanups run last first
		env.ControlPlane.Etcd = &envtest.Etcd{DataDir: dir}
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping envtest: %v", err)
		}
	})
	return cfg, &env.WebhookInstallOptions
}

// ModuleDir is the folder of a module at a version (module@version), which need not be
// a dependency: public manifests and CRDs from the Go module proxy, downloaded once into
// the module cache. A pinned version there is the manifests' source.
func ModuleDir(t testing.TB, modVersion string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", modVersion)
	cmd.Dir = t.TempDir() // outside nap's module
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if json.Unmarshal(out, &mod) != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s: %v %s", modVersion, err, mod.Error)
	}
	return mod.Dir
}

// ModuleFile is the path of a file of a module the build uses (as go.mod pins it), in
// the module cache: for a dependency's CRDs.
func ModuleFile(t testing.TB, module, rel string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), rel)
}
