package napimage

import (
	"io"

	"github.com/nap-k8s/nap/internal/oci"
	"github.com/nap-k8s/nap/internal/version"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// DefaultName is the image of this version.
var DefaultName = version.Image(version.SleeperImage, version.Version)

// Images are nap's image for each architecture, under one name: /nap (mode 0555) and
// nothing else, with /nap as the entrypoint so that the image also runs as a container.
// Mounted at kube.MountPath, the binary is where the ConfigMap puts it:
// kube.MountPath/kube.BinaryName.
func Images(name string) ([]oci.Image, error) {
	var imgs []oci.Image
	for _, arch := range nap.Arches {
		b, err := sleeper.Binary(arch)
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, oci.Image{Name: name, Arch: arch, Entrypoint: []string{"/" + kube.BinaryName},
			Files: []oci.File{{Path: "/" + kube.BinaryName, Mode: 0o555, Data: b}}, User: "65534:65534"})
	}
	return imgs, nil
}

// Write writes the image as an OCI image-layout tarball (skopeo copy oci-archive:FILE
// docker://REGISTRY/nap:TAG).
func Write(w io.Writer, name string) error {
	imgs, err := Images(name)
	if err != nil {
		return err
	}
	return oci.WriteLayout(w, imgs...)
}

// WriteDir writes the image as an OCI image-layout directory (crane push DIR REF, or
// skopeo copy oci:DIR docker://...); dir must not exist yet.
func WriteDir(dir, name string) error {
	imgs, err := Images(name)
	if err != nil {
		return err
	}
	return oci.WriteLayoutDir(dir, imgs...)
}
