package install

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

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
	fmt.Fprintf(&b, `# nap's controller. Every value here but metrics' monitoring objects is a flag of
# napctl install; the chart and napctl install render the same objects for the same
# values (the namespace is the release's: helm install nap charts/nap -n %[1]s
# --create-namespace).
# Generated (controller/install/chart.go): do not edit.

# The controller's image (napctl, FROM scratch). The tag defaults to the chart's appVersion.
image:
  repository: %[2]s
  tag: ""
  digest: ""
  pullPolicy: ""  # Always, IfNotPresent or Never; "" the kubelet's default

# Secrets of the release's namespace for a private registry: [{name: regcred}].
imagePullSecrets: []

# Annotations of the controller's pods.
podAnnotations: {}
# Labels of the controller's pods, beside those that select them (which they may not name).
podLabels: {}

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
  max: %[10]s       # the adaptive wait's longest (whole ms or s)
  min: "0"        # the adaptive wait's shortest (whole ms or s)
  quiet: %[11]s      # the adaptive wait's quiet window (whole ms or s)
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
  # An issuer of the cluster's to sign it ({name: corp-ca, kind: ClusterIssuer}, and
  # group for an external issuer's); unset: a self-signed Issuer of the release's
  # namespace.
  issuerRef: {}

# The webhook: its port in the controller's pods, and how long the API server waits for
# it (1 to 30 seconds); past that, the pod is admitted without a delay (it fails open).
webhook:
  port: %[13]d  # the node's, with hostNetwork
  timeoutSeconds: %[14]d

# The controller's probes' port.
health:
  port: %[15]d

# Run the controller in its nodes' network, for a cluster whose API server cannot reach
# pod addresses (a custom CNI on a managed control plane): the ports above and
# metrics.port are then the nodes', and two replicas never share a node.
hostNetwork: false

# Evict the pods the webhook missed (admitted while it was down), one a minute, so that
# they are recreated with a delay.
rollMissed: false

# Learn each route's wait from what its pods' terminations said (nap's verdict): a late
# one raises the wait at once, enough quiet ones set it to their longest tail plus a
# margin, never below a stored calibration. Kept in the ConfigMap nap-learned
# (docs/guides/learned-waits.md).
learn: false

# The webhook's hooks read, when they start, the wait the controller keeps for their
# pod's workload now (its routes, the calibration, what was learned), never less than
# their own: a Service, Ingress or calibration that comes after the pods still reaches
# them (docs/controller.md, "The live waits"). The MutatingAdmissionPolicy gives none.
liveWait: false

# The leader's memory grows with the cluster's pods (it holds a summary of each): the
# limit holds 150,000 pods; the controller's Go memory limit is 90%% of it. Sizing by
# pods: docs/controller.md#memory.
resources:
%[12]s
# Where the controller's pods may run, as in a pod spec (unset: any Linux node; the
# replicas prefer different nodes). The image is Linux's.
nodeSelector:
  kubernetes.io/os: linux
# The controller's affinity, as in a pod spec; unset: the replicas prefer different nodes.
affinity: {}
tolerations: []
# The controller's PriorityClass ("" for none): a critical one, which a kubelet under node
# pressure never evicts, so that a node's own evictions find a replica to route their pods
# out. With one, a ResourceQuota (%[18]s) lets its pods into the namespace where the
# cluster admits that class only under a quota.
priorityClassName: %[19]s
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
    # The labels your Prometheus selects ServiceMonitors by (its serviceMonitorSelector;
    # release: kube-prometheus-stack, say).
    labels: {}
    interval: %[17]s  # how often it scrapes the controller
  prometheusRule:
    enabled: false
    labels: {}  # the labels your Prometheus selects rules by (its ruleSelector)
  dashboard:
    enabled: false
  port: %[16]d  # the controller's metrics port (the node's, with hostNetwork)
`, controller.DefaultNamespace, repo, scope.Flag, scope.Help(), scope.OptIn, AdmissionWebhook,
		inject.DeliveryConfigMap, wait.DefaultInput.Kind, wait.DefaultInput.Delay, wait.DefaultInput.Max, wait.DefaultInput.Quiet,
		indent(string(res), "  "), controller.WebhookPort, DefaultWebhookTimeout, controller.HealthPort, controller.MetricsPort, DefaultScrapeInterval, CriticalPodsQuota, DefaultPriorityClassName)
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
	// The fixed delay also as a bare number of seconds, as helm's --set types it
	// (--set wait.delay=10 is the number 10; the pattern holds strings only): it is
	// written as given everywhere, as napctl install keeps the user's spelling.
	delay := map[string]any{"type": []string{"string", "number"}, "minimum": 0, "pattern": duration["pattern"]}
	plain := map[string]any{"type": "string", "pattern": `^[^"'\s]*$`}
	port := map[string]any{"type": "integer", "minimum": 1, "maximum": 65535}
	// Labels beside nap's own, which they may not name (those select the pods).
	own := slices.Sorted(maps.Keys(controllerLabels()))
	labels := map[string]any{"type": "object", "propertyNames": map[string]any{"not": map[string]any{"enum": own}},
		"additionalProperties": map[string]any{"type": "string", "pattern": `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`, "maxLength": 63}}
	obj := func(props map[string]any, required ...string) map[string]any {
		o := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			o["required"] = required
		}
		return o
	}
	schema := obj(map[string]any{
		"image": obj(map[string]any{"repository": map[string]any{"type": "string", "minLength": 1, "pattern": `^[^"'\s]*$`}, "tag": plain, "digest": plain,
			"pullPolicy": enum([]string{"", string(corev1.PullAlways), string(corev1.PullIfNotPresent), string(corev1.PullNever)})}, "repository"),
		"imagePullSecrets": map[string]any{"type": "array", "items": obj(map[string]any{"name": map[string]any{"type": "string", "pattern": `^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`, "maxLength": 253}}, "name")},
		"podAnnotations":   map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
		"podLabels":        labels,
		"replicas":         map[string]any{"type": "integer", "minimum": 1},
		scope.Flag:         enum(scopes),
		"admission":        obj(map[string]any{"mode": enum([]string{string(AdmissionWebhook), string(AdmissionPolicy), "auto"}), "policyAPIVersion": enum([]string{"", controller.PolicyAPIV1, controller.PolicyAPIV1beta})}),
		"delivery":         obj(map[string]any{"mode": enum(deliveries), "napImage": plain}),
		"wait": obj(map[string]any{"mode": enum(waits), "delay": delay, "max": duration,
			"min": map[string]any{"type": "string", "pattern": `^(0|[0-9]+(ms|s))$`}, "quiet": map[string]any{"type": "string", "pattern": `^[0-9]+(ms|s)$`},
			"requests": map[string]any{"type": "string", "pattern": `^(0|[0-9]+(ms|s))$`}}),
		"namespaceSelector": map[string]any{"type": "string", "pattern": SelectorPattern},
		"excludeNamespaces": map[string]any{"type": "array", "items": map[string]any{"type": "string", "pattern": `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, "maxLength": 63}},
		// An issuer named needs cert-manager on (napctl install refuses it otherwise).
		"certManager": func() map[string]any {
			o := obj(map[string]any{"enabled": map[string]any{"type": "boolean"},
				"issuerRef": obj(map[string]any{"name": map[string]any{"type": "string", "pattern": `^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`, "maxLength": 253}, "kind": plain, "group": plain})})
			o["if"] = map[string]any{"properties": map[string]any{"issuerRef": map[string]any{"required": []string{"name"}}}, "required": []string{"issuerRef"}}
			o["then"] = map[string]any{"properties": map[string]any{"enabled": map[string]any{"const": true}}, "required": []string{"enabled"}}
			return o
		}(),
		"webhook":                   obj(map[string]any{"port": port, "timeoutSeconds": map[string]any{"type": "integer", "minimum": 1, "maximum": 30}}),
		"health":                    obj(map[string]any{"port": port}),
		"hostNetwork":               map[string]any{"type": "boolean"},
		"affinity":                  map[string]any{"type": "object"},
		"rollMissed":                map[string]any{"type": "boolean"},
		"learn":                     map[string]any{"type": "boolean"},
		"liveWait":                  map[string]any{"type": "boolean"},
		"resources":                 map[string]any{"type": "object"},
		"nodeSelector":              map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
		"tolerations":               map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
		"priorityClassName":         map[string]any{"type": "string", "pattern": `^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$`, "maxLength": 253},
		"topologySpreadConstraints": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
		"networkPolicy":             obj(map[string]any{"enabled": map[string]any{"type": "boolean"}}),
		"metrics": obj(map[string]any{
			"port": port,
			"serviceMonitor": obj(map[string]any{"enabled": map[string]any{"type": "boolean"}, "labels": labels,
				// the Prometheus Operator's Duration
				"interval": map[string]any{"type": "string", "pattern": `^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`}}),
			"prometheusRule": obj(map[string]any{"enabled": map[string]any{"type": "boolean"}, "labels": labels}),
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
