package main

import (
	"debug/elf"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/nap-k8s/nap/internal/oci"
)

//go:embed nginx.conf
var nginxConf []byte

// NginxImage is the lab's third-party server: Debian's nginx (hack/server-bins.sh),
// unmodified, with the shared libraries it links, FROM scratch (no shell).
const NginxImage = "docker.io/nap/nginx:e2e"

// nginx is NginxImage of the binary bin: its libraries are the machine's, found as the
// dynamic loader finds them (libDirs), each at the path it has here. nginx stops
// gracefully on SIGQUIT (it finishes its requests and closes idle keep-alive
// connections) and at once on SIGTERM; its image's STOPSIGNAL is SIGQUIT, as the nginx
// project's own images set it, and containerd's CRI stops the container with it.
func nginx(bin string) (oci.Image, error) {
	files, err := withLibraries(bin, "/usr/sbin/nginx")
	if err != nil {
		return oci.Image{}, err
	}
	files = append(files, oci.File{Path: "/etc/nginx/nginx.conf", Mode: 0o644, Data: nginxConf})
	return oci.Image{Name: NginxImage, Arch: runtime.GOARCH, Files: files, User: "65534:65534", StopSignal: "SIGQUIT",
		Entrypoint: []string{"/usr/sbin/nginx", "-e", "stderr", "-c", "/etc/nginx/nginx.conf"}}, nil
}

// HTTPBinImage is the lab's third-party Go server: go-httpbin (hack/tool-versions),
// unmodified, static, FROM scratch. On SIGTERM it calls http.Server.Shutdown: it stops
// accepting, closes its idle connections, and ends once its requests are answered.
const HTTPBinImage = "docker.io/nap/httpbin:e2e"

// httpbin is HTTPBinImage of the binary bin, on port 8080 (its default), logging
// warnings only (it logs every request at its default level).
func httpbin(bin string) (oci.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return oci.Image{}, err
	}
	return oci.Image{Name: HTTPBinImage, Arch: runtime.GOARCH, User: "65534:65534",
		Files:      []oci.File{{Path: "/go-httpbin", Mode: 0o755, Data: data}},
		Entrypoint: []string{"/go-httpbin", "-port", "8080", "-log-level", "WARN"}}, nil
}

// libDirs are where the dynamic loader of a Debian machine finds libraries.
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/lib", "/usr/lib"}

// withLibraries is the dynamically linked executable bin, at path in the image, with
// its program interpreter and every library it needs, and those need, from libDirs.
func withLibraries(bin, path string) ([]oci.File, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	files := []oci.File{{Path: path, Mode: 0o755, Data: data}}
	f, err := elf.Open(bin)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return nil, fmt.Errorf("%s: its interpreter: %w", bin, err)
		}
		interp := string(b[:len(b)-1]) // NUL-terminated
		d, err := os.ReadFile(interp)
		if err != nil {
			return nil, fmt.Errorf("%s's interpreter: %w", bin, err)
		}
		files = append(files, oci.File{Path: interp, Mode: 0o755, Data: d})
	}
	seen := map[string]bool{}
	var need func(f *elf.File, of string) error
	need = func(f *elf.File, of string) error {
		libs, err := f.ImportedLibraries()
		if err != nil {
			return fmt.Errorf("%s: %w", of, err)
		}
		for _, lib := range libs {
			if seen[lib] {
				continue
			}
			seen[lib] = true
			var found string
			for _, dir := range libDirs {
				if _, err := os.Stat(filepath.Join(dir, lib)); err == nil {
					found = filepath.Join(dir, lib)
					break
				}
			}
			if found == "" {
				return fmt.Errorf("%s needs %s, which is in none of %v: install its Debian package", of, lib, libDirs)
			}
			d, err := os.ReadFile(found)
			if err != nil {
				return err
			}
			files = append(files, oci.File{Path: found, Mode: 0o644, Data: d})
			lf, err := elf.Open(found)
			if err != nil {
				return fmt.Errorf("%s: %w", found, err)
			}
			err = need(lf, found)
			lf.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	if err := need(f, bin); err != nil {
		return nil, err
	}
	return files, nil
}
