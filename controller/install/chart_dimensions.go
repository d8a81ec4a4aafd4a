package install

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

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
	sentPullSec   = "pullsecretsentinel"
	sentPodAnn    = "podannsentinel"
	sentPodLabel  = "podlabelsentinel"
	sentSMLabel   = "smlabelsentinel"
	sentRuleLabel = "rulelabelsentinel"
	sentInterval  = "2917s"
	sentTimeout   = 29
	sentWebhook   = 19443
	sentMetrics   = 18080
	sentHealth    = 18081
	// sentPull is a pull policy, which Objects checks: the one imagePullPolicy line is
	// found by its key.
	sentPull = corev1.PullNever
)

// blocks are the values the chart writes whole, found in Objects' output by their
// sentinel under their key: resources always (toYaml of the value), the others only
// where set (a scalar as it is). value is the value's path, where it is not the key.
var blocks = []struct {
	key, sentinel string
	optional      bool
	scalar        bool
	value         string
}{
	{"resources", sentCPU, false, false, ""},
	{"nodeSelector", sentNodeSel, true, false, ""},
	{"tolerations", sentToler, true, false, ""},
	{"priorityClassName", sentPriority, true, true, ""},
	{"topologySpreadConstraints", sentSpread, true, false, ""},
	{"imagePullSecrets", sentPullSec, true, false, ""},
	{"imagePullPolicy", string(sentPull), true, true, "image.pullPolicy"},
	{"annotations", sentPodAnn, true, false, "podAnnotations"},
	{"hostNetwork", "true", true, true, ""},
}

// lineValues are the maps the chart joins to one of Objects' own (the pod's labels,
// beside those that select it; the monitoring's, beside nap's), found by a sentinel
// entry (sentinel: s) that the value's entries replace.
var lineValues = []struct{ sentinel, value string }{
	{sentPodLabel, "podLabels"},
	{sentSMLabel, "metrics.serviceMonitor.labels"},
	{sentRuleLabel, "metrics.prometheusRule.labels"},
}

// defaulted are the values that replace a default of Objects' own, in one kind's
// object: where cond holds, the chart writes the value under key (toYaml); elsewhere
// the default, as Objects rendered it with the value unset (the replicas' preference
// for different nodes; the self-signed Issuer nap makes).
var defaulted = []struct{ kind, key, cond, value string }{
	{"Deployment", "affinity", ".Values.affinity", "affinity"},
	{"Certificate", "issuerRef", ".Values.certManager.issuerRef.name", "certManager.issuerRef"},
}

// objectGuards are the objects a value leaves out without being a dimension (which would
// double the combinations): the Helm condition under which each kind's object is there,
// besides its dimensions' (Objects' Issuer, only where no issuer of the cluster's is
// named: defaulted's issuerRef).
// The ResourceQuota that admits the controller's priority class is there with a class.
var objectGuards = map[string]string{"Issuer": "not .Values.certManager.issuerRef.name", "ResourceQuota": ".Values.priorityClassName"}

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
		{values: []string{"", "y"}, expr: boolExpr(".Values.learn"),
			set: func(o *Options, v string) { o.Learn = v != "" }},
		{values: []string{"", "y"}, expr: boolExpr(".Values.liveWait"),
			set: func(o *Options, v string) { o.LiveWait = v != "" }},
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
	out := []string{"sentinel", fmt.Sprint(sentReplicas), fmt.Sprint(sentWebhook), fmt.Sprint(sentMetrics), fmt.Sprint(sentHealth), sentInterval}
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
	{"- " + sentPriority + "\n", "- {{ .Values.priorityClassName }}\n"}, // the ResourceQuota's scope
	{fmt.Sprintf("replicas: %d", sentReplicas), `replicas: {{ .Values.replicas }}`},
	{fmt.Sprintf("timeoutSeconds: %d", sentTimeout), `timeoutSeconds: {{ .Values.webhook.timeoutSeconds }}`},
	{fmt.Sprintf("--webhook-port=%d", sentWebhook), `--webhook-port={{ .Values.webhook.port }}`},
	{fmt.Sprintf("containerPort: %d", sentWebhook), `containerPort: {{ .Values.webhook.port }}`},
	{fmt.Sprintf("=:%d", sentMetrics), `=:{{ .Values.metrics.port }}`},
	{fmt.Sprintf("containerPort: %d", sentMetrics), `containerPort: {{ .Values.metrics.port }}`},
	{fmt.Sprintf("=:%d", sentHealth), `=:{{ .Values.health.port }}`},
	{fmt.Sprintf("containerPort: %d", sentHealth), `containerPort: {{ .Values.health.port }}`},
	{"interval: " + sentInterval, `interval: {{ .Values.metrics.serviceMonitor.interval }}`},
	{"replicas: 1\n", "replicas: {{ .Values.replicas }}\n"}, // the one-replica dimension's
}

