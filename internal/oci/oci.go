package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"
)

// File is one file of an image's single layer.
type File struct {
	Path string // absolute, such as /app
	Mode int64  // such as 0o755
	Data []byte
}

// Image is a FROM scratch image: one layer, an entrypoint, a name.
type Image struct {
	Name       string // a full reference: docker.io/nap/app:e2e
	Arch       string // amd64, arm64
	Files      []File
	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string // such as 65534:65534
	// StopSignal is the signal the runtime stops the container with (containerd's CRI
	// sends it instead of SIGTERM), such as SIGQUIT; "" SIGTERM.
	StopSignal string
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type blobs map[string][]byte

func (b blobs) add(mediaType string, data []byte) descriptor {
	sum := sha256.Sum256(data)
	d := "sha256:" + hex.EncodeToString(sum[:])
	b[d] = data
	return descriptor{MediaType: mediaType, Digest: d, Size: len(data)}
}

// epoch fixes every timestamp: the same inputs give the same bytes and digests.
var epoch = time.Unix(0, 0).UTC()

// WriteLayout writes images as one OCI image-layout tarball (what `skopeo copy
// oci-archive:FILE:NAME` and `ctr images import` read). Images that share a Name are one
// multi-architecture image: an image index with a manifest per architecture, as
// registries serve them, so that each node pulls its own.
func WriteLayout(w io.Writer, images ...Image) error {
	tw := tar.NewWriter(w)
	err := layout(images, func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// WriteLayoutDir writes the same layout as files under dir (what `skopeo copy
// oci:DIR:NAME` and `crane push DIR` read); dir must not exist yet.
func WriteLayoutDir(dir string, images ...Image) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	return layout(images, func(name string, data []byte) error {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, data, 0o644)
	})
}

// Digests are the digests images get in a layout (WriteLayout, WriteLayoutDir), by
// name: what a registry serves them under once pushed, for a reference pinned by
// digest (name@sha256:...). The same images give the same digests.
func Digests(images ...Image) (map[string]string, error) {
	var index []byte
	err := layout(images, func(name string, data []byte) error {
		if name == "index.json" {
			index = data
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var idx struct{ Manifests []descriptor }
	if err := json.Unmarshal(index, &idx); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, m := range idx.Manifests {
		out[m.Annotations["org.opencontainers.image.ref.name"]] = m.Digest
	}
	return out, nil
}

// layout makes the layout's files and hands each to put: oci-layout, index.json, then
// the blobs by digest.
func layout(images []Image, put func(name string, data []byte) error) error {
	bl := blobs{}
	var manifests []descriptor
	var names []string
	byName := map[string][]descriptor{}
	for _, img := range images {
		layer, diffID, err := layerOf(img.Files)
		if err != nil {
			return fmt.Errorf("%s: %w", img.Name, err)
		}
		ld := bl.add("application/vnd.oci.image.layer.v1.tar+gzip", layer)
		config := map[string]any{"Entrypoint": img.Entrypoint, "Cmd": img.Cmd, "Env": img.Env, "User": img.User}
		if img.StopSignal != "" {
			config["StopSignal"] = img.StopSignal
		}
		cfg, _ := json.Marshal(map[string]any{
			"architecture": img.Arch,
			"os":           "linux",
			"created":      epoch.Format(time.RFC3339),
			"config":       config,
			"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{diffID}},
			"history":      []map[string]any{{"created": epoch.Format(time.RFC3339), "created_by": "nap internal/oci"}},
		})
		cd := bl.add("application/vnd.oci.image.config.v1+json", cfg)
		man, _ := json.Marshal(map[string]any{
			"schemaVersion": 2,
			"mediaType":     "application/vnd.oci.image.manifest.v1+json",
			"config":        cd,
			"layers":        []descriptor{ld},
		})
		md := bl.add("application/vnd.oci.image.manifest.v1+json", man)
		md.Platform = &platform{Architecture: img.Arch, OS: "linux"}
		if _, ok := byName[img.Name]; !ok {
			names = append(names, img.Name)
		}
		for _, d := range byName[img.Name] {
			if d.Platform.Architecture == img.Arch {
				return fmt.Errorf("%s: two images for %s", img.Name, img.Arch)
			}
		}
		byName[img.Name] = append(byName[img.Name], md)
	}
	for _, name := range names {
		md := byName[name][0]
		if len(byName[name]) > 1 {
			idx, _ := json.Marshal(map[string]any{
				"schemaVersion": 2,
				"mediaType":     "application/vnd.oci.image.index.v1+json",
				"manifests":     byName[name],
			})
			md = bl.add("application/vnd.oci.image.index.v1+json", idx)
		}
		md.Annotations = map[string]string{
			"io.containerd.image.name": name,
			// The whole name, so that one of several images in the layout can be named
			// (skopeo copy oci-archive:images.tar:ghcr.io/nap-k8s/napctl:v0.1.0 ...); the
			// spec's ref grammar allows it.
			"org.opencontainers.image.ref.name": name,
		}
		manifests = append(manifests, md)
	}
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests":     manifests,
	})
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := put("index.json", index); err != nil {
		return err
	}
	digests := make([]string, 0, len(bl))
	for d := range bl {
		digests = append(digests, d)
	}
	slices.Sort(digests)
	for _, d := range digests {
		if err := put("blobs/sha256/"+d[len("sha256:"):], bl[d]); err != nil {
			return err
		}
	}
	return nil
}

// layerOf returns the gzipped layer tarball and the digest of its uncompressed bytes,
// with the parent directories of every file.
func layerOf(files []File) (gz []byte, diffID string, err error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	dirs := map[string]bool{}
	var mkdirs func(string) error
	mkdirs = func(dir string) error {
		if dir == "/" || dir == "." || dirs[dir] {
			return nil
		}
		if err := mkdirs(path.Dir(dir)); err != nil {
			return err
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Name: dir[1:] + "/", Mode: 0o755, ModTime: epoch, Typeflag: tar.TypeDir})
	}
	for _, f := range files {
		if !path.IsAbs(f.Path) {
			return nil, "", fmt.Errorf("file %q: want an absolute path", f.Path)
		}
		if err := mkdirs(path.Dir(f.Path)); err != nil {
			return nil, "", err
		}
		if err := tw.WriteHeader(&tar.Header{Name: f.Path[1:], Mode: f.Mode, Size: int64(len(f.Data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(raw.Bytes())
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return out.Bytes(), "sha256:" + hex.EncodeToString(sum[:]), nil
}
