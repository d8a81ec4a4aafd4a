package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/nap-k8s/nap/internal/fsutil"
)

// Platform is an operating system and architecture the plugin is built for.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Platforms are the plugin's, as krew names them.
var Platforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// Repository is where releases are published.
const Repository = "https://github.com/nap-k8s/nap"

// The plugin's files in each archive: the plugin, its completion (kubectl 1.26+ runs
// kubectl_complete-nap from PATH) and the license.
const (
	PluginBinary   = "kubectl-nap"
	CompleteScript = "kubectl_complete-nap"
	License        = "LICENSE"
)

// Archive is one platform's archive of the plugin.
type Archive struct {
	Platform Platform
	Path     string
	SHA256   string
	// Build is the plugin binary's build information (its modules: SBOM).
	Build *debug.BuildInfo
}

// Name is the archive's file name for a platform.
func Name(p Platform) string { return fmt.Sprintf("kubectl-nap_%s_%s.tar.gz", p.OS, p.Arch) }

var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// BuildPlugin builds the plugin for p from the module at root, version stamped, into an
// archive in dir.
func BuildPlugin(ctx context.Context, root, dir, version string, p Platform) (Archive, error) {
	bin := filepath.Join(dir, "build-"+p.OS+"-"+p.Arch, PluginBinary)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -X github.com/nap-k8s/nap/internal/version.Version="+version,
		"-o", bin, "./cmd/kubectl-nap")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return Archive{}, fmt.Errorf("building %s for %s: %v\n%s", PluginBinary, p, err, out)
	}
	defer os.RemoveAll(filepath.Dir(bin))
	build, err := buildinfo.ReadFile(bin)
	if err != nil {
		return Archive{}, fmt.Errorf("the build information of %s for %s: %w", PluginBinary, p, err)
	}
	files := []struct {
		name, src string
		mode      int64
	}{
		{PluginBinary, bin, 0o755},
		{CompleteScript, filepath.Join(root, "cmd", "kubectl-nap", CompleteScript), 0o755},
		{License, filepath.Join(root, License), 0o644},
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		b, err := os.ReadFile(f.src)
		if err != nil {
			return Archive{}, err
		}
		// Fixed times and owners: the same sources give the same archive.
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(b)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return Archive{}, err
		}
		if _, err := tw.Write(b); err != nil {
			return Archive{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Archive{}, err
	}
	if err := zw.Close(); err != nil {
		return Archive{}, err
	}
	path := filepath.Join(dir, Name(p))
	if err := fsutil.WriteFileAtomic(path, buf.Bytes(), 0o644); err != nil {
		return Archive{}, err
	}
	sum := sha256.Sum256(buf.Bytes())
	return Archive{Platform: p, Path: path, SHA256: hex.EncodeToString(sum[:]), Build: build}, nil
}

// KrewManifest is the krew plugin manifest (krew-index's plugins/nap.yaml) of a
// version, naming the archives as the release publishes them.
func KrewManifest(version string, archives []Archive) ([]byte, error) {
	if !semver.MatchString(version) {
		return nil, fmt.Errorf("version %q: krew wants a semantic version such as v0.1.0 (make dist VERSION=v0.1.0)", version)
	}
	var platforms []any
	for _, a := range archives {
		platforms = append(platforms, map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"os": a.Platform.OS, "arch": a.Platform.Arch}},
			"uri":      fmt.Sprintf("%s/releases/download/%s/%s", Repository, version, Name(a.Platform)),
			"sha256":   a.SHA256,
			"files": []any{
				map[string]any{"from": PluginBinary, "to": "."},
				map[string]any{"from": CompleteScript, "to": "."},
				map[string]any{"from": License, "to": "."},
			},
			"bin": PluginBinary,
		})
	}
	return yaml.Marshal(map[string]any{
		"apiVersion": "krew.googlecontainertools.github.com/v1alpha2",
		"kind":       "Plugin",
		"metadata":   map[string]any{"name": "nap"},
		"spec": map[string]any{
			"version":          version,
			"homepage":         Repository,
			"shortDescription": "End dropped requests when pods terminate",
			"description": "nap gives pods a preStop delay that works in any image (scratch and\n" +
				"distroless too), so that they keep serving until every route forgets them.\n" +
				"kubectl nap lint finds what will drop requests in manifests or a cluster,\n" +
				"kubectl nap inject adds the delays, kubectl nap status shows which pods\n" +
				"are protected, kubectl nap probe counts the failed requests of a rollout.\n",
			"platforms": platforms,
		},
	})
}

// Checksums is a sha256sum file of the archives.
func Checksums(archives []Archive) []byte {
	var b bytes.Buffer
	for _, a := range archives {
		fmt.Fprintf(&b, "%s  %s\n", a.SHA256, filepath.Base(a.Path))
	}
	return b.Bytes()
}