// sentinelOptions are the Options every combination starts from: a sentinel wherever a
// value is copied through (substitute turns them into the values' expressions).
func sentinelOptions() Options {
	return Options{Namespace: sentNamespace, Image: sentImage, Replicas: sentReplicas,
		Waits:             wait.Input{Delay: sentDelay, Max: sentMax, Min: sentMin, Quiet: sentQuiet, Requests: sentRequests},
		Resources:         &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(sentCPU)}},
		NodeSelector:      map[string]string{sentNodeSel: "s"},
		Tolerations:       []corev1.Toleration{{Key: sentToler, Operator: corev1.TolerationOpExists}},
		PriorityClassName: sentPriority,
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: sentSpread, WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": controller.Name}}}},
		ImagePullSecrets: []string{sentPullSec}, ImagePullPolicy: sentPull, PodAnnotations: map[string]string{sentPodAnn: "s"},
		PodLabels: map[string]string{sentPodLabel: "s"}, HostNetwork: true, WebhookTimeout: sentTimeout,
		WebhookPort: sentWebhook, MetricsPort: sentMetrics, HealthPort: sentHealth}
}

// sentinelMonitoring is the Monitoring the chart's monitoring objects are rendered with.
var sentinelMonitoring = Monitoring{ServiceMonitorLabels: map[string]string{sentSMLabel: "s"}, RuleLabels: map[string]string{sentRuleLabel: "s"}, Interval: sentInterval}

// blockEnd is the end of the block whose key is lines[i]: the first line after it that
// is not deeper (a list's items may sit at its key's indent).
func blockEnd(lines []string, i int) int {
	indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
	j := i + 1
	for j < len(lines) {
		in := len(lines[j]) - len(strings.TrimLeft(lines[j], " "))
		if in < indent || in == indent && !strings.HasPrefix(strings.TrimLeft(lines[j], " "), "- ") || lines[j] == "" {
			break
		}
		j++
	}
	return j
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
			if !b.scalar {
				j = blockEnd(lines, i)
			}
			if !strings.Contains(strings.Join(lines[i:j], "\n"), b.sentinel) {
				continue
			}
			pad, value := lines[i][:indent], cmp.Or(b.value, b.key)
			repl := []string{fmt.Sprintf("%s%s: {{- toYaml .Values.%s | nindent %d }}", pad, b.key, value, indent+2)}
			switch {
			case b.scalar:
				repl = []string{fmt.Sprintf("%s%s: {{ . }}", pad, b.key)}
				fallthrough
			case b.optional:
				if !b.scalar {
					repl = []string{fmt.Sprintf("%s%s: {{- toYaml . | nindent %d }}", pad, b.key, indent+2)}
				}
				repl = append([]string{"{{- with .Values." + value + " }}"}, append(repl, "{{- end }}")...)
			}
			lines = slices.Concat(lines[:i], repl, lines[j:])
			i += len(repl) - 1
		}
	}
	for i, l := range lines {
		for _, v := range lineValues {
			if strings.TrimLeft(l, " ") == v.sentinel+": s" {
				lines[i] = fmt.Sprintf("{{- with .Values.%s }}\n{{- toYaml . | nindent %d }}\n{{- end }}", v.value, len(l)-len(strings.TrimLeft(l, " ")))
			}
		}
	}
	for _, d := range defaulted {
		if d.kind != kind {
			continue
		}
		for i := 0; i < len(lines); i++ {
			trimmed := strings.TrimLeft(lines[i], " ")
			if trimmed != d.key+":" {
				continue
			}
			indent := len(lines[i]) - len(trimmed)
			j := blockEnd(lines, i)
			repl := slices.Concat([]string{"{{- if " + d.cond + " }}",
				fmt.Sprintf("%s%s: {{- toYaml .Values.%s | nindent %d }}", lines[i][:indent], d.key, d.value, indent+2), "{{- else }}"},
				lines[i:j], []string{"{{- end }}"})
			lines = slices.Concat(lines[:i], repl, lines[j:])
			break
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
