package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/nap-k8s/nap/internal/fsutil"
	"github.com/nap-k8s/nap/internal/oci"
	"github.com/nap-k8s/nap/internal/version"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/napimage"
	"github.com/nap-k8s/nap/sleeper"
	"github.com/nap-k8s/nap/sleeper/nap"
)

func main() {
	out := flag.String("o", "images.tar", "the tarball to write")
	traefik := flag.String("traefik", "", "write only the ingress image, of this Traefik binary")
	coredns := flag.String("coredns", "", "write only the cluster DNS image, of this CoreDNS binary")
	release := flag.String("version", "", "write only the images a release of this version publishes")
	pinned := flag.String("pinned", "", "with -version: also write the images' references pinned by digest (REPOSITORY@sha256:...), one a line, to this file")
	nginxBin := flag.String("nginx", "", "also write the lab's nginx image, of this Debian nginx binary (hack/server-bins.sh)")
	httpbinBin := flag.String("httpbin", "", "also write the lab's go-httpbin image, of this binary (hack/tool-bins.sh)")
	flag.Parse()
	var err error
	switch {
	case *traefik != "":
		err = single(*out, "docker.io/nap/traefik:e2e", "/traefik", *traefik)
	case *coredns != "":
		err = single(*out, "docker.io/nap/coredns:e2e", "/coredns", *coredns)
	case *release != "":
		err = write(*out, func(tmp string) ([]oci.Image, error) {
			imgs, err := published(tmp, *release)
			if err == nil && *pinned != "" {
				err = writePinned(*pinned, imgs)
			}
			return imgs, err
		})
	default:
		err = write(*out, func(tmp string) ([]oci.Image, error) {
			imgs, err := lab(tmp)
			// The third-party servers, each of the binary its flag names.
			for _, sv := range []struct {
				bin   string
				image func(string) (oci.Image, error)
			}{{*nginxBin, nginx}, {*httpbinBin, httpbin}} {
				if err != nil || sv.bin == "" {
					continue
				}
				var img oci.Image
				img, err = sv.image(sv.bin)
				imgs = append(imgs, img)
			}
			return imgs, err
		})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

// write writes the images images returns (building in a temporary folder) to out.
func write(out string, images func(tmp string) ([]oci.Image, error)) error {
	tmp, err := os.MkdirTemp("", "nap-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	imgs, err := images(tmp)
	if err != nil {
		return err
	}
	var tarball bytes.Buffer
	if err := oci.WriteLayout(&tarball, imgs...); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(out, tarball.Bytes(), 0o644)
}

// lab is what the lab runs: its pod sandbox, the demo app, and the published images
// of this build's version, under the names the commands and the chart default to.
func lab(tmp string) ([]oci.Image, error) {
	arch := runtime.GOARCH
	pause, err := sleeper.Binary(arch)
	if err != nil {
		return nil, err
	}
	app, err := build(tmp, arch, "github.com/nap-k8s/nap/test/app", "")
	if err != nil {
		return nil, err
	}
	images := []oci.Image{
		{Name: "docker.io/nap/pause:e2e", Arch: arch, Files: []oci.File{{Path: "/pause", Mode: 0o755, Data: pause}}, Entrypoint: []string{"/pause", "inf"}, User: "65534:65534"},
		{Name: "docker.io/nap/app:e2e", Arch: arch, Files: []oci.File{{Path: "/app", Mode: 0o755, Data: app}}, Entrypoint: []string{"/app"}, User: "65534:65534"},
	}
	pub, err := published(tmp, version.Version)
	return append(images, pub...), err
}

// published are the images a release of version v publishes, named
// version.Image(..., v): the controller's (napctl, its version stamped v) and nap's own.
func published(tmp, v string) ([]oci.Image, error) {
	// The controller's image for every architecture nap has, as one index: installs
	// work on arm64 clusters too. Each carries its own architecture's sleeper.
	var images []oci.Image
	for _, a := range nap.Arches {
		napctl, err := build(tmp, a, "github.com/nap-k8s/nap/cmd/napctl", v)
		if err != nil {
			return nil, err
		}
		sl, err := sleeper.Binary(a)
		if err != nil {
			return nil, err
		}
		images = append(images, oci.Image{Name: version.Image(version.ControllerImage, v), Arch: a, Entrypoint: []string{"/napctl"}, User: "65532:65532",
			Files: []oci.File{{Path: "/napctl", Mode: 0o755, Data: napctl}, {Path: kube.ControllerImageNapPath, Mode: 0o755, Data: sl}}})
	}
	// nap's own image (napctl image), for image volumes.
	nap, err := napimage.Images(version.Image(version.SleeperImage, v))
	return append(images, nap...), err
}

// pinnedRefs are the references of imgs pinned by the digest each has in their layout
// (what the registry serves once they are pushed), one a line, in order: no tag moved
// later changes what a cluster runs. make dist passes the controller's to napctl
// install --image.
func pinnedRefs(imgs []oci.Image) ([]byte, error) {
	digests, err := oci.Digests(imgs...)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	seen := map[string]bool{}
	for _, img := range imgs {
		if seen[img.Name] {
			continue
		}
		seen[img.Name] = true
		repo := img.Name
		if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
			repo = repo[:i]
		}
		fmt.Fprintf(&b, "%s@%s\n", repo, digests[img.Name])
	}
	return b.Bytes(), nil
}

func writePinned(out string, imgs []oci.Image) error {
	b, err := pinnedRefs(imgs)
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(out, b, 0o644)
}

// single writes to out the tarball of one image, name, of one static binary, bin, as
// path: a third-party binary of the lab's, large, that changes only with its version.
func single(out, name, path, bin string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	img := oci.Image{Name: name, Arch: runtime.GOARCH, Files: []oci.File{{Path: path, Mode: 0o755, Data: data}},
		Entrypoint: []string{path}, User: "65532:65532"}
	var tarball bytes.Buffer
	if err := oci.WriteLayout(&tarball, img); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(out, tarball.Bytes(), 0o644)
}

// build compiles pkg, static, for arch (its version stamped v, unless empty), and
// returns the binary.
func build(tmp, arch, pkg, v string) ([]byte, error) {
	bin := filepath.Join(tmp, filepath.Base(pkg))
	ldflags := "-s -w"
	if v != "" {
		ldflags += " -X github.com/nap-k8s/nap/internal/version.Version=" + v
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", ldflags, "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building %s: %w", pkg, err)
	}
	return os.ReadFile(bin)
}
