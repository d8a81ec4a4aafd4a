package release

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
)

// SBOM is the software bill of materials of builds of one module (the platforms'), as
// SPDX 2.3 JSON: the module (at version) and every module linked into any of them, as
// the binaries' own build information records them (runtime/debug: path, version,
// go.sum hash), each with its package URL. It is deterministic: its time is the
// commit's (vcs.time) where the build recorded one.
func SBOM(version string, builds ...*debug.BuildInfo) ([]byte, error) {
	if len(builds) == 0 || builds[0] == nil || builds[0].Main.Path == "" {
		return nil, fmt.Errorf("no build information to describe")
	}
	bi := builds[0]
	var deps []*debug.Module
	linked := map[string]bool{}
	for _, b := range builds {
		for _, m := range b.Deps {
			if m.Replace != nil {
				m = m.Replace
			}
			if !linked[m.Path+"@"+m.Version] {
				linked[m.Path+"@"+m.Version] = true
				deps = append(deps, m)
			}
		}
	}
	slices.SortFunc(deps, func(a, b *debug.Module) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Version, b.Version))
	})
	type ref struct {
		Category string `json:"referenceCategory"`
		Type     string `json:"referenceType"`
		Locator  string `json:"referenceLocator"`
	}
	type pkg struct {
		Name             string `json:"name"`
		SPDXID           string `json:"SPDXID"`
		VersionInfo      string `json:"versionInfo"`
		DownloadLocation string `json:"downloadLocation"`
		FilesAnalyzed    bool   `json:"filesAnalyzed"`
		Comment          string `json:"comment,omitempty"`
		ExternalRefs     []ref  `json:"externalRefs"`
	}
	type rel struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	}
	id := func(path string) string {
		return "SPDXRef-Package-" + strings.NewReplacer("/", "-", ".", "-", "_", "-", "~", "-").Replace(path)
	}
	purl := func(path, v string) ref {
		return ref{"PACKAGE-MANAGER", "purl", "pkg:golang/" + path + "@" + v}
	}
	main := pkg{Name: bi.Main.Path, SPDXID: id(bi.Main.Path), VersionInfo: version, DownloadLocation: "https://" + bi.Main.Path,
		ExternalRefs: []ref{purl(bi.Main.Path, version)}}
	pkgs := []pkg{main}
	rels := []rel{{"SPDXRef-DOCUMENT", "DESCRIBES", main.SPDXID}}
	for _, m := range deps {
		p := pkg{Name: m.Path, SPDXID: id(m.Path), VersionInfo: m.Version, DownloadLocation: "https://proxy.golang.org/" + m.Path + "/@v/" + m.Version + ".zip",
			ExternalRefs: []ref{purl(m.Path, m.Version)}}
		if m.Sum != "" {
			p.Comment = "go.sum " + m.Sum
		}
		pkgs = append(pkgs, p)
		rels = append(rels, rel{main.SPDXID, "DEPENDS_ON", p.SPDXID})
	}
	created := "1970-01-01T00:00:00Z"
	for _, s := range bi.Settings {
		if s.Key == "vcs.time" {
			created = s.Value
		}
	}
	body, err := json.Marshal(pkgs)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	doc := map[string]any{
		"spdxVersion":       "SPDX-2.3",
		"dataLicense":       "CC0-1.0",
		"SPDXID":            "SPDXRef-DOCUMENT",
		"name":              "nap-" + version,
		"documentNamespace": "https://" + bi.Main.Path + "/sbom/" + version + "-" + hex.EncodeToString(sum[:8]),
		"creationInfo":      map[string]any{"created": created, "creators": []string{"Tool: nap-dist", "Tool: " + bi.GoVersion}},
		"packages":          pkgs,
		"relationships":     rels,
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	return append(b, '\n'), err
}
