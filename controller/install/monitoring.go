package install

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/nap-k8s/nap/controller"
)

// The controller's monitoring, for the Prometheus Operator and Grafana (deploy/monitoring,
// and the chart's metrics values): a ServiceMonitor that scrapes the controller, the
// alerting rules and a dashboard. The rules and the dashboard's queries name only the
// metrics of controller/metrics.go (tested), and promtool checks and unit-tests the rules.

// Job is the scrape job the rules and the dashboard select: the ServiceMonitor's job
// label, the controller's Service name.
const Job = controller.Name

// Rule is one alerting rule.
type Rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// RuleGroup is a Prometheus rule group.
type RuleGroup struct {
	Name  string `json:"name"`
	Rules []Rule `json:"rules"`
}

const runbook = "https://github.com/nap-k8s/nap/blob/main/docs/monitoring.md#"

// Rules are nap's alerts. Each names its runbook section in docs/monitoring.md.
func Rules() []RuleGroup {
	alert := func(name, expr, forDur, severity, summary, description string) Rule {
		return Rule{Alert: name, Expr: expr, For: forDur, Labels: map[string]string{"severity": severity},
			Annotations: map[string]string{"summary": summary, "description": description, "runbook_url": runbook + strings.ToLower(name)}}
	}
	return []RuleGroup{{Name: "nap", Rules: []Rule{
		alert("NapControllerDown", fmt.Sprintf(`absent(up{job=%q} == 1)`, Job), "5m", "critical",
			"nap's controller is down: new pods get no preStop delay.",
			"No replica of nap's controller has answered a scrape for 5 minutes. Pods admitted meanwhile get no delay (the webhook fails open) and nothing reports them."),
		alert("NapPodsUnprotected", `sum by (namespace, reason) (nap_pods_unprotected) > 0`, "15m", "warning",
			"{{ $value }} pods in {{ $labels.namespace }} may drop requests when they terminate ({{ $labels.reason }}).",
			"nap's Reporter finds pods without a working delay: not-injected (admitted while the webhook was down; roll them, or run the controller with --roll-missed), refused (the webhook leaves them unchanged on purpose: their event says why), delay-exceeds-grace, native-sleep-unsupported. kubectl nap status -n {{ $labels.namespace }} lists them."),
		alert("NapPreStopHookFailing", `sum by (namespace, workload, cause) (nap_prestop_hook_failures) > 0`, "5m", "warning",
			"preStop hooks of {{ $labels.workload }} in {{ $labels.namespace }} fail ({{ $labels.cause }}).",
			"The kubelet reported FailedPreStopHook for {{ $value }} pods: they stop without their delay and drop requests. kubectl nap lint --live -n {{ $labels.namespace }} says why."),
		alert("NapTerminationsLate", `sum(increase(nap_terminations_total{verdict=~"late|cut"}[1h])) > 0`, "", "warning",
			"{{ $value }} pod terminations in the last hour ended while traffic still reached them (late), or before their wait did (cut).",
			"nap's wait in those pods saw requests arrive in its last seconds, or was killed before it ended: those routes dropped requests. The workloads' Warning events name the pods: kubectl get events -A --field-selector reason=NapTerminationLate (and NapTerminationCut). Lengthen their delay, or give the path a calibration (napctl calibrate --store); a cut wait needs a longer grace period."),
		alert("NapWebhookErrors", `sum(rate(nap_admissions_total{result="error"}[5m])) / sum(rate(nap_admissions_total[5m])) > 0.01`, "10m", "warning",
			"nap's webhook fails {{ $value | humanizePercentage }} of pod admissions.",
			"Pods admitted on an error get no delay (the webhook fails open). The controller's log says why."),
		alert("NapConfigMapTampered", `sum(increase(nap_configmaps_tampered_total[15m])) > 0`, "", "critical",
			"Someone other than nap's controller wrote a nap ConfigMap, the preStop binary pods run.",
			"The Publisher found a nap ConfigMap it had seen right written by someone else ({{ $value }} in 15 minutes), and put its content back. Pods that ran their preStop in between may have run other code. Its Warning events (reason Tampered) name the namespaces: kubectl get events -A --field-selector reason=Tampered. The ValidatingAdmissionPolicy nap-configmap refuses such writes: check that it and its binding are there."),
		alert("NapWebhookCertificateExpiring", `nap_webhook_certificate_expiry_timestamp_seconds - time() < 30 * 24 * 3600`, "1h", "warning",
			"nap's webhook certificate expires in {{ $value | humanizeDuration }}.",
			"The controller renews its certificate when a third of its life is left, and cert-manager before it expires: one this close was not renewed. The API server then cannot call the webhook and pods get no delay."),
	}}}
}

