package release

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"debug/elf"
	"debug/macho"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nap-k8s/nap/internal/testenv"
)

// The plugin's archives for every platform and the krew manifest naming them, as krew
// users meet them: krew-index's own validator accepts the manifest, and `kubectl krew
// install --manifest --archive` installs every platform's archive (checking its sha256,
// its files and its binary), which is a binary of that platform.
func TestDistKrew(t *testing.T) {
	validate := testenv.Tool(t, "validate-krew-manifest")
	krew := testenv.Tool(t, "krew")
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir := t.TempDir()
	const version = "v0.1.0-test"
	var archives []Archive
	for _, p := range Platforms {
		a, err := BuildPlugin(context.Background(), root, dir, version, p)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, a)
	}
	// The same sources give the same archive, with the plugin, its completion and the license.
	again, err := BuildPlugin(context.Background(), root, t.TempDir(), version, archives[0].Platform)
	if err != nil {
		t.Fatal(err)
	}
	if again.SHA256 != archives[0].SHA256 {
		t.Errorf("two builds of %s differ: %s, %s", again.Platform, archives[0].SHA256, again.SHA256)
	}
	if got := strings.Join(archiveNames(t, again.Path), ","); got != PluginBinary+","+CompleteScript+","+License {
		t.Errorf("archive files %s", got)
	}
	sbomOfArchives(t, version, archives)
	manifest, err := KrewManifest(version, archives)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nap.yaml") // krew takes the plugin's name from the file's
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(validate, "-skip-install", "-manifest", path).CombinedOutput(); err != nil {
		t.Fatalf("validate-krew-manifest: %v\n%s", err, out)
	}
	for _, a := range archives {
		t.Run(a.Platform.String(), func(t *testing.T) {
			kroot := t.TempDir()
			cmd := exec.Command(krew, "install", "--manifest", path, "--archive", a.Path)
			cmd.Env = append(os.Environ(), "KREW_ROOT="+kroot, "KREW_OS="+a.Platform.OS, "KREW_ARCH="+a.Platform.Arch)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("krew install: %v\n%s", err, out)
			}
			bin := filepath.Join(kroot, "store", "nap", version, PluginBinary)
			for _, f := range []string{bin, filepath.Join(kroot, "store", "nap", version, CompleteScript), filepath.Join(kroot, "store", "nap", version, License)} {
				if _, err := os.Stat(f); err != nil {
					t.Errorf("installed: %v", err)
				}
			}
			if got := binaryPlatform(t, bin); got != a.Platform {
				t.Errorf("the installed plugin is for %s", got)
			}
			if a.Platform.OS == runtime.GOOS && a.Platform.Arch == runtime.GOARCH {
				// krew links the plugin into its bin folder, which users put on PATH.
				out, err := exec.Command(filepath.Join(kroot, "bin", PluginBinary), "--version").CombinedOutput()
				if err != nil || !strings.Contains(string(out), version) {
					t.Errorf("kubectl-nap --version: %v: %s", err, out)
				}
			}
		})
	}
	// A corrupted archive fails krew's checksum.
	bad := filepath.Join(dir, "corrupt.tar.gz")
	b, _ := os.ReadFile(archives[0].Path)
	b[len(b)/2] ^= 0xff
	os.WriteFile(bad, b, 0o644)
	cmd := exec.Command(krew, "install", "--manifest", path, "--archive", bad)
	cmd.Env = append(os.Environ(), "KREW_ROOT="+t.TempDir(), "KREW_OS=linux", "KREW_ARCH=amd64")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "checksum does not match") {
		t.Errorf("krew installed a corrupted archive: %v\n%s", err, out)
	}
	if _, err := KrewManifest("c274395-dirty", archives); err == nil {
		t.Error("a manifest for a version that is not semantic")
	}
}

// archiveNames are the files of an archive, in order.
func archiveNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
	}
	return names
}

// binaryPlatform is the OS and architecture an executable is for.
func binaryPlatform(t *testing.T, path string) Platform {
	t.Helper()
	if f, err := elf.Open(path); err == nil {
		defer f.Close()
		switch f.Machine {
		case elf.EM_X86_64:
			return Platform{"linux", "amd64"}
		case elf.EM_AARCH64:
			return Platform{"linux", "arm64"}
		}
		return Platform{"linux", f.Machine.String()}
	}
	f, err := macho.Open(path)
	if err != nil {
		t.Fatalf("%s is neither ELF nor Mach-O: %v", path, err)
	}
	defer f.Close()
	switch f.Cpu {
	case macho.CpuAmd64:
		return Platform{"darwin", "amd64"}
	case macho.CpuArm64:
		return Platform{"darwin", "arm64"}
	}
	return Platform{"darwin", f.Cpu.String()}
}
