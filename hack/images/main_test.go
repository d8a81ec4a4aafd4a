package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nap-k8s/nap/controller/install"
	"github.com/nap-k8s/nap/internal/oci"
	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/internal/testutil/tarfiles"
	"github.com/nap-k8s/nap/internal/version"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/napimage"
)

// The controller's image is one index with amd64 and arm64, and the arm64 image works:
// its napctl runs under qemu-user and writes nap's ConfigMap, and its /nap is the arm64
// sleeper, which sleeps under qemu-user too.
func TestControllerImageArm64(t *testing.T) {
	qemu := testenv.LookPath(t, "qemu-aarch64-static", "prereqs")
	out := filepath.Join(t.TempDir(), "images.tar")
	if err := write(out, lab); err != nil {
		t.Fatal(err)
	}
	f, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	files := tarfiles.Read(t, f)
	type desc struct {
		MediaType   string
		Digest      string
		Annotations map[string]string
		Platform    struct{ Architecture string }
	}
	blob := func(d desc) []byte { return files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")] }
	var index struct{ Manifests []desc }
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	// The lab's images: the published ones under the names the commands and the chart
	// default to.
	var napctl *desc
	var names []string
	for i, m := range index.Manifests {
		name := m.Annotations["org.opencontainers.image.ref.name"]
		names = append(names, name)
		if name == install.DefaultImage {
			napctl = &index.Manifests[i]
		}
	}
	if want := []string{"docker.io/nap/pause:e2e", "docker.io/nap/app:e2e", install.DefaultImage, napimage.DefaultName}; !slices.Equal(names, want) {
		t.Errorf("images %q, want %q", names, want)
	}
	if napctl == nil || napctl.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("napctl's image: %+v, want an image index", napctl)
	}
	var arches struct{ Manifests []desc }
	if err := json.Unmarshal(blob(*napctl), &arches); err != nil || len(arches.Manifests) != 2 {
		t.Fatalf("napctl's index: %v %+v", err, arches)
	}
	var arm64 []byte
	for _, m := range arches.Manifests {
		if m.Platform.Architecture == "arm64" {
			arm64 = blob(m)
		}
	}
	var man struct{ Layers []desc }
	if err := json.Unmarshal(arm64, &man); err != nil || len(man.Layers) != 1 {
		t.Fatalf("the arm64 manifest: %v %s", err, arm64)
	}
	layer := tarfiles.Read(t, tarfiles.Gunzip(t, blob(man.Layers[0])))
	dir := t.TempDir()
	for name, want := range map[string]string{"napctl": "napctl", strings.TrimPrefix(kube.ControllerImageNapPath, "/"): "nap"} {
		if err := os.WriteFile(filepath.Join(dir, want), layer[name], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := exec.Command(qemu, filepath.Join(dir, "napctl"), "--version").Output(); err != nil || !strings.Contains(string(v), version.Version) {
		t.Errorf("the arm64 napctl's version: %v %q, want %s", err, v, version.Version)
	}
	cm, err := exec.Command(qemu, filepath.Join(dir, "napctl"), "configmap", "--namespace", "shop").Output()
	if err != nil || !bytes.Contains(cm, []byte("kind: ConfigMap")) || !bytes.Contains(cm, []byte("namespace: shop")) {
		t.Errorf("the arm64 napctl under qemu-user: %v\n%s", err, cm)
	}
	if out, err := exec.Command(qemu, filepath.Join(dir, "nap"), "0.1").CombinedOutput(); err != nil {
		t.Errorf("the arm64 image's /nap under qemu-user: %v %s", err, out)
	}
}

// A release's images are pinned by the digest each has in the release's layout, which
// pushing keeps.
func TestPinnedRefs(t *testing.T) {
	const v = "v9.9.9"
	name := version.Image(version.ControllerImage, v)
	imgs := []oci.Image{
		{Name: name, Arch: "amd64", Files: []oci.File{{Path: "/napctl", Mode: 0o755, Data: []byte("amd64")}}},
		{Name: name, Arch: "arm64", Files: []oci.File{{Path: "/napctl", Mode: 0o755, Data: []byte("arm64")}}},
		{Name: version.Image(version.SleeperImage, v), Arch: "amd64", Files: []oci.File{{Path: "/nap", Mode: 0o555, Data: []byte("nap")}}},
	}
	b, err := pinnedRefs(imgs)
	if err != nil {
		t.Fatal(err)
	}
	var layout bytes.Buffer
	if err := oci.WriteLayout(&layout, imgs...); err != nil {
		t.Fatal(err)
	}
	var index struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(tarfiles.Read(t, layout.Bytes())["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, m := range index.Manifests {
		name := m.Annotations["org.opencontainers.image.ref.name"]
		fmt.Fprintf(&want, "%s@%s\n", strings.TrimSuffix(name, ":"+v), m.Digest)
	}
	if len(index.Manifests) != 2 || string(b) != want.String() {
		t.Errorf("pinned:\n%s\nwant (the layout's):\n%s", b, want.String())
	}
}
