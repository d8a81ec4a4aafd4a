package install

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// monitoringValue is the value under metrics that turns each monitoring object on.
var monitoringValue = map[string]string{"ServiceMonitor": "serviceMonitor", "PrometheusRule": "prometheusRule", "ConfigMap": "dashboard"}

// rendering is one object's YAML (sentinels replaced) in some of the combinations.
type rendering struct {
	lines    []string
	variants []int
}

// slot is one object of the chart (kind and name) and its renderings.
type slot struct {
	kind, name string
	renderings []rendering
	byText     map[string]int
}

// rendered is what Objects made of every combination: each object's renderings, which
// combinations it accepted, and the messages it refused the others with.
type rendered struct {
	slots    []*slot
	valid    []bool
	refusals map[string][]bool // message → the combinations refused with it
	messages []string          // in the order first met
}

// render runs Objects on every combination of variants and keeps, per object (its
// kind), each distinct rendering with the combinations it appears in.
func render(dims []dimension, variants [][]int) (*rendered, error) {
	r := &rendered{valid: make([]bool, len(variants)), refusals: map[string][]bool{}}
	slotOf := map[string]*slot{}
	// Most objects are the same in most combinations: each distinct one (its JSON, as
	// converted) is written as YAML once (TestChartGolden alone: 51 s to 15 s, 2026-12-08).
	texts := map[string]string{}
	for vi, v := range variants {
		o := sentinelOptions()
		for d, i := range v {
			dims[d].set(&o, dims[d].values[i])
		}
		objs, err := Objects(o)
		if err != nil {
			msg := err.Error()
			if r.refusals[msg] == nil {
				r.refusals[msg] = make([]bool, len(variants))
				r.messages = append(r.messages, msg)
			}
			r.refusals[msg][vi] = true
			continue
		}
		r.valid[vi] = true
		for _, obj := range objs {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return nil, err
			}
			kind, _ := u["kind"].(string)
			if kind == "Namespace" { // helm install --create-namespace, or the user's own
				continue
			}
			name := (&unstructured.Unstructured{Object: u}).GetName()
			j, err := json.Marshal(u)
			if err != nil {
				return nil, err
			}
			text, ok := texts[string(j)]
			if !ok {
				b, err := objectYAML(u)
				if err != nil {
					return nil, err
				}
				if text, err = substitute(kind, string(b)); err != nil {
					return nil, fmt.Errorf("%s: %w", kind, err)
				}
				texts[string(j)] = text
			}
			s := slotOf[kind]
			if s == nil {
				s = &slot{kind: kind, name: name, byText: map[string]int{}}
				slotOf[kind] = s
				r.slots = append(r.slots, s)
			}
			ri, ok := s.byText[text]
			if !ok {
				ri = len(s.renderings)
				s.byText[text] = ri
				s.renderings = append(s.renderings, rendering{lines: strings.Split(strings.TrimSuffix(text, "\n"), "\n")})
			}
			s.renderings[ri].variants = append(s.renderings[ri].variants, vi)
		}
	}
	return r, nil
}

