package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nap-k8s/nap/kube"
)

// ServerVersion asks the API server of cfg for its version: the one place napctl does.
func ServerVersion(cfg *rest.Config) (kube.Version, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return kube.Version{}, err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return kube.Version{}, fmt.Errorf("the API server's version: %w", err)
	}
	return kube.ParseVersion(info.GitVersion)
}

// RESTConfig is the client configuration of kubeconfig's current context, with a
// timeout per request.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	// client-go's default, 5 requests a second after a burst of 10, would make reading
	// a fleet (hundreds of pages) wait on the client; the API server's priority and
	// fairness is what protects it. These are kubectl's discovery limits.
	cfg.QPS, cfg.Burst = 50, 300
	return cfg, nil
}

// KubeconfigPath is the kubeconfig a command reads: flag when given, else $KUBECONFIG,
// else ~/.kube/config, as kubectl does.
func KubeconfigPath(flag string) string {
	if flag != "" {
		return flag
	}
	if p := os.Getenv("KUBECONFIG"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".kube", "config")
}

// ClusterVersions asks the cluster of kubeconfig's current context for the API server's
// version and every node's kubelet: the native sleep is chosen only where the kubelets
// that may run a pod have it.
func ClusterVersions(kubeconfig string) (kube.Version, []kube.Node, error) {
	cfg, err := RESTConfig(kubeconfig)
	if err != nil {
		return kube.Version{}, nil, err
	}
	return ClusterVersionsOf(cfg)
}

// ClusterVersionsOf is ClusterVersions for a client configuration.
func ClusterVersionsOf(cfg *rest.Config) (kube.Version, []kube.Node, error) {
	v, err := ServerVersion(cfg)
	if err != nil {
		return kube.Version{}, nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return kube.Version{}, nil, err
	}
	list, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return kube.Version{}, nil, fmt.Errorf("the nodes' kubelet versions: %w", err)
	}
	nodes := make([]kube.Node, 0, len(list.Items))
	for i := range list.Items {
		n, err := kube.NodeOf(&list.Items[i])
		if err != nil {
			return kube.Version{}, nil, err
		}
		nodes = append(nodes, n)
	}
	return v, nodes, nil
}
