package install

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/version"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

// ChartDir is where the Helm chart lives, from the repository's top folder.
const ChartDir = "charts/nap"

// The chart is generated from Objects, so that `helm install` and `napctl install` cannot
// drift: Objects is rendered once for every combination of the values that choose
// objects, lines or flags (the dimensions below), with sentinels where a value is copied
// through (the image, the namespace, the waits' durations...). Each object's renderings
// are merged line by line into one template, every line guarded by the Helm condition
// under which it appears, and the sentinels are replaced with the values' expressions.
// The combinations Objects refuses become the chart's own refusals (templates/validate.yaml),
// with Objects' messages. TestChart* render both with the real helm and compare.

// dimension is one value of the chart that chooses between renderings.
type dimension struct {
	values []string
	// expr is the Helm condition "the dimension has value v" (negated: has not).
	expr func(v string, negated bool) string
	set  func(o *Options, v string)
}

func eqExpr(field string) func(v string, negated bool) string {
	return func(v string, negated bool) string {
		return fmt.Sprintf("%s %s %q", map[bool]string{false: "eq", true: "ne"}[negated], field, v)
	}
}

// boolExpr is a dimension whose values are "" (false, empty) and "y" (true, set).
func boolExpr(field string) func(v string, negated bool) string {
	return func(v string, negated bool) string {
		if (v == "") != negated {
			return "not " + field
		}
		return field
	}
}

// The sentinels: values that pass Objects' checks and appear nowhere else in its output.
const (
	sentNamespace = "nsnapsentinel"
	sentImage     = "ctlimagesentinel.invalid/napctl:s"
	sentNapImage  = "napimagesentinel.invalid/nap:s"
	sentDelay     = "11.0101s"
	sentMax       = "61021ms" // whole ms: the policy writes MAX back as wait.Arg
	sentMin       = "1303ms"  // the policy has it also as nanoseconds and as wait.Arg
	sentQuiet     = "2041ms"
	sentRequests  = "1409ms"
	sentSelector  = "selsentinel=s"
	sentExclude   = "exsentinel"
	sentReplicas  = 7919
	sentCPU       = "7919m"
	sentNodeSel   = "nodeselsentinel"
	sentToler     = "tolsentinel"
	sentPriority  = "prisentinel"
	sentSpread    = "tscsentinel"
)

// blocks are the values the chart writes whole, found in Objects' output by their
// sentinel: resources always (toYaml of the value), the scheduling values only where
// set (a scalar as it is).
var blocks = []struct {
	key, sentinel string
	optional      bool
	scalar        bool
}{
	{"resources", sentCPU, false, false},
	{"nodeSelector", sentNodeSel, true, false},
	{"tolerations", sentToler, true, false},
	{"priorityClassName", sentPriority, true, true},
	{"topologySpreadConstraints", sentSpread, true, false},
}

// The helpers that resolve auto values at install, from what the API server serves.
const (
	admissionHelper = `include "nap.admission" .`
	policyAPIHelper = `include "nap.policyAPIVersion" .`
)