// template is slot s's template: its renderings merged line by line, each line (and
// the whole object, where some valid combinations have none) guarded by m's condition
// for the combinations it appears in.
func template(s *slot, valid []bool, m minimizer) []byte {
	present := make([]bool, len(valid))
	// The longest first: it has most of the optional lines, in their order.
	slices.SortStableFunc(s.renderings, func(a, b rendering) int { return cmp.Compare(len(b.lines), len(a.lines)) })
	var merged []mergedLine
	for _, r := range s.renderings {
		in := make([]bool, len(valid))
		for _, vi := range r.variants {
			in[vi], present[vi] = true, true
		}
		merged = merge(merged, chunks(r.lines), in)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# Generated from napctl install's objects (controller/install): do not edit.\n")
	guard := ""
	if !all(present, valid) {
		guard = m.condition(present, valid)
		fmt.Fprintf(&out, "{{- if %s }}\n", guard)
	}
	var open []bool
	for _, l := range merged {
		if open != nil && !slices.Equal(open, l.in) {
			out.WriteString("{{- end }}\n")
			open = nil
		}
		if open == nil && !all(l.in, present) {
			fmt.Fprintf(&out, "{{- if %s }}\n", m.condition(l.in, present))
			open = l.in
		}
		out.WriteString(l.text + "\n")
	}
	if open != nil {
		out.WriteString("{{- end }}\n")
	}
	if guard != "" {
		out.WriteString("{{- end }}\n")
	}
	return out.Bytes()
}

// wholeObjects are the templates of the objects that one value turns on whole, the same
// whatever the others: the monitoring, each where its value asks for it (Prometheus'
// and Grafana's own templates, {{ $labels.x }} and {{namespace}}, escaped from Helm's),
// and the NetworkPolicy (napctl install --network-policy).
func wholeObjects() (map[string][]byte, error) {
	files := map[string][]byte{}
	mon, err := MonitoringObjects(sentNamespace, sentinelMonitoring)
	if err != nil {
		return nil, err
	}
	for _, u := range mon {
		b, err := objectYAML(u.Object)
		if err != nil {
			return nil, err
		}
		text, err := substitute(u.GetKind(), strings.ReplaceAll(string(b), "{{", `{{ "{{" }}`))
		if err != nil {
			return nil, err
		}
		value := monitoringValue[u.GetKind()]
		files["templates/"+strings.ToLower(value)+".yaml"] = []byte(fmt.Sprintf("# Generated from controller/install/monitoring.go: do not edit.\n{{- if .Values.metrics.%s.enabled }}\n%s{{- end }}\n", value, text))
	}
	np, err := runtime.DefaultUnstructuredConverter.ToUnstructured(NetworkPolicyObject(sentNamespace))
	if err != nil {
		return nil, err
	}
	b, err := objectYAML(np)
	if err != nil {
		return nil, err
	}
	text, err := substitute("NetworkPolicy", string(b))
	if err != nil {
		return nil, err
	}
	files["templates/networkpolicy.yaml"] = []byte("# Generated from napctl install's objects (controller/install): do not edit.\n{{- if .Values.networkPolicy.enabled }}\n" + text + "{{- end }}\n")
	return files, nil
}

// valueRefusals are what Objects refuses of values that are no dimension and that the
// schema cannot say (it compares no two values), with its words.
var valueRefusals = []struct{ cond, msg string }{
	{`or (eq (int .Values.webhook.port) (int .Values.metrics.port)) (eq (int .Values.webhook.port) (int .Values.health.port)) (eq (int .Values.metrics.port) (int .Values.health.port))`,
		"ports webhook, metrics and health: want three different ones"},
}

// validate is templates/validate.yaml: the combinations Objects refuses, refused with
// its words.
func validate(r *rendered, m minimizer) []byte {
	var out bytes.Buffer
	out.WriteString("# The values napctl install refuses, refused with its words. Generated: do not edit.\n")
	for i, msg := range r.messages {
		// False where the values are valid or refused with a later message (Objects'
		// first refusal is the one it gives); the earlier ones have failed already.
		universe := slices.Clone(r.valid)
		for _, later := range r.messages[i:] {
			universe = or(universe, r.refusals[later])
		}
		fmt.Fprintf(&out, "{{- if %s }}\n{{- fail %q }}\n{{- end }}\n", m.condition(r.refusals[msg], universe), "nap: "+msg)
	}
	for _, v := range valueRefusals {
		fmt.Fprintf(&out, "{{- if %s }}\n{{- fail %q }}\n{{- end }}\n", v.cond, "nap: "+v.msg)
	}
	return out.Bytes()
}

// chunks are lines as merge compares them: a short list item (at most chunkLines
// lines) is one, so that items are kept or left whole; the lines of a longer one are
// compared one by one.
func chunks(lines []string) []string {
	const chunkLines = 16
	var out []string
	for i := 0; i < len(lines); {
		trimmed := strings.TrimLeft(lines[i], " ")
		if strings.HasPrefix(trimmed, "- ") {
			indent := len(lines[i]) - len(trimmed)
			j := i + 1
			for j < len(lines) && len(lines[j])-len(strings.TrimLeft(lines[j], " ")) > indent {
				j++
			}
			if j-i <= chunkLines {
				out = append(out, strings.Join(lines[i:j], "\n"))
				i = j
				continue
			}
		}
		out = append(out, lines[i])
		i++
	}
	return out
}

// mergedLine is a line of a template and the combinations it appears in.
type mergedLine struct {
	text string
	in   []bool
}

// merge adds lines (appearing in the combinations in) to merged, keeping the order of
// both: the longest common subsequence is shared, the rest interleaved. Projected onto
// any one combination, the result is that combination's lines, in order.
func merge(merged []mergedLine, lines []string, in []bool) []mergedLine {
	n, k := len(merged), len(lines)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, k+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := k - 1; j >= 0; j-- {
			if merged[i].text == lines[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []mergedLine
	i, j := 0, 0
	for i < n || j < k {
		switch {
		case i < n && j < k && merged[i].text == lines[j]:
			out = append(out, mergedLine{text: merged[i].text, in: or(merged[i].in, in)})
			i, j = i+1, j+1
		case j == k || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, merged[i])
			i++
		default:
			out = append(out, mergedLine{text: lines[j], in: in})
			j++
		}
	}
	return out
}

func or(a, b []bool) []bool {
	out := make([]bool, len(a))
	for i := range a {
		out[i] = a[i] || b[i]
	}
	return out
}

// all tells whether every combination of universe is in set.
func all(set, universe []bool) bool {
	for i := range set {
		if universe[i] && !set[i] {
			return false
		}
	}
	return true
}
