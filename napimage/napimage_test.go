package napimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/internal/testutil/tarfiles"
	"github.com/nap-k8s/nap/sleeper"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// The image as skopeo, a tool users push it with, reads it: an index with one image per
// architecture, each image's only layer holding /nap, mode 0555, the sleeper of that
// architecture byte for byte; and the directory layout is the same image.
func TestImageWithSkopeo(t *testing.T) {
	skopeoPath := testenv.LookPath(t, "skopeo", "prereqs")
	dir := t.TempDir()
	tarball := filepath.Join(dir, "nap.tar")
	var b bytes.Buffer
	if err := Write(&b, "registry.example/nap:test"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tarball, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	layout := filepath.Join(dir, "layout")
	if err := WriteDir(layout, "registry.example/nap:test"); err != nil {
		t.Fatal(err)
	}
	skopeo := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(skopeoPath, args...).Output()
		if err != nil {
			t.Fatalf("skopeo %v: %v", args, err)
		}
		return out
	}
	var index struct {
		MediaType string
		Manifests []struct {
			Platform struct{ Architecture, OS string }
		}
	}
	if err := json.Unmarshal(skopeo("inspect", "--raw", "oci-archive:"+tarball), &index); err != nil {
		t.Fatal(err)
	}
	if index.MediaType != "application/vnd.oci.image.index.v1+json" || len(index.Manifests) != len(nap.Arches) {
		t.Fatalf("skopeo reads %+v, want an index of %d images", index, len(nap.Arches))
	}
	for i, arch := range nap.Arches {
		if p := index.Manifests[i].Platform; p.Architecture != arch || p.OS != "linux" {
			t.Errorf("image %d: %+v, want linux/%s", i, p, arch)
		}
		for _, src := range []string{"oci-archive:" + tarball, "oci:" + layout + ":registry.example/nap:test"} {
			// skopeo picks the architecture's image from the index and copies it out.
			out := filepath.Join(dir, arch+"-"+src[:3])
			skopeo("copy", "--override-arch", arch, "--override-os", "linux", src, "dir:"+out)
			var man struct{ Layers []struct{ Digest string } }
			raw, err := os.ReadFile(filepath.Join(out, "manifest.json"))
			if err != nil || json.Unmarshal(raw, &man) != nil || len(man.Layers) != 1 {
				t.Fatalf("%s %s: manifest %s %v", src, arch, raw, err)
			}
			layer, err := os.ReadFile(filepath.Join(out, man.Layers[0].Digest[len("sha256:"):]))
			if err != nil {
				t.Fatal(err)
			}
			want, err := sleeper.Binary(arch)
			if err != nil {
				t.Fatal(err)
			}
			checkLayer(t, arch, layer, want)
		}
	}
}

// checkLayer: the gzipped layer holds /nap and nothing else: mode 0555, the bytes want.
func checkLayer(t *testing.T, arch string, gz, want []byte) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(tarfiles.Gunzip(t, gz)))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		data, _ := io.ReadAll(tr)
		if h.Name == "nap" && (h.Mode != 0o555 || !bytes.Equal(data, want)) {
			t.Errorf("%s: /nap mode %o, %d bytes, want 0555 and the %d-byte sleeper", arch, h.Mode, len(data), len(want))
		}
	}
	if len(names) != 1 || names[0] != "nap" {
		t.Errorf("%s: the layer holds %v, want only nap", arch, names)
	}
}
