package kube

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

// InjectLabel on a pod (template) or namespace opts in ("enabled") to nap's webhook, or
// out ("disabled"); the controller reads it at admission, napctl status in reports.
const InjectLabel = "nap.dev/inject"

// KeyForArch is the ConfigMap key of the binary for arch ("nap-amd64").
func KeyForArch(arch string) string { return "nap-" + arch }
