package install

import (
	"bytes"
	"embed"
	"fmt"
	"maps"
	"slices"
	"strings"
	texttemplate "text/template"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/version"
	"github.com/nap-k8s/nap/scope"
)

// ChartDir is where the Helm chart lives, from the repository's top folder.
const ChartDir = "charts/nap"

// Resources are the controller's default requests and limits.
func Resources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
}

// The chart is generated from Objects, so that `helm install` and `napctl install` cannot
// drift: Objects is rendered once for every combination of the values that choose
// objects, lines or flags (the dimensions), with sentinels where a value is copied
// through (the image, the namespace, the waits' durations...). Each object's renderings
// are merged line by line into one template, every line guarded by the Helm condition
// under which it appears, and the sentinels are replaced with the values' expressions.
// The combinations Objects refuses become the chart's own refusals (templates/validate.yaml),
// with Objects' messages. TestChart* render both with the real helm and compare.
//
// One file a step: the dimensions, sentinels and substitutions (chart_dimensions.go),
// the renderings and their merge (chart_render.go), the conditions' minimizer
// (chart_minimize.go), values.yaml and its schema (chart_values.go), and the text files
// with the vocabulary written in (chart/, embedded).

// Chart returns the files of the Helm chart, by path under ChartDir. It is a pipeline
// of named steps: render Objects in every combination of the dimensions (render), merge
// each object's renderings into one template whose lines are guarded by the
// combinations they appear in (template, with the minimizer's conditions), the objects
// that one value turns on whole (the monitoring, the NetworkPolicy), the refusals
// (validate), and the files that are text with the vocabulary written in (the
// embedded chart/ files, values.yaml and its schema).
func Chart() (map[string][]byte, error) {
	dims := dimensions()
	variants := combinations(dims)
	r, err := render(dims, variants)
	if err != nil {
		return nil, err
	}
	m := newMinimizer(dims, variants)
	files := map[string][]byte{}
	for _, s := range r.slots {
		t := template(s, r.valid, m)
		if g, ok := objectGuards[s.kind]; ok {
			t = slices.Concat([]byte("{{- if "+g+" }}\n"), t, []byte("{{- end }}\n"))
		}
		files["templates/"+strings.ToLower(s.kind)+".yaml"] = t
	}
	whole, err := wholeObjects()
	if err != nil {
		return nil, err
	}
	maps.Copy(files, whole)
	files["templates/validate.yaml"] = validate(r, m)
	texts, err := textFiles()
	if err != nil {
		return nil, err
	}
	maps.Copy(files, texts)
	return files, nil
}

// combinations are every combination of the dimensions' values: an index into each
// dimension's values, one per dimension.
func combinations(dims []dimension) [][]int {
	var variants [][]int
	var walk func(v []int)
	walk = func(v []int) {
		if len(v) == len(dims) {
			variants = append(variants, slices.Clone(v))
			return
		}
		for i := range dims[len(v)].values {
			walk(append(v, i))
		}
	}
	walk(nil)
	return variants
}

// textFiles are the chart's files that are text with nap's vocabulary written in:
// Chart.yaml, templates/_helpers.tpl and templates/NOTES.txt, and values.yaml and its
// schema.
func textFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	for name, path := range map[string]string{"Chart.yaml": "Chart.yaml", "_helpers.tpl": "templates/_helpers.tpl", "NOTES.txt": "templates/NOTES.txt"} {
		if err := chartText(files, name, path); err != nil {
			return nil, err
		}
	}
	values, err := valuesYAML()
	if err != nil {
		return nil, err
	}
	files["values.yaml"] = values
	schema, err := valuesSchema()
	if err != nil {
		return nil, err
	}
	files["values.schema.json"] = schema
	return files, nil
}

// chartTexts are the chart's files that are Helm text with nap's vocabulary written in
// ([[ ]] marks it, Helm's own is {{ }}): Chart.yaml, the helpers (the image, and the
// auto values resolved as napctl install resolves them) and the notes.
//
//go:embed chart/Chart.yaml chart/_helpers.tpl chart/NOTES.txt
var chartTexts embed.FS

// vocabulary is what chartTexts write in.
func vocabulary() map[string]any {
	by, _ := scope.ByServiceScopes()
	quoted := make([]string, len(by))
	for i, s := range by {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	return map[string]any{
		"Version": version.Version, "ChartVersion": strings.TrimPrefix(version.Version, "v"),
		"ScopeFlag": scope.Flag, "OptIn": string(scope.OptIn), "InjectLabel": scope.InjectLabel, "Enabled": scope.Enabled,
		"PodSecurityLabel": PodSecurityLabel, "PodSecurityLevel": PodSecurityLevel,
		"PolicyAPIV1": controller.PolicyAPIV1, "PolicyAPIV1beta": controller.PolicyAPIV1beta,
		"ByServiceScopes": strings.Join(quoted, " "), "DeliveryAuto": string(inject.DeliveryAuto),
	}
}

// chartText is chartTexts' file name, written out under path.
func chartText(files map[string][]byte, name, path string) error {
	t, err := texttemplate.New(name).Delims("[[", "]]").Funcs(texttemplate.FuncMap{
		// has is the Helm condition "the API server serves the MutatingAdmissionPolicy
		// at group/version gv".
		"has": func(gv string) string {
			return fmt.Sprintf(`(.Capabilities.APIVersions.Has "%s/MutatingAdmissionPolicy")`, gv)
		},
	}).ParseFS(chartTexts, "chart/"+name)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, vocabulary()); err != nil {
		return err
	}
	files[path] = b.Bytes()
	return nil
}
