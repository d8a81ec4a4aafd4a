package lint

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// MarshalJSON writes a finding with exactly its fields, the severity as a word, the
// object always as Kind/namespace/name (the namespace empty where the manifest names
// none, as its own field is then too: present, "").
func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding
	return json.Marshal(struct {
		plain
		Severity  string `json:"severity"`
		Object    string `json:"object"`
		Namespace string `json:"namespace"`
	}{plain(f), f.Severity.String(), f.Kind + "/" + f.Namespace + "/" + f.Name, f.Namespace})
}

// Text writes one line a finding (file:line: severity: object[/container]: message
// [id]) and its fix hint.
func Text(w io.Writer, fs []Finding) error {
	for _, f := range fs {
		obj := f.Object
		if f.Container != "" {
			obj += " container " + f.Container
		}
		fmt.Fprintf(w, "%s:%d: %s: %s: %s [%s]\n", f.File, f.Line, f.Severity, obj, f.Message, f.ID)
		if f.Hint != "" {
			fmt.Fprintf(w, "    fix: %s\n", f.Hint)
		}
	}
	counts := map[Severity]int{}
	for _, f := range fs {
		counts[f.Severity]++
	}
	_, err := fmt.Fprintf(w, "%d error(s), %d warning(s)\n", counts[Error], counts[Warning])
	return err
}

// JSON writes the findings as a versioned JSON report (Report).
func JSON(w io.Writer, fs []Finding) error {
	if fs == nil {
		fs = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Report{APIVersion: ReportAPIVersion, Kind: ReportKind, Findings: fs})
}

// The JSON report's version: a change that breaks a reader of it is a new version.
const (
	ReportAPIVersion = "lint.nap.dev/v1"
	ReportKind       = "LintReport"
)

// Report is napctl lint -o json: the findings under a versioned envelope.
type Report struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Findings   []Finding `json:"findings"`
}

// SARIF writes the findings as a SARIF 2.1.0 log, for code-scanning tools.
func SARIF(w io.Writer, fs []Finding, toolVersion string) error {
	type text struct {
		Text string `json:"text"`
	}
	type rule struct {
		ID               string `json:"id"`
		ShortDescription text   `json:"shortDescription"`
		DefaultConfig    struct {
			Level string `json:"level"`
		} `json:"defaultConfiguration"`
	}
	type region struct {
		StartLine int `json:"startLine"`
	}
	type location struct {
		PhysicalLocation struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region region `json:"region"`
		} `json:"physicalLocation"`
	}
	type result struct {
		RuleID    string     `json:"ruleId"`
		RuleIndex int        `json:"ruleIndex"`
		Level     string     `json:"level"`
		Message   text       `json:"message"`
		Locations []location `json:"locations"`
	}
	var rules []rule
	index := map[string]int{}
	for i, c := range Checks() {
		r := rule{ID: c.ID, ShortDescription: text{c.Title}}
		r.DefaultConfig.Level = c.Severity.String()
		rules = append(rules, r)
		index[c.ID] = i
	}
	results := []result{}
	for _, f := range fs {
		var loc location
		loc.PhysicalLocation.ArtifactLocation.URI = strings.TrimPrefix(f.File, "./")
		loc.PhysicalLocation.Region.StartLine = max(f.Line, 1)
		msg := f.Object + ": " + f.Message
		if f.Hint != "" {
			msg += " Fix: " + f.Hint
		}
		results = append(results, result{RuleID: f.ID, RuleIndex: index[f.ID], Level: f.Severity.String(), Message: text{msg}, Locations: []location{loc}})
	}
	log := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name":           "napctl lint",
				"version":        toolVersion,
				"informationUri": "https://github.com/nap-k8s/nap",
				"rules":          rules,
			}},
			"results": results,
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}
