package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/nap-k8s/nap/internal/fsutil"
	"github.com/nap-k8s/nap/internal/release"
)

func main() {
	out := flag.String("o", "dist", "the folder to write into")
	version := flag.String("version", "", "the release's version (semantic, such as v0.1.0)")
	flag.Parse()
	if err := run(*out, *version); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

func run(out, version string) error {
	// The manifest refuses a version krew would, before minutes of building.
	if _, err := release.KrewManifest(version, nil); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	var archives []release.Archive
	for _, p := range release.Platforms {
		a, err := release.BuildPlugin(context.Background(), root, out, version, p)
		if err != nil {
			return err
		}
		fmt.Printf("%s  %s\n", a.SHA256, a.Path)
		archives = append(archives, a)
	}
	manifest, err := release.KrewManifest(version, archives)
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(out, "nap.yaml"), manifest, 0o644); err != nil {
		return err
	}
	// One bill of materials: what any platform's binary links.
	var builds []*debug.BuildInfo
	for _, a := range archives {
		builds = append(builds, a.Build)
	}
	sbom, err := release.SBOM(version, builds...)
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(out, "sbom.spdx.json"), sbom, 0o644); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(filepath.Join(out, "checksums.txt"), release.Checksums(archives), 0o644)
}
