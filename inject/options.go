package inject

import (
	"time"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/wait"
)

// Mode is how Inject delays a container's termination.
type Mode string

// The modes.
const (
	ModeAuto   Mode = "auto"   // native when the cluster and the delay allow it, else binary
	ModeNative Mode = "native" // lifecycle.preStop.sleep (Kubernetes 1.30+, whole seconds)
	ModeBinary Mode = "binary" // exec of nap, mounted from the nap ConfigMap
)

// Options configure Inject.
type Options struct {
	// Wait is the preStop wait (package wait); the zero Wait is wait.Default(). The
	// adaptive wait needs nap's binary; its ALLOW is each template's probes'
	// (hook.Background), whatever Wait.Allow says.
	Wait wait.Wait
	Mode Mode          // default ModeAuto
	Kube *kube.Version // the target cluster's version; nil: unknown (auto picks binary)
	// Nodes are the cluster's nodes and their kubelets; nil: unknown, and any kubelet
	// the skew policy allows may run a pod (see kube.OldestKubelet).
	Nodes      []kube.Node
	Containers []string       // the containers to delay; default every regular container
	Arch       string         // the architecture when the template does not say; default amd64
	GraceExtra *time.Duration // grace period beyond the delay; nil: DefaultGraceExtra
	ConfigMap  string         // the nap ConfigMap's name; default kube.ConfigMapName
	// Delivery is how the nap binary reaches the container in ModeBinary: from the
	// ConfigMap (default), from Image as an image volume, or auto: the image volume
	// where the cluster mounts them (Kube and Nodes say so), else the ConfigMap.
	Delivery Delivery
	Image    string // nap's image (napctl image), for DeliveryImage and DeliveryAuto
	// Live: a hook that runs nap from the ConfigMap reads, when it starts, the wait nap's
	// controller keeps for the pod's workload (nap --live; kube.LiveWaitsName), which the
	// nap volume projects beside the binary, optional, as kube.LiveFile. Not for an image
	// volume, nor where the workload's pods are named by no key (a CronJob's, a pod with
	// no name): those get the volume and hook without it.
	Live bool
}

// Delivery is how the nap binary reaches the container.
type Delivery string

// The deliveries.
const (
	DeliveryConfigMap Delivery = "configmap" // a ConfigMap volume, the pod's architecture's key
	DeliveryImage     Delivery = "image"     // an image volume: the kubelet pulls its node's architecture
	DeliveryAuto      Delivery = "auto"      // image where every kubelet and runtime can, else configmap
)

// Deliveries are the deliveries, in the order help texts give them.
var Deliveries = []Delivery{DeliveryConfigMap, DeliveryImage, DeliveryAuto}

// DeliveryNames are Deliveries' names.
func DeliveryNames() []string { return names(Deliveries) }

func names[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}
