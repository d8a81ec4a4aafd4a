package release

import (
	"bytes"

	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"testing"

	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdxlib"
)

type spdxDoc struct {
	SPDXVersion  string `json:"spdxVersion"`
	CreationInfo struct {
		Created string `json:"created"`
	} `json:"creationInfo"`
	Packages []struct {
		Name, SPDXID, VersionInfo string
		ExternalRefs              []struct {
			Locator string `json:"referenceLocator"`
		} `json:"externalRefs"`
	} `json:"packages"`
	Relationships []struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	} `json:"relationships"`
}

// The SBOM names the module and every module any platform's build links (a replaced
// one by its replacement), once, sorted, each with its package URL, and the same
// builds give the same document.
func TestSBOM(t *testing.T) {
	linux := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/nap-k8s/nap"},
		Deps: []*debug.Module{{Path: "k8s.io/client-go", Version: "v0.34.1", Sum: "h1:x"}, {Path: "github.com/spf13/cobra", Version: "v1.10.1"},
			{Path: "example.com/old", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/new", Version: "v1.1.0"}}},
		Settings: []debug.BuildSetting{{Key: "vcs.time", Value: "2026-11-26T10:00:00Z"}}}
	windows := &debug.BuildInfo{Main: linux.Main, Deps: []*debug.Module{{Path: "github.com/spf13/cobra", Version: "v1.10.1"}, {Path: "github.com/inconshreveable/mousetrap", Version: "v1.1.0"}}}
	b, err := SBOM("v0.1.0", linux, windows)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := SBOM("v0.1.0", linux, windows); string(again) != string(b) {
		t.Error("the same builds give two documents")
	}
	var doc spdxDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range doc.Packages {
		got = append(got, p.Name+"@"+p.VersionInfo+" "+p.ExternalRefs[0].Locator)
	}
	want := []string{
		"github.com/nap-k8s/nap@v0.1.0 pkg:golang/github.com/nap-k8s/nap@v0.1.0",
		"example.com/new@v1.1.0 pkg:golang/example.com/new@v1.1.0",
		"github.com/inconshreveable/mousetrap@v1.1.0 pkg:golang/github.com/inconshreveable/mousetrap@v1.1.0",
		"github.com/spf13/cobra@v1.10.1 pkg:golang/github.com/spf13/cobra@v1.10.1",
		"k8s.io/client-go@v0.34.1 pkg:golang/k8s.io/client-go@v0.34.1",
	}
	if len(got) != len(want) {
		t.Fatalf("packages %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("package %d: %q, want %q", i, got[i], want[i])
		}
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.CreationInfo.Created != "2026-11-26T10:00:00Z" {
		t.Errorf("version %q, created %q", doc.SPDXVersion, doc.CreationInfo.Created)
	}
	if len(doc.Relationships) != len(doc.Packages) || doc.Relationships[0].Type != "DESCRIBES" || doc.Relationships[1].Type != "DEPENDS_ON" {
		t.Errorf("relationships %+v", doc.Relationships)
	}
	if _, err := SBOM("v0.1.0"); err == nil {
		t.Error("an SBOM of nothing")
	}
	spdxValid(t, b, len(want))
	// The validator bites: a relationship to an element that is not there.
	broken := bytes.Replace(b, []byte(`"relatedSpdxElement": "SPDXRef-Package-k8s-io-client-go"`), []byte(`"relatedSpdxElement": "SPDXRef-Package-gone"`), 1)
	if doc, err := spdxjson.Read(bytes.NewReader(broken)); err != nil || spdxlib.ValidateDocument(doc) == nil {
		t.Errorf("SPDX's validation passes a broken document (%v)", err)
	}
}

// spdxValid reads the document with SPDX's own Go library, as SPDX 2.3, and has it
// check it (element IDs unique, relationships between elements that exist).
func spdxValid(t *testing.T, b []byte, packages int) {
	t.Helper()
	doc, err := spdxjson.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("SPDX's reader: %v", err)
	}
	if err := spdxlib.ValidateDocument(doc); err != nil {
		t.Errorf("SPDX's validation: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || len(doc.Packages) != packages || len(doc.Relationships) != packages {
		t.Errorf("SPDX's reading: version %q, %d packages, %d relationships; want %d", doc.SPDXVersion, len(doc.Packages), len(doc.Relationships), packages)
	}
}

// sbomOfArchives checks the SBOM of real builds against go.mod: every module it requires
// that the plugin links is there at go.mod's version.
func sbomOfArchives(t *testing.T, version string, archives []Archive) {
	t.Helper()
	var builds []*debug.BuildInfo
	for _, a := range archives {
		builds = append(builds, a.Build)
	}
	b, err := SBOM(version, builds...)
	if err != nil {
		t.Fatal(err)
	}
	var doc spdxDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for _, p := range doc.Packages {
		have[p.Name] = p.VersionInfo
	}
	_, file, _, _ := runtime.Caller(0)
	mod, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^\t(k8s\.io/client-go|github\.com/spf13/cobra|sigs\.k8s\.io/kustomize/kyaml) (v\S+)`).FindAllStringSubmatch(string(mod), -1) {
		if have[m[1]] != m[2] {
			t.Errorf("the SBOM has %s at %q, go.mod %s", m[1], have[m[1]], m[2])
		}
	}
	spdxValid(t, b, len(doc.Packages))
	if have["github.com/nap-k8s/nap"] != version {
		t.Errorf("the module at %q", have["github.com/nap-k8s/nap"])
	}
}
