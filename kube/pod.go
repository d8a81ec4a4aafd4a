package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The nap ConfigMap and how pods mount it.
const (
	ConfigMapName = "nap"  // the ConfigMap holding the binaries (its default name)
	VolumeName    = "nap"  // the pod volume nap's hook runs from: the ConfigMap or nap's image
	MountPath     = "/nap" // where containers mount it read-only
	BinaryName    = "nap"  // the binary's name inside the mount: /nap/nap
	ArchLabel     = "kubernetes.io/arch"
	OSLabel       = "kubernetes.io/os" // "windows": nodes that cannot run nap's Linux binary
	Windows       = "windows"
	// ControllerImageNapPath is where the controller's image carries the nap sleeper,
	// for the controller's own preStop delay.
	ControllerImageNapPath = "/nap"
)

// The live waits: what each workload's pods should wait now, kept by nap's controller
// in a ConfigMap of each namespace, one key per workload (LiveKey), which a pod's nap
// volume projects, optional, as the file nap --live reads (nap.LivePath).
const (
	LiveWaitsName = "nap-waits"
	LiveFile      = "wait" // the file in the mount: /nap/wait
	// LiveKeyMax bounds a key: with the longest line (48 bytes), 10,000 workloads fit
	// in a ConfigMap's 1 MiB of keys and values.
	LiveKeyMax = 56
)

// LiveKey is w's key in LiveWaitsName: its kind in lower case, a dot, its name
// ("deployment.web"); one over LiveKeyMax keeps its first characters and ends with a
// hash of the whole.
func LiveKey(w Workload) string {
	k := strings.ToLower(w.Kind) + "." + w.Name
	if len(k) <= LiveKeyMax {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	h := hex.EncodeToString(sum[:8])
	return k[:LiveKeyMax-1-len(h)] + "-" + h
}

// InjectLabel on a pod (template) or namespace opts in ("enabled") to nap's webhook, or
// out ("disabled"); the controller reads it at admission, napctl status in reports.
const InjectLabel = "nap.dev/inject"

// KeyForArch is the ConfigMap key of the binary for arch ("nap-amd64").
func KeyForArch(arch string) string { return "nap-" + arch }

// pullFailures are the reasons the kubelet gives a container whose image it cannot get;
// none of them passes by waiting a few seconds more.
var pullFailures = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// ImagePullFailure is the first container of pods whose image the kubelet cannot pull:
// its image and the kubelet's reason and message ("" when none).
func ImagePullFailure(pods []corev1.Pod) (image, reason, message string) {
	for _, p := range pods {
		for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, s := range statuses {
				if w := s.State.Waiting; w != nil && pullFailures[w.Reason] {
					return s.Image, w.Reason, w.Message
				}
			}
		}
	}
	return "", "", ""
}

// ManagedByLabel is Kubernetes' recommended label naming who keeps an object; nap sets
// it on everything it writes (ManagedByController where the controller keeps it).
const (
	ManagedByLabel      = "app.kubernetes.io/managed-by"
	ManagedByController = "nap-controller"
)