func dimensions() []dimension {
	scopes, deliveries, waits := scope.Names(), inject.DeliveryNames(), wait.KindNames()
	return []dimension{
		{values: []string{string(AdmissionWebhook), string(AdmissionPolicy)}, expr: eqExpr("(" + admissionHelper + ")"),
			set: func(o *Options, v string) { o.Admission = Admission(v) }},
		{values: []string{controller.PolicyAPIV1, controller.PolicyAPIV1beta}, expr: eqExpr("(" + policyAPIHelper + ")"),
			set: func(o *Options, v string) { o.PolicyAPIVersion = v }},
		{values: []string{"", "y"}, expr: boolExpr(".Values.certManager.enabled"),
			set: func(o *Options, v string) { o.CertManager = v != "" }},
		{values: []string{"", "y"}, expr: boolExpr(".Values.rollMissed"),
			set: func(o *Options, v string) { o.RollMissed = v != "" }},
		{values: deliveries, expr: eqExpr(".Values.delivery.mode"),
			set: func(o *Options, v string) {
				o.Delivery = inject.Delivery(v)
				if o.Delivery != inject.DeliveryConfigMap {
					o.NapImage = sentNapImage
				}
			}},
		{values: waits, expr: eqExpr(".Values.wait.mode"),
			set: func(o *Options, v string) { o.Waits.Kind = v }},
		// MIN 0 leaves it out of the adaptive hook's command.
		{values: []string{"0", "y"}, expr: func(v string, negated bool) string {
			return eqExpr(`(include "nap.ns" .Values.wait.min)`)("0", (v == "0") == negated)
		},
			set: func(o *Options, v string) {
				if v == "0" {
					o.Waits.Min = "0"
				}
			}},
		// WITHIN 0 (the request signal off) leaves --requests out of the controller's
		// arguments and the adaptive hook's command.
		{values: []string{"0", "y"}, expr: func(v string, negated bool) string {
			return eqExpr(`(include "nap.ns" .Values.wait.requests)`)("0", (v == "0") == negated)
		},
			set: func(o *Options, v string) {
				if v == "0" {
					o.Waits.Requests = "0"
				}
			}},
		{values: scopes, expr: eqExpr(".Values." + scope.Flag),
			set: func(o *Options, v string) { o.Scope = scope.Scope(v) }},
		// One replica: no PodDisruptionBudget (it would block every drain).
		{values: []string{"", "y"}, expr: func(v string, negated bool) string {
			if (v == "y") != negated {
				return "eq (int .Values.replicas) 1"
			}
			return "ne (int .Values.replicas) 1"
		},
			set: func(o *Options, v string) {
				if v == "y" {
					o.Replicas = 1
				}
			}},
		{values: []string{"", "y"}, expr: boolExpr(".Values.namespaceSelector"),
			set: func(o *Options, v string) {
				if v != "" {
					o.NamespaceSelector = sentSelector
				}
			}},
		{values: []string{"", "y"}, expr: boolExpr(".Values.excludeNamespaces"),
			set: func(o *Options, v string) {
				if v != "" {
					o.ExcludeNamespaces = []string{sentExclude}
				}
			}},
	}
}

// policySubstitutions come first in the MutatingAdmissionPolicy, which has the adaptive
// wait's MIN and QUIET in nanoseconds and as the hook's arguments (wait.Arg); the
// chart's helpers compute both (values in whole ms or s).
var policySubstitutions = []struct{ sentinel, expr string }{
	{nanoseconds(sentMin), `{{ include "nap.ns" .Values.wait.min }}`},
	{nanoseconds(sentQuiet), `{{ include "nap.ns" .Values.wait.quiet }}`},
	{sentMin, `{{ include "nap.arg" .Values.wait.min }}`},
	{sentQuiet, `{{ include "nap.arg" .Values.wait.quiet }}`},
	{sentRequests, `{{ include "nap.arg" .Values.wait.requests }}`},
}

func nanoseconds(d string) string {
	v, err := time.ParseDuration(d)
	if err != nil {
		panic(err)
	}
	return fmt.Sprint(v.Nanoseconds())
}

// leftovers are the forms a sentinel may take in Objects' output (its text; a
// duration's number, nanoseconds and Go form): none may be left after substitution.
func leftovers() []string {
	out := []string{"sentinel", fmt.Sprint(sentReplicas)}
	for _, d := range []string{sentDelay, sentMax, sentMin, sentQuiet, sentRequests} {
		v, _ := time.ParseDuration(d)
		out = append(out, strings.TrimRight(d, "ms"), nanoseconds(d), strings.TrimSuffix(v.String(), "s"))
	}
	return out
}

