package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
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

// Cluster is how a command reaches a cluster, as kubectl does: a kubeconfig (default
// $KUBECONFIG, else ~/.kube/config) and a context in it (default its current one).
type Cluster struct {
	Kubeconfig string
	Context    string
}

// ContextFlag adds kubectl's --context to fl: every command that reads a cluster has it.
func (c *Cluster) ContextFlag(fl *pflag.FlagSet) {
	fl.StringVar(&c.Context, "context", "", "the kubeconfig context to use (default: its current context)")
}

// ClientConfig is c's kubeconfig, resolved as kubectl does.
func (c Cluster) ClientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.Kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.Context})
}

// RESTConfig is the client configuration of c's context, with a timeout per request.
func RESTConfig(c Cluster) (*rest.Config, error) {
	cfg, err := c.ClientConfig().ClientConfig()
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

// ClusterVersions asks the cluster of c for the API server's version and every node's
// kubelet: the native sleep is chosen only where the kubelets that may run a pod have it.
func ClusterVersions(c Cluster) (kube.Version, []kube.Node, error) {
	cfg, err := RESTConfig(c)
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
	// Protobuf: at 5,000 nodes their list as JSON is tens of megabytes to write and read.
	pb := rest.CopyConfig(cfg)
	pb.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(pb)
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
