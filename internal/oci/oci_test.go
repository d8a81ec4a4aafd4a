package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/nap-k8s/nap/internal/testutil/tarfiles"
)

// The layout is what containerd imports: every blob is named by its digest, the index
// names each image, each manifest points at blobs that are there, and the layer holds
// the files with their modes and parent directories.
func TestWriteLayout(t *testing.T) {
	img := Image{Name: "docker.io/nap/x:e2e", Arch: "amd64", Entrypoint: []string{"/bin/x", "inf"},
		Files: []File{{Path: "/bin/x", Mode: 0o755, Data: []byte("\x7fELF...")}}}
	var a, b bytes.Buffer
	if err := WriteLayout(&a, img); err != nil {
		t.Fatal(err)
	}
	if err := WriteLayout(&b, img); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the same image twice gave different bytes")
	}
	files := map[string][]byte{}
	tr := tar.NewReader(&a)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name], _ = io.ReadAll(tr)
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", files["oci-layout"])
	}
	blob := func(d descriptor) []byte { return blobOf(t, files, d) }
	var index struct{ Manifests []descriptor }
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index: %v %s", err, files["index.json"])
	}
	md := index.Manifests[0]
	if md.Annotations["io.containerd.image.name"] != img.Name || md.Annotations["org.opencontainers.image.ref.name"] != img.Name {
		t.Errorf("annotations %v", md.Annotations)
	}
	var man struct {
		Config descriptor
		Layers []descriptor
	}
	if err := json.Unmarshal(blob(md), &man); err != nil || len(man.Layers) != 1 {
		t.Fatalf("manifest: %v", err)
	}
	var cfg struct {
		Architecture string
		Config       struct{ Entrypoint []string }
		RootFS       struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(blob(man.Config), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != "amd64" || len(cfg.Config.Entrypoint) != 2 {
		t.Errorf("config %+v", cfg)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(man.Layers[0])))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(zr)
	sum := sha256.Sum256(raw)
	if len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("diff_ids %v do not name the uncompressed layer", cfg.RootFS.DiffIDs)
	}
	lr := tar.NewReader(bytes.NewReader(raw))
	var names []string
	for {
		h, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "bin/x" && h.Mode != 0o755 {
			t.Errorf("bin/x mode %o", h.Mode)
		}
	}
	if len(names) != 2 || names[0] != "bin/" || names[1] != "bin/x" {
		t.Errorf("layer entries %v", names)
	}
}

func TestRelativePathRefused(t *testing.T) {
	if err := WriteLayout(io.Discard, Image{Name: "x", Files: []File{{Path: "x"}}}); err == nil {
		t.Error("a relative path was accepted")
	}
}

// Images that share a name are one multi-architecture image: index.json names an image
// index whose manifests are one per architecture, each with its platform and its own
// config and layer. The directory layout holds the same files as the tarball.
func TestWriteLayoutMultiArch(t *testing.T) {
	imgs := []Image{
		{Name: "docker.io/nap/nap:1", Arch: "amd64", Files: []File{{Path: "/nap", Mode: 0o555, Data: []byte("amd64 nap")}}},
		{Name: "docker.io/nap/nap:1", Arch: "arm64", Files: []File{{Path: "/nap", Mode: 0o555, Data: []byte("arm64 nap")}}},
		{Name: "docker.io/nap/other:1", Arch: "amd64", Files: []File{{Path: "/x", Mode: 0o555, Data: []byte("x")}}},
	}
	var tb bytes.Buffer
	if err := WriteLayout(&tb, imgs...); err != nil {
		t.Fatal(err)
	}
	files := tarfiles.Read(t, tb.Bytes())
	blob := func(d descriptor) []byte { return blobOf(t, files, d) }
	var index struct{ Manifests []descriptor }
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 2 {
		t.Fatalf("index: %v %s", err, files["index.json"])
	}
	multi := index.Manifests[0]
	if multi.MediaType != "application/vnd.oci.image.index.v1+json" || multi.Annotations["org.opencontainers.image.ref.name"] != "docker.io/nap/nap:1" {
		t.Fatalf("the multi-architecture image: %+v", multi)
	}
	if index.Manifests[1].MediaType != "application/vnd.oci.image.manifest.v1+json" {
		t.Errorf("the single-architecture image: %+v", index.Manifests[1])
	}
	var inner struct{ Manifests []descriptor }
	if err := json.Unmarshal(blob(multi), &inner); err != nil || len(inner.Manifests) != 2 {
		t.Fatalf("image index: %v", err)
	}
	for i, arch := range []string{"amd64", "arm64"} {
		md := inner.Manifests[i]
		if md.Platform == nil || md.Platform.Architecture != arch || md.Platform.OS != "linux" {
			t.Errorf("manifest %d: platform %+v, want linux/%s", i, md.Platform, arch)
		}
		var man struct {
			Config descriptor
			Layers []descriptor
		}
		if err := json.Unmarshal(blob(md), &man); err != nil {
			t.Fatal(err)
		}
		var cfg struct{ Architecture string }
		if err := json.Unmarshal(blob(man.Config), &cfg); err != nil || cfg.Architecture != arch {
			t.Errorf("%s config: %v %+v", arch, err, cfg)
		}
		layer := tarfiles.Read(t, tarfiles.Gunzip(t, blob(man.Layers[0])))
		if string(layer["nap"]) != arch+" nap" {
			t.Errorf("%s layer: %q", arch, layer["nap"])
		}
	}

	dir := filepath.Join(t.TempDir(), "layout")
	if err := WriteLayoutDir(dir, imgs...); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s in the directory: %v", name, err)
		}
	}
	if err := WriteLayout(io.Discard, imgs[0], imgs[0]); err == nil {
		t.Error("two images of one name and architecture were accepted")
	}
}

// blobOf is the layout's blob d names, checked against its digest and size.
func blobOf(t *testing.T, files map[string][]byte, d descriptor) []byte {
	t.Helper()
	data, ok := files["blobs/sha256/"+d.Digest[len("sha256:"):]]
	sum := sha256.Sum256(data)
	if !ok || "sha256:"+hex.EncodeToString(sum[:]) != d.Digest || len(data) != d.Size {
		t.Fatalf("blob %s: present %v, %d bytes", d.Digest, ok, len(data))
	}
	return data
}