// RulesFile is Rules as a Prometheus rule file (promtool's input).
func RulesFile() ([]byte, error) {
	return yaml.Marshal(map[string]any{"groups": Rules()})
}

// Monitoring shapes the monitoring objects: the labels a Prometheus selects its
// ServiceMonitors and rules by (its serviceMonitorSelector, ruleSelector), and the scrape
// interval (default DefaultScrapeInterval).
type Monitoring struct {
	ServiceMonitorLabels map[string]string
	RuleLabels           map[string]string
	Interval             string
}

// DefaultScrapeInterval is the ServiceMonitor's, unless Monitoring says otherwise.
const DefaultScrapeInterval = "30s"

// MonitoringObjects are the ServiceMonitor, the PrometheusRule and the dashboard's
// ConfigMap (labelled for Grafana's dashboard sidecar) in namespace ns.
func MonitoringObjects(ns string, m Monitoring) ([]*unstructured.Unstructured, error) {
	labels := map[string]any{}
	for k, v := range controllerLabels() {
		labels[k] = v
	}
	groups, err := toAny(Rules())
	if err != nil {
		return nil, err
	}
	dash, err := Dashboard()
	if err != nil {
		return nil, err
	}
	meta := func(name string, extra map[string]string) map[string]any {
		l := map[string]any{}
		for k, v := range extra {
			l[k] = v
		}
		for k, v := range labels { // the selector's own win
			l[k] = v
		}
		return map[string]any{"name": name, "namespace": ns, "labels": l}
	}
	return []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": meta(controller.Name, m.ServiceMonitorLabels),
			"spec": map[string]any{
				"selector":  map[string]any{"matchLabels": labels},
				"endpoints": []any{map[string]any{"port": "metrics", "interval": cmp.Or(m.Interval, DefaultScrapeInterval)}},
			}}},
		{Object: map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": meta(controller.Name, m.RuleLabels),
			"spec": map[string]any{"groups": groups}}},
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(controller.Name+"-dashboard", map[string]string{"grafana_dashboard": "1"}),
			"data": map[string]any{"nap.json": string(dash)}}},
	}, nil
}

func toAny(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}

// panel is one of the dashboard's panels: a title, a type and its queries.
type panel struct {
	title, kind, unit string
	exprs             []string // legend {{...}} in each expr's by clause
	legends           []string
}

