package kube

// The nap ConfigMap and how pods mount it.
const (
	ConfigMapName = "nap"  // the ConfigMap (and the pod volume) holding the binaries
	MountPath     = "/nap" // where containers mount it read-only
	BinaryName    = "nap"  // the binary's name inside the mount: /nap/nap
	ArchLabel     = "kubernetes.io/arch"
	// ControllerImageNapPath is where the controller's image carries the nap sleeper,
	// for the controller's own preStop delay.
	ControllerImageNapPath = "/nap"
)

// KeyForArch is the ConfigMap key of the binary for arch ("nap-amd64").
func KeyForArch(arch string) string { return "nap-" + arch }