// substitutions turn a sentinel into the value's expression, in this order.
var substitutions = []struct{ sentinel, expr string }{
	{"--min=0\n", "--min={{ .Values.wait.min }}\n"},
	{sentImage, `{{ include "nap.image" . }}`},
	{sentNapImage, `{{ .Values.delivery.napImage }}`},
	{sentNamespace, `{{ .Release.Namespace }}`},
	{sentDelay, `{{ .Values.wait.delay }}`},
	{sentMax, `{{ .Values.wait.max }}`},
	{sentMin, `{{ .Values.wait.min }}`},
	{sentQuiet, `{{ .Values.wait.quiet }}`},
	{sentRequests, `{{ .Values.wait.requests }}`},
	{sentSelector, `{{ .Values.namespaceSelector }}`},
	{sentExclude, `{{ join "," .Values.excludeNamespaces }}`},
	{fmt.Sprintf("replicas: %d", sentReplicas), `replicas: {{ .Values.replicas }}`},
	{"replicas: 1\n", "replicas: {{ .Values.replicas }}\n"}, // the one-replica dimension's
}

// Resources are the controller's default requests and limits.
func Resources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
}

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

// Chart returns the files of the Helm chart, by path under ChartDir.
func Chart() (map[string][]byte, error) {
	dims := dimensions()
	var variants [][]int // value indexes, one per dimension
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

	valid := make([]bool, len(variants))
	refusals := map[string][]bool{} // message → variants refused with it
	var messages []string
	var slots []*slot
	slotOf := map[string]*slot{}
	for vi, v := range variants {
		o := Options{Namespace: sentNamespace, Image: sentImage, Replicas: sentReplicas,
			Waits:             wait.Input{Delay: sentDelay, Max: sentMax, Min: sentMin, Quiet: sentQuiet, Requests: sentRequests},
			Resources:         &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(sentCPU)}},
			NodeSelector:      map[string]string{sentNodeSel: "s"},
			Tolerations:       []corev1.Toleration{{Key: sentToler, Operator: corev1.TolerationOpExists}},
			PriorityClassName: sentPriority,
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: sentSpread, WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": controller.Name}}}}}
		for d, i := range v {
			dims[d].set(&o, dims[d].values[i])
		}
		objs, err := Objects(o)
		if err != nil {
			msg := err.Error()
			if refusals[msg] == nil {
				refusals[msg] = make([]bool, len(variants))
				messages = append(messages, msg)
			}
			refusals[msg][vi] = true
			continue
		}
		valid[vi] = true
		for _, obj := range objs {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return nil, err
			}
			kind, _ := u["kind"].(string)
			if kind == "Namespace" { // helm install --create-namespace, or the user's own
				continue
			}
			b, err := objectYAML(u)
			if err != nil {
				return nil, err
			}
			text, err := substitute(kind, string(b))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", kind, err)
			}
			name := (&unstructured.Unstructured{Object: u}).GetName()
			s := slotOf[kind]
			if s == nil {
				s = &slot{kind: kind, name: name, byText: map[string]int{}}
				slotOf[kind] = s
				slots = append(slots, s)
			}
			r, ok := s.byText[text]
			if !ok {
				r = len(s.renderings)
				s.byText[text] = r
				s.renderings = append(s.renderings, rendering{lines: strings.Split(strings.TrimSuffix(text, "\n"), "\n")})
			}
			s.renderings[r].variants = append(s.renderings[r].variants, vi)
		}
	}

	m := newMinimizer(dims, variants)
	files := map[string][]byte{}
	for _, s := range slots {
		present := make([]bool, len(variants))
		// The longest first: it has most of the optional lines, in their order.
		slices.SortStableFunc(s.renderings, func(a, b rendering) int { return cmp.Compare(len(b.lines), len(a.lines)) })
		var merged []mergedLine
		for _, r := range s.renderings {
			in := make([]bool, len(variants))
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
		files["templates/"+strings.ToLower(s.kind)+".yaml"] = out.Bytes()
	}

	// The monitoring, each where its value asks for it. Prometheus' and Grafana's own
	// templates ({{ $labels.x }}, {{namespace}}) are escaped from Helm's.
	mon, err := MonitoringObjects(sentNamespace)
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

	// The NetworkPolicy, where networkPolicy.enabled asks for it (napctl install
	// --network-policy): the same whatever the other values.
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

	var validate bytes.Buffer
	validate.WriteString("# The values napctl install refuses, refused with its words. Generated: do not edit.\n")
	for i, msg := range messages {
		// False where the values are valid or refused with a later message (Objects'
		// first refusal is the one it gives); the earlier ones have failed already.
		universe := slices.Clone(valid)
		for _, later := range messages[i:] {
			universe = or(universe, refusals[later])
		}
		fmt.Fprintf(&validate, "{{- if %s }}\n{{- fail %q }}\n{{- end }}\n", m.condition(refusals[msg], universe), "nap: "+msg)
	}
	files["templates/validate.yaml"] = validate.Bytes()
	files["templates/_helpers.tpl"] = []byte(helpers())
	files["Chart.yaml"] = []byte(chartYAML)
	files["templates/NOTES.txt"] = []byte(notes)
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

// substitute replaces the sentinels in an object's YAML with the values' expressions.
func substitute(kind, text string) (string, error) {
	if kind == "MutatingAdmissionPolicy" {
		for _, s := range policySubstitutions {
			text = strings.ReplaceAll(text, s.sentinel, s.expr)
		}
	}
	for _, s := range substitutions {
		text = strings.ReplaceAll(text, s.sentinel, s.expr)
	}
	// The blocks, whole: toYaml of the value; the optional ones only where set.
	lines := strings.Split(text, "\n")
	for _, b := range blocks {
		for i := 0; i < len(lines); i++ {
			trimmed := strings.TrimLeft(lines[i], " ")
			if trimmed != b.key+":" && !(b.scalar && strings.HasPrefix(trimmed, b.key+": ")) {
				continue
			}
			indent := len(lines[i]) - len(trimmed)
			j := i + 1
			for !b.scalar && j < len(lines) {
				in := len(lines[j]) - len(strings.TrimLeft(lines[j], " "))
				// A list's items may sit at its key's indent.
				if in < indent || in == indent && !strings.HasPrefix(strings.TrimLeft(lines[j], " "), "- ") || lines[j] == "" {
					break
				}
				j++
			}
			if !strings.Contains(strings.Join(lines[i:j], "\n"), b.sentinel) {
				continue
			}
			pad := lines[i][:indent]
			repl := []string{fmt.Sprintf("%s%s: {{- toYaml .Values.%s | nindent %d }}", pad, b.key, b.key, indent+2)}
			switch {
			case b.scalar:
				repl = []string{fmt.Sprintf("%s%s: {{ . }}", pad, b.key)}
				fallthrough
			case b.optional:
				if !b.scalar {
					repl = []string{fmt.Sprintf("%s%s: {{- toYaml . | nindent %d }}", pad, b.key, indent+2)}
				}
				repl = append([]string{"{{- with .Values." + b.key + " }}"}, append(repl, "{{- end }}")...)
			}
			lines = append(lines[:i], append(repl, lines[j:]...)...)
			i += len(repl) - 1
		}
	}
	text = strings.Join(lines, "\n")
	for _, s := range leftovers() {
		if strings.Contains(text, s) {
			return "", fmt.Errorf("a sentinel (%s) is left where the chart does not know its value", s)
		}
	}
	return text, nil
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

// literal is "dimension d has (or, negated, has not) value v".
type literal struct {
	d, v    int
	negated bool
}

// minimizer writes the shortest Helm condition it finds for a set of combinations.
type minimizer struct {
	dims     []dimension
	variants [][]int
	conjs    [][]literal // every conjunction of up to three literals of distinct dimensions
}

func newMinimizer(dims []dimension, variants [][]int) minimizer {
	m := minimizer{dims: dims, variants: variants}
	lits := m.literals()
	for a := range lits {
		m.conjs = append(m.conjs, []literal{lits[a]})
	}
	for a := range lits {
		for b := a + 1; b < len(lits); b++ {
			if lits[a].d != lits[b].d {
				m.conjs = append(m.conjs, []literal{lits[a], lits[b]})
			}
		}
	}
	for a := range lits {
		for b := a + 1; b < len(lits); b++ {
			for c := b + 1; c < len(lits); c++ {
				if lits[a].d != lits[b].d && lits[b].d != lits[c].d && lits[a].d != lits[c].d {
					m.conjs = append(m.conjs, []literal{lits[a], lits[b], lits[c]})
				}
			}
		}
	}
	return m
}

func (m minimizer) literals() []literal {
	var out []literal
	for d, dim := range m.dims {
		for v := range dim.values {
			out = append(out, literal{d: d, v: v})
			if len(dim.values) > 2 {
				out = append(out, literal{d: d, v: v, negated: true})
			}
		}
	}
	return out
}

func (m minimizer) holds(conj []literal, vi int) bool {
	for _, l := range conj {
		if (m.variants[vi][l.d] == l.v) == l.negated {
			return false
		}
	}
	return true
}

// condition is a Helm condition true on the combinations of universe in set and false
// on the others of universe (outside universe it may be either): one conjunction of up
// to three literals where one does, else a disjunction of such conjunctions.
func (m minimizer) condition(set, universe []bool) string {
	conjs := m.conjs
	exact := func(conj []literal) (ok bool, covers int) {
		for vi := range m.variants {
			if !universe[vi] {
				continue
			}
			h := m.holds(conj, vi)
			if h && !set[vi] {
				return false, 0
			}
			if h {
				covers++
			}
		}
		return true, covers
	}
	want := 0
	for vi := range m.variants {
		if universe[vi] && set[vi] {
			want++
		}
	}
	for _, c := range conjs {
		if ok, n := exact(c); ok && n == want {
			return m.conjExpr(c)
		}
	}
	// A disjunction of prime implicants: from a combination not yet covered, all its
	// literals, then without each one that is not needed to stay inside set.
	left := slices.Clone(set)
	var terms []string
	for vi := range m.variants {
		if !universe[vi] || !left[vi] {
			continue
		}
		var conj []literal
		for d, v := range m.variants[vi] {
			conj = append(conj, literal{d: d, v: v})
		}
		for i := 0; i < len(conj); {
			shorter := slices.Delete(slices.Clone(conj), i, i+1)
			if ok, _ := exact(shorter); ok {
				conj = shorter
			} else {
				i++
			}
		}
		for vj := range m.variants {
			if m.holds(conj, vj) {
				left[vj] = false
			}
		}
		terms = append(terms, "("+m.conjExpr(conj)+")")
	}
	if len(terms) == 1 {
		return strings.TrimSuffix(strings.TrimPrefix(terms[0], "("), ")")
	}
	return "or " + strings.Join(terms, " ")
}

func (m minimizer) conjExpr(conj []literal) string {
	if len(conj) == 0 {
		return "true"
	}
	if len(conj) == 1 {
		return m.litExpr(conj[0])
	}
	parts := make([]string, len(conj))
	for i, l := range conj {
		parts[i] = "(" + m.litExpr(l) + ")"
	}
	return "and " + strings.Join(parts, " ")
}

func (m minimizer) litExpr(l literal) string {
	return m.dims[l.d].expr(m.dims[l.d].values[l.v], l.negated)
}

// helpers is templates/_helpers.tpl: the image and the auto values resolved.
func helpers() string {
	by, _ := scope.ByServiceScopes()
	quoted := make([]string, len(by))
	for i, s := range by {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	has := func(gv string) string {
		return fmt.Sprintf(`(.Capabilities.APIVersions.Has "%s/MutatingAdmissionPolicy")`, gv)
	}
	return `{{/* Generated (controller/install/chart.go): do not edit. */}}

{{/* The controller's image: image.repository with image.digest, else image.tag (default the chart's appVersion). */}}
{{- define "nap.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* admission.mode, auto resolved as napctl install --admission auto does: the
MutatingAdmissionPolicy where the API server serves it, unless what the values ask needs
the webhook (a policy that reads Services, delivery auto, cert-manager). */}}
{{- define "nap.admission" -}}
{{- if ne .Values.admission.mode "auto" -}}
{{ .Values.admission.mode }}
{{- else if and (or ` + has(controller.PolicyAPIV1) + ` ` + has(controller.PolicyAPIV1beta) + `) (not (has .Values.` + scope.Flag + ` (list ` + strings.Join(quoted, " ") + `))) (ne .Values.delivery.mode "` + string(inject.DeliveryAuto) + `") (not .Values.certManager.enabled) -}}
policy
{{- else -}}
webhook
{{- end -}}
{{- end }}

{{/* A duration of the values in whole ms or s ("0", "1500ms", "2s"): nanoseconds, and as the hook's argument (wait.Arg). */}}
{{- define "nap.ns" -}}
{{- if eq . "0" -}}
0
{{- else if hasSuffix "ms" . -}}
{{ mul (trimSuffix "ms" .) 1000000 }}
{{- else -}}
{{ mul (trimSuffix "s" .) 1000000000 }}
{{- end -}}
{{- end }}

{{- define "nap.arg" -}}
{{- $ns := include "nap.ns" . | int64 -}}
{{- if eq (mod $ns 1000000000) 0 -}}
{{ div $ns 1000000000 }}s
{{- else -}}
{{ div $ns 1000000 }}ms
{{- end -}}
{{- end }}

{{/* The MutatingAdmissionPolicy's API: admission.policyAPIVersion, else the one the API server serves (v1 first). */}}
{{- define "nap.policyAPIVersion" -}}
{{- if .Values.admission.policyAPIVersion -}}
{{ .Values.admission.policyAPIVersion }}
{{- else if ` + has(controller.PolicyAPIV1) + ` -}}
` + controller.PolicyAPIV1 + `
{{- else if ` + has(controller.PolicyAPIV1beta) + ` -}}
` + controller.PolicyAPIV1beta + `
{{- else -}}
` + controller.PolicyAPIV1 + `
{{- end -}}
{{- end }}
`
}

var chartYAML = `# Generated (controller/install/chart.go): do not edit.
apiVersion: v2
name: nap
description: "Ends dropped requests when Kubernetes replaces pods: a preStop delay for every Service-backed pod, injected at admission."
type: application
version: ` + strings.TrimPrefix(version.Version, "v") + `
appVersion: ` + version.Version + `
kubeVersion: ">=1.30.0-0"
home: https://github.com/nap-k8s/nap
sources:
  - https://github.com/nap-k8s/nap
keywords:
  - prestop
  - graceful-shutdown
  - zero-downtime
  - admission-webhook
`

var notes = `nap's controller is installed in {{ .Release.Namespace }} ({{ include "nap.admission" . }} admission, policy {{ .Values.` + scope.Flag + ` }}).
{{- if eq .Values.` + scope.Flag + ` "` + string(scope.OptIn) + `" }}

Pods get the preStop delay where they or their namespace opt in:
  kubectl label namespace NAMESPACE ` + scope.InjectLabel + `=` + scope.Enabled + `
{{- end }}

What is protected, and what is not:
  kubectl nap status
{{- /* Not there yet: helm install --create-namespace makes it without the label. */}}
{{- if ne (dig "metadata" "labels" "` + PodSecurityLabel + `" "" (lookup "v1" "Namespace" "" .Release.Namespace)) "` + PodSecurityLevel + `" }}

The namespace {{ .Release.Namespace }} does not enforce Pod Security "` + PodSecurityLevel + `", which the
controller meets and napctl install's namespace enforces (helm cannot label the namespace
it creates):
  kubectl label namespace {{ .Release.Namespace }} ` + PodSecurityLabel + `=` + PodSecurityLevel + `
{{- end }}
`

// valuesYAML is values.yaml: the defaults, documented.
func valuesYAML() ([]byte, error) {
	r := Resources()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&r)
	if err != nil {
		return nil, err
	}
	res, err := objectYAML(u)
	if err != nil {
		return nil, err
	}
	repo, _, _ := strings.Cut(DefaultImage, ":")
	var b strings.Builder
	fmt.Fprintf(&b, `# nap's controller. Every value here is a flag of napctl install; the chart and
# napctl install render the same objects for the same values (the namespace is the
# release's: helm install nap charts/nap -n %[1]s --create-namespace).
# Generated (controller/install/chart.go): do not edit.

# The controller's image (napctl, FROM scratch). The tag defaults to the chart's appVersion.
image:
  repository: %[2]s
  tag: ""
  digest: ""

replicas: 2

# Which pods get the delay without an explicit opt-in (%[3]s): %[4]s.
%[3]s: %[5]s

admission:
  # webhook (the controller's), policy (a MutatingAdmissionPolicy the API server runs;
  # Kubernetes 1.36, or 1.34+ with the beta API), or auto (policy where the API server
  # serves it and the values allow it).
  mode: %[6]s
  # The MutatingAdmissionPolicy API; default the one the API server serves.
  policyAPIVersion: ""

delivery:
  # How nap reaches the pods: configmap, image (an image volume of napImage), or auto
  # (the webhook: the image where every node mounts image volumes).
  mode: %[7]s
  napImage: ""

# The preStop wait pods get unless they choose (annotations nap.dev/wait, nap.dev/delay).
wait:
  mode: %[8]s    # fixed, or adaptive: until the pod's new connections stop
  delay: %[9]s     # the fixed wait
  max: %[10]s       # the adaptive wait's bounds and quiet window; min and quiet in
  min: "0"        # whole ms or s
  quiet: %[11]s
  # The adaptive wait's request signal (nap --requests WITHIN, whole ms or s; "0" off):
  # a request on a connection the pod accepted earlier keeps the wait open too. Pods
  # behind a client that pools its connections (an ingress controller, an application load
  # balancer with the pods as targets) get 1s whatever this says; docs/adaptive.md.
  requests: "0"

# Publish the nap ConfigMap only into namespaces with these labels (default all), and
# never into these.
namespaceSelector: ""
excludeNamespaces: []

# Let cert-manager issue the webhook's certificate (else the controller makes and
# rotates its own).
certManager:
  enabled: false

# Evict the pods the webhook missed (admitted while it was down), one a minute, so that
# they are recreated with a delay.
rollMissed: false

# The leader's memory grows with the cluster's pods (it holds a summary of each): the
# limit holds 150,000 pods; the controller's Go memory limit is 90%% of it. Sizing by
# pods: docs/controller.md#memory.
resources:
%[12]s
# Where the controller's pods may run, as in a pod spec (unset: any node; the replicas
# prefer different nodes).
nodeSelector: {}
tolerations: []
priorityClassName: ""
topologySpreadConstraints: []

# A NetworkPolicy that lets into the controller's pods only the webhook's calls, the
# kubelet's probes and metrics scrapes from pods of the cluster.
networkPolicy:
  enabled: false

# The controller's monitoring (deploy/monitoring; docs/monitoring.md): a ServiceMonitor
# and a PrometheusRule for the Prometheus Operator, and a dashboard ConfigMap for
# Grafana's dashboard sidecar (label grafana_dashboard: "1").
metrics:
  serviceMonitor:
    enabled: false
  prometheusRule:
    enabled: false
  dashboard:
    enabled: false
`, controller.DefaultNamespace, repo, scope.Flag, scope.Help(), scope.OptIn, AdmissionWebhook,
		inject.DeliveryConfigMap, wait.DefaultInput.Kind, wait.DefaultInput.Delay, wait.DefaultInput.Max, wait.DefaultInput.Quiet,
		indent(string(res), "  "))
	return []byte(b.String()), nil
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// SelectorPattern is the label selectors the chart takes for namespaceSelector: the
// grammar of Kubernetes' labels.Parse (what napctl install and the controller accept),
// written with spaces as the only blank, so that no value can carry a newline into the
// controller's arguments (TestSelectorPattern holds it to labels.Parse).
var SelectorPattern = func() string {
	name := `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
	key := `([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?` + name
	val := `(` + name + `)?`
	req := ` *(!` + key + `|` + key + `( *(==|=|!=) *` + val + `| *(>|<) *[0-9]+| +(in|notin) *\( *` + val + `( *, *` + val + `)* *\))?) *`
	return `^(` + req + `(,` + req + `)*)?$`
}()

// valuesSchema is values.schema.json: helm refuses what napctl's flags would.
func valuesSchema() ([]byte, error) {
	enum := func(vals []string) map[string]any { return map[string]any{"type": "string", "enum": vals} }
	scopes, deliveries, waits := scope.Names(), inject.DeliveryNames(), wait.KindNames()
	duration := map[string]any{"type": "string", "pattern": `^(([0-9]+[.]?[0-9]*|[.][0-9]+)|(([0-9]+[.]?[0-9]*|[.][0-9]+)(ns|us|ms|s|m|h))+)$`}
	plain := map[string]any{"type": "string", "pattern": `^[^"'\s]*$`}
	obj := func(props map[string]any, required ...string) map[string]any {
		o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			o["required"] = required
		}
		return o
	}
	schema := obj(map[string]any{
		"image":     obj(map[string]any{"repository": map[string]any{"type": "string", "minLength": 1, "pattern": `^[^"'\s]*$`}, "tag": plain, "digest": plain}, "repository"),
		"replicas":  map[string]any{"type": "integer", "minimum": 1},
		scope.Flag:  enum(scopes),
		"admission": obj(map[string]any{"mode": enum([]string{string(AdmissionWebhook), string(AdmissionPolicy), "auto"}), "policyAPIVersion": enum([]string{"", controller.PolicyAPIV1, controller.PolicyAPIV1beta})}),
		"delivery":  obj(map[string]any{"mode": enum(deliveries), "napImage": plain}),
		"wait": obj(map[string]any{"mode": enum(waits), "delay": duration, "max": duration,
			"min": map[string]any{"type": "string", "pattern": `^(0|[0-9]+(ms|s))$`}, "quiet": map[string]any{"type": "string", "pattern": `^[0-9]+(ms|s)$`},
			"requests": map[string]any{"type": "string", "pattern": `^(0|[0-9]+(ms|s))$`}}),
		"namespaceSelector":         map[string]any{"type": "string", "pattern": SelectorPattern},
		"excludeNamespaces":         map[string]any{"type": "array", "items": map[string]any{"type": "string", "pattern": `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, "maxLength": 63}},
		"certManager":               obj(map[string]any{"enabled": map[string]any{"type": "boolean"}}),
		"rollMissed":                map[string]any{"type": "boolean"},
		"resources":                 map[string]any{"type": "object"},
		"nodeSelector":              map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
		"tolerations":               map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
		"priorityClassName":         map[string]any{"type": "string", "pattern": `^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$`, "maxLength": 253},
		"topologySpreadConstraints": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
		"networkPolicy":             obj(map[string]any{"enabled": map[string]any{"type": "boolean"}}),
		"metrics": obj(map[string]any{
			"serviceMonitor": obj(map[string]any{"enabled": map[string]any{"type": "boolean"}}),
			"prometheusRule": obj(map[string]any{"enabled": map[string]any{"type": "boolean"}}),
			"dashboard":      obj(map[string]any{"enabled": map[string]any{"type": "boolean"}}),
		}),
	})
	schema["$schema"] = "http://json-schema.org/draft-07/schema#"
	b, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