// dashboardPanels are the dashboard's panels, top to bottom.
var dashboardPanels = []panel{
	{title: "Unprotected pods (nap_pods_unprotected)", kind: "stat", exprs: []string{`sum(nap_pods_unprotected)`}, legends: []string{"unprotected"}},
	{title: "Failing preStop hooks (nap_prestop_hook_failures)", kind: "stat", exprs: []string{`sum(nap_prestop_hook_failures)`}, legends: []string{"failing"}},
	{title: "Controller replicas up", kind: "stat", exprs: []string{fmt.Sprintf(`sum(up{job=%q})`, Job)}, legends: []string{"up"}},
	{title: "Webhook certificate expires in", kind: "stat", unit: "s", exprs: []string{`min(nap_webhook_certificate_expiry_timestamp_seconds) - time()`}, legends: []string{"expires in"}},
	{title: "Unprotected pods by namespace and reason", kind: "timeseries", exprs: []string{`sum by (namespace, reason) (nap_pods_unprotected)`}, legends: []string{"{{namespace}} {{reason}}"}},
	{title: "Failing preStop hooks by workload and cause", kind: "timeseries", exprs: []string{`sum by (namespace, workload, cause) (nap_prestop_hook_failures)`}, legends: []string{"{{namespace}}/{{workload}} {{cause}}"}},
	{title: "Terminations by what nap's wait saw (nap_terminations_total)", kind: "timeseries", exprs: []string{`sum by (verdict) (increase(nap_terminations_total[1h]))`}, legends: []string{"{{verdict}}"}},
	{title: "Late or cut terminations by the path that reached the pod (nap_path_terminations_total)", kind: "timeseries", exprs: []string{`sum by (path) (increase(nap_path_terminations_total{verdict=~"late|cut"}[1h]))`}, legends: []string{"{{path}}"}},
	{title: "Observed tail per path, p99 of quiet terminations (nap_path_termination_tail_seconds) beside the calibrated hold", kind: "timeseries", unit: "s", exprs: []string{
		`histogram_quantile(0.99, sum by (path, le) (rate(nap_path_termination_tail_seconds_bucket[1h])))`, `max by (path) (nap_calibration_delay_seconds)`}, legends: []string{"{{path}} observed p99", "{{path}} calibrated"}},
	{title: "Pod admissions by result", kind: "timeseries", unit: "reqps", exprs: []string{`sum by (result) (rate(nap_admissions_total[5m]))`}, legends: []string{"{{result}}"}},
	{title: "Admission latency", kind: "timeseries", unit: "s", exprs: []string{
		`histogram_quantile(0.99, sum by (le) (rate(nap_admission_duration_seconds_bucket[5m])))`,
		`histogram_quantile(0.5, sum by (le) (rate(nap_admission_duration_seconds_bucket[5m])))`}, legends: []string{"p99", "p50"}},
	{title: "Pods the audit policy would give a delay, by namespace", kind: "timeseries", exprs: []string{`sum by (namespace) (increase(nap_audit_would_inject_total[1h]))`}, legends: []string{"{{namespace}}"}},
	{title: "Missed pods rolled, by namespace", kind: "timeseries", exprs: []string{`sum by (namespace) (increase(nap_pods_rolled_total[1h]))`}, legends: []string{"{{namespace}}"}},
	{title: "Calibrated hold per path (napctl calibrate --store), and learned per route (--learn)", kind: "timeseries", unit: "s",
		exprs: []string{`max by (path) (nap_calibration_delay_seconds)`, `max by (route) (nap_learned_delay_seconds)`}, legends: []string{"{{path}} (calibrated)", "{{route}} (learned)"}},
	{title: "The Reporter's Warning events waiting for their turn, and told late (its events' pace)", kind: "timeseries", exprs: []string{
		`max(nap_reporter_events_waiting)`, `sum(increase(nap_reporter_events_delayed_total[1h]))`}, legends: []string{"waiting", "told late"}},
	{title: "Pods a kubelet evicted or stopped for a node shutdown, by what nap did (deleted: out of their Services at once)", kind: "timeseries", exprs: []string{`sum by (result) (increase(nap_evicted_pods_total[1h]))`}, legends: []string{"{{result}}"}},
	{title: "nap ConfigMaps", kind: "timeseries", exprs: []string{
		`sum(increase(nap_configmaps_published_total[1h]))`, `sum(increase(nap_configmaps_repaired_total[1h]))`,
		`sum(increase(nap_configmaps_removed_total[1h]))`, `sum(increase(nap_configmaps_tampered_total[1h]))`},
		legends: []string{"published", "repaired", "removed", "tampered"}},
}

// DashboardQueries are every query of the dashboard.
func DashboardQueries() []string {
	var out []string
	for _, p := range dashboardPanels {
		out = append(out, p.exprs...)
	}
	return out
}

// Dashboard is the Grafana dashboard (JSON model, schemaVersion 39) over the
// controller's metrics, with a Prometheus data source variable.
func Dashboard() ([]byte, error) {
	var panels []any
	x, y := 0, 0
	for i, p := range dashboardPanels {
		w, h := 24, 8
		if p.kind == "stat" {
			w, h = 6, 4
		} else if x != 0 {
			x, y = 0, y+4
		}
		var targets []any
		for j, e := range p.exprs {
			targets = append(targets, map[string]any{"refId": string(rune('A' + j)), "expr": e, "legendFormat": p.legends[j],
				"datasource": map[string]any{"type": "prometheus", "uid": "${datasource}"}})
		}
		defaults := map[string]any{}
		if p.unit != "" {
			defaults["unit"] = p.unit
		}
		panels = append(panels, map[string]any{
			"id": i + 1, "title": p.title, "type": p.kind,
			"datasource":  map[string]any{"type": "prometheus", "uid": "${datasource}"},
			"gridPos":     map[string]any{"x": x, "y": y, "w": w, "h": h},
			"targets":     targets,
			"fieldConfig": map[string]any{"defaults": defaults, "overrides": []any{}},
		})
		if p.kind == "stat" {
			x += w
			if x >= 24 {
				x, y = 0, y+h
			}
		} else {
			y += h
		}
	}
	return json.MarshalIndent(map[string]any{
		"title": "nap", "uid": "nap", "tags": []any{"nap", "kubernetes"}, "timezone": "browser",
		"schemaVersion": 39, "editable": true, "refresh": "1m",
		"time": map[string]any{"from": "now-6h", "to": "now"},
		"templating": map[string]any{"list": []any{map[string]any{
			"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus",
		}}},
		"panels": panels,
	}, "", "  ")
}
