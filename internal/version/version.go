package version

// Version of nap. The ConfigMap and the controller record it.
var Version = "v0.1.0-dev"

// Registry is where a release publishes nap's images (make dist writes them).
const Registry = "ghcr.io/nap-k8s"

// The images a release publishes.
const (
	ControllerImage = "napctl" // the controller: napctl, FROM scratch, with the sleeper for its own preStop
	SleeperImage    = "nap"    // the sleeper alone, for image volumes
)

// Image is the reference of the release image name (ControllerImage or SleeperImage)
// at version v.
func Image(name, v string) string { return Registry + "/" + name + ":" + v }
