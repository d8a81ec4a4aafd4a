package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/nap-k8s/nap/internal/fsutil"
	"github.com/nap-k8s/nap/internal/oci"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/napimage"
	"github.com/nap-k8s/nap/sleeper"
	"github.com/nap-k8s/nap/sleeper/spec"
)

func main() {
	out := flag.String("o", "images.tar", "the tarball to write")
	traefik := flag.String("traefik", "", "write only the ingress image, of this Traefik binary")
	flag.Parse()
	var err error
	if *traefik != "" {
		err = ingress(*out, *traefik)
	} else {
		err = run(*out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	arch := runtime.GOARCH
	pause, err := sleeper.Binary(arch)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "nap-images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	app, err := build(tmp, arch, "github.com/nap-k8s/nap/test/app")
	if err != nil {
		return err
	}
	images := []oci.Image{
		{Name: "docker.io/nap/pause:e2e", Arch: arch, Files: []oci.File{{Path: "/pause", Mode: 0o755, Data: pause}}, Entrypoint: []string{"/pause", "inf"}, User: "65534:65534"},
		{Name: "docker.io/nap/app:e2e", Arch: arch, Files: []oci.File{{Path: "/app", Mode: 0o755, Data: app}}, Entrypoint: []string{"/app"}, User: "65534:65534"},
	}
	// The controller's image for every architecture nap has, as one index: installs
	// work on arm64 clusters too. Each carries its own architecture's sleeper.
	for _, a := range spec.Arches {
		napctl, err := build(tmp, a, "github.com/nap-k8s/nap/cmd/napctl")
		if err != nil {
			return err
		}
		sl, err := sleeper.Binary(a)
		if err != nil {
			return err
		}
		images = append(images, oci.Image{Name: "docker.io/nap/napctl:e2e", Arch: a, Entrypoint: []string{"/napctl"}, User: "65532:65532",
			Files: []oci.File{{Path: "/napctl", Mode: 0o755, Data: napctl}, {Path: kube.ControllerImageNapPath, Mode: 0o755, Data: sl}}})
	}
	// nap's own image (napctl image), for image volumes.
	nap, err := napimage.Images("docker.io/nap/nap:e2e")
	if err != nil {
		return err
	}
	images = append(images, nap...)
	var tarball bytes.Buffer
	if err := oci.WriteLayout(&tarball, images...); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(out, tarball.Bytes(), 0o644)
}

func ingress(out, bin string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	img := oci.Image{Name: "docker.io/nap/traefik:e2e", Arch: runtime.GOARCH, Files: []oci.File{{Path: "/traefik", Mode: 0o755, Data: data}},
		Entrypoint: []string{"/traefik"}, User: "65532:65532"}
	var tarball bytes.Buffer
	if err := oci.WriteLayout(&tarball, img); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(out, tarball.Bytes(), 0o644)
}

// build compiles pkg, static, for arch, and returns the binary.
func build(tmp, arch, pkg string) ([]byte, error) {
	bin := filepath.Join(tmp, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building %s: %w", pkg, err)
	}
	return os.ReadFile(bin)
}
