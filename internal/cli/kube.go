package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
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

// Reach tells whether the cluster of cfg answers (its version), so that a command that
// reads it many ways at once says once that it cannot, naming where it looked, rather
// than once for each read.
func Reach(cfg *rest.Config) error {
	if _, err := ServerVersion(cfg); err != nil {
		return fmt.Errorf("cannot reach the cluster at %s: %w", cfg.Host, err)
	}
	return nil
}

// Cluster is how a command reaches a cluster: kubectl's own flags (cli-runtime's
// genericclioptions), so that --kubeconfig (default $KUBECONFIG, else ~/.kube/config),
// --context, --cluster, --user, --server, --token, --as, --request-timeout and the rest
// mean what they mean to kubectl. A Cluster built without Flags (tests, benchmarks)
// reads Kubeconfig and Context alone.
type Cluster struct {
	Kubeconfig string
	Context    string
	flags      *genericclioptions.ConfigFlags
	names      []string // the flags Flags added
}

// Flags adds kubectl's connection flags to fl: every command that reads a cluster has
// them. Not -n: each command says what its namespace means (one, or every one).
func (c *Cluster) Flags(fl *pflag.FlagSet) {
	cf := genericclioptions.NewConfigFlags(false)
	cf.Namespace, cf.CacheDir = nil, nil
	cf.KubeConfig, cf.Context = &c.Kubeconfig, &c.Context
	before := map[string]bool{}
	fl.VisitAll(func(f *pflag.Flag) { before[f.Name] = true })
	cf.AddFlags(fl)
	fl.VisitAll(func(f *pflag.Flag) {
		if !before[f.Name] {
			c.names = append(c.names, f.Name)
		}
	})
	c.flags = cf
}

// Given names the first of the connection flags set on fl's command line ("": none).
func (c *Cluster) Given(fl *pflag.FlagSet) string {
	for _, n := range c.names {
		if fl.Changed(n) {
			return "--" + n
		}
	}
	return ""
}

// ClientConfig is c's kubeconfig, resolved as kubectl does.
func (c Cluster) ClientConfig() clientcmd.ClientConfig {
	if c.flags != nil {
		return c.flags.ToRawKubeConfigLoader()
	}
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
	if cfg.Timeout == 0 { // --request-timeout not given
		cfg.Timeout = 10 * time.Second
	}
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

// Live is a command that reads either files or a live cluster (lint, inject): --live,
// or any of kubectl's connection flags (which imply it), reads the cluster.
type Live struct {
	On      bool
	Cluster Cluster
	given   string // the flag that chose the cluster
}

// Flags adds --live, saying what it does, and kubectl's connection flags to fl.
func (l *Live) Flags(fl *pflag.FlagSet, usage string) {
	fl.BoolVar(&l.On, "live", false, usage+" (implied by --kubeconfig, --context and kubectl's other connection flags)")
	l.Cluster.Flags(fl)
}

// Resolve is called once the flags are parsed: it turns On when a connection flag was
// given, and refuses --cluster given a kubeconfig file, as it meant before napctl took
// kubectl's flags (where --cluster names a cluster of the kubeconfig).
func (l *Live) Resolve(cmd *cobra.Command) error {
	fl := cmd.Flags()
	if c := fl.Lookup("cluster"); c != nil && fl.Changed("cluster") {
		if fi, err := os.Stat(c.Value.String()); err == nil && !fi.IsDir() {
			return UsageError(cmd, fmt.Errorf("--cluster %s: --cluster names a cluster of the kubeconfig, as in kubectl; to read the cluster of a kubeconfig file: --kubeconfig %[1]s", c.Value))
		}
	}
	if l.given = l.Cluster.Given(fl); l.given != "" {
		l.On = true
	} else if l.On {
		l.given = "--live"
	}
	return nil
}

// Flag is the flag that chose the cluster, for messages ("--live", "--context", ...).
func (l *Live) Flag() string { return l.given }

// KubeletVersionFlag is --kubelet-version: the oldest kubelet of the target cluster's
// nodes, where --kube-version alone would assume the oldest the skew policy allows.
func KubeletVersionFlag(fl *pflag.FlagSet, into *string) {
	fl.StringVar(into, "kubelet-version", "", fmt.Sprintf("with --kube-version: the oldest kubelet of the target cluster's nodes (X.Y); default %d minors older than --kube-version, the oldest the version skew policy allows", kube.MaxKubeletSkew))
}

// AssumedNodes are the nodes --kubelet-version states beside --kube-version apiserver
// (nil when it is not given): a kubelet newer than the API server is refused.
func AssumedNodes(apiserver *kube.Version, kubelet string) ([]kube.Node, error) {
	if kubelet == "" {
		return nil, nil
	}
	if apiserver == nil {
		return nil, fmt.Errorf("--kubelet-version %s goes with --kube-version", kubelet)
	}
	v, err := kube.ParseVersion(kubelet)
	if err != nil {
		return nil, fmt.Errorf("--kubelet-version: %w", err)
	}
	if apiserver.Less(v) {
		return nil, fmt.Errorf("--kubelet-version %v is newer than --kube-version %v: no kubelet is newer than its API server", v, *apiserver)
	}
	return kube.AssumedNodes(v), nil
}
