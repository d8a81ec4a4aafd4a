// Command images writes the end-to-end tests' container images, FROM scratch, as one
// OCI image-layout tarball for `ctr -n k8s.io images import`:
//
//	docker.io/nap/pause:e2e  the pod sandbox: the nap sleeper, sleeping forever
//	docker.io/nap/app:e2e    the demo service (test/app), static, no shell
//
// usage: go run ./hack/images -o images.tar
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/oci"
	"github.com/nap-k8s/nap/sleeper"
)

func main() {
	out := flag.String("o", "images.tar", "the tarball to write")
	flag.Parse()
	if err := run(*out); err != nil {
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
	appBin := filepath.Join(tmp, "app")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", appBin, "github.com/nap-k8s/nap/test/app")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOARCH="+arch)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building test/app: %w", err)
	}
	app, err := os.ReadFile(appBin)
	if err != nil {
		return err
	}
	images := []oci.Image{
		{Name: "docker.io/nap/pause:e2e", Arch: arch, Files: []oci.File{{Path: "/pause", Mode: 0o755, Data: pause}}, Entrypoint: []string{"/pause", "inf"}, User: "65534:65534"},
		{Name: "docker.io/nap/app:e2e", Arch: arch, Files: []oci.File{{Path: "/app", Mode: 0o755, Data: app}}, Entrypoint: []string{"/app"}, User: "65534:65534"},
	}
	var tarball bytes.Buffer
	if err := oci.WriteLayout(&tarball, images...); err != nil {
		return err
	}
	return cli.WriteFileAtomic(out, tarball.Bytes(), 0o644)
}
