package kube

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Version is a Kubernetes minor version.
type Version struct{ Major, Minor int }

// ParseVersion reads "1.30" (or "v1.30.2").
func ParseVersion(s string) (Version, error) {
	var v Version
	if _, err := fmt.Sscanf(strings.TrimPrefix(s, "v"), "%d.%d", &v.Major, &v.Minor); err != nil || v.Major < 1 {
		return v, fmt.Errorf("kube version %q: want MAJOR.MINOR, such as 1.30", s)
	}
	return v, nil
}

// Less tells whether v is older than o.
func (v Version) Less(o Version) bool {
	return v.Major < o.Major || v.Major == o.Major && v.Minor < o.Minor
}

func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// The versions that the native sleep action needs.
var (
	NativeSleepSince     = Version{1, 30} // lifecycle.preStop.sleep
	NativeSleepZeroSince = Version{1, 33} // sleep.seconds: 0
)

// MaxKubeletSkew is how many minor versions a kubelet may be older than the API
// server (Kubernetes' version skew policy since 1.28).
const MaxKubeletSkew = 3

// Node is what the choice of the native sleep action needs to know of a node.
type Node struct {
	Name    string
	Labels  map[string]string
	Kubelet Version // status.nodeInfo.kubeletVersion
	Runtime string  // status.nodeInfo.containerRuntimeVersion, such as containerd://2.1.4
	// Every: the node stands for all of them, whatever a pod selects (AssumedNodes).
	Every bool
}

// AssumedNodes are the nodes as a user states them without a cluster to read: every
// kubelet at least kubelet (napctl's --kubelet-version), in place of the oldest the skew
// policy allows beside the API server.
func AssumedNodes(kubelet Version) []Node {
	return []Node{{Name: "(every node, --kubelet-version)", Kubelet: kubelet, Every: true}}
}

// OldestKubelet is the oldest kubelet that may run a pod whose nodeSelector is selector,
// and the node that has it ("" when it is not a known node). A kubelet can only run the
// hooks it knows, so the API server's version alone does not make the native sleep
// safe. With nodes known (non-nil), the oldest of those the selector matches; when it
// matches none, or nodes are unknown, the oldest the skew policy allows.
func OldestKubelet(apiserver Version, nodes []Node, selector map[string]string) (Version, string) {
	var oldest Version
	name := ""
	for _, n := range nodes {
		if !n.Every && !matches(n.Labels, selector) {
			continue
		}
		if name == "" || n.Kubelet.Less(oldest) {
			oldest, name = n.Kubelet, n.Name
		}
	}
	if name != "" {
		return oldest, name
	}
	return Version{Major: apiserver.Major, Minor: max(apiserver.Minor-MaxKubeletSkew, 0)}, ""
}

// NodeArches are the architectures (kubernetes.io/arch) of the nodes selector matches,
// sorted, each once; a node without the label counts for none.
func NodeArches(nodes []Node, selector map[string]string) []string {
	var out []string
	for _, n := range nodes {
		if a := n.Labels[ArchLabel]; a != "" && matches(n.Labels, selector) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// NodesRead tells whether nodes were read from a cluster: not unknown (nil), and not
// only AssumedNodes, which say nothing of the nodes' labels.
func NodesRead(nodes []Node) bool {
	for _, n := range nodes {
		if !n.Every {
			return true
		}
	}
	return false
}

func matches(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// NodeOf is what OldestKubelet needs of n. A kubelet version that does not parse is an
// error: guessing it could put a sleep action on a kubelet that lacks it.
func NodeOf(n *corev1.Node) (Node, error) {
	v, err := ParseVersion(n.Status.NodeInfo.KubeletVersion)
	if err != nil {
		return Node{}, fmt.Errorf("node %s: kubelet %w", n.Name, err)
	}
	return Node{Name: n.Name, Labels: n.Labels, Kubelet: v, Runtime: n.Status.NodeInfo.ContainerRuntimeVersion}, nil
}

// ImageVolumeSince is the first Kubernetes whose kubelets mount image volumes by
// default (KEP-4639: beta behind the ImageVolume feature gate in 1.33 and 1.34).
var ImageVolumeSince = Version{1, 35}

// ImageVolumes tells whether a node mounts image volumes by default, and if not, why:
// its kubelet (ImageVolumeSince) and its container runtime (containerd 2.1+, CRI-O
// 1.31+; another runtime is not known to).
func ImageVolumes(n Node) (bool, string) {
	if n.Kubelet.Less(ImageVolumeSince) {
		return false, fmt.Sprintf("node %s runs kubelet %v; image volumes are on by default from %v", n.Name, n.Kubelet, ImageVolumeSince)
	}
	name, ver, _ := strings.Cut(n.Runtime, "://")
	want := map[string]Version{"containerd": {2, 1}, "cri-o": {1, 31}}[name]
	if want == (Version{}) {
		return false, fmt.Sprintf("node %s runs %q, not known to mount image volumes (containerd 2.1+, CRI-O 1.31+ do)", n.Name, n.Runtime)
	}
	v, err := ParseVersion(ver)
	if err != nil || v.Less(want) {
		return false, fmt.Sprintf("node %s runs %s; image volumes need %s %v+", n.Name, n.Runtime, name, want)
	}
	return true, ""
}

// IsWindows tells whether pods of spec run on Windows nodes (spec.os.name, or a
// nodeSelector on OSLabel), where nap's binary, a Linux executable, cannot run.
func IsWindows(spec corev1.PodSpec) bool {
	return spec.OS != nil && spec.OS.Name == Windows || spec.NodeSelector[OSLabel] == Windows
}
