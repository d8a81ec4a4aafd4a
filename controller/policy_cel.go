package controller

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nap-k8s/nap/controller/report"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/wait"
)

// The MutatingAdmissionPolicy API: GA (v1) since Kubernetes 1.36, beta (v1beta1, off
// by default) in 1.34 and 1.35. Both have the same fields; the objects are built with
// the v1beta1 types this module's client library has and carry the version the cluster
// serves.
const (
	PolicyAPIGroup  = "admissionregistration.k8s.io"
	PolicyAPIV1     = PolicyAPIGroup + "/v1"
	PolicyAPIV1beta = PolicyAPIGroup + "/v1beta1"
)

// AdmissionPolicyOptions shape the MutatingAdmissionPolicy that injects in the API
// server, in place of the webhook.
type AdmissionPolicyOptions struct {
	APIVersion string // PolicyAPIV1 (default) or PolicyAPIV1beta
	// Waits are the default waits; a pod's wait.KindAnnotation and wait.DelayAnnotation override
	// them, as at the webhook.
	Waits wait.Defaults
	// Native: delays of whole seconds become the native sleep action (every kubelet of
	// the cluster has it; CEL cannot see the nodes). Otherwise, and for other delays,
	// nap is run from the ConfigMap volume.
	Native bool
	// NativeZero: a native sleep of 0 seconds is allowed (Kubernetes 1.33+).
	NativeZero bool
	ConfigMap  string         // default kube.ConfigMapName
	GraceExtra *time.Duration // default inject.DefaultGraceExtra
	Arch       string         // the architecture when the pod does not say; default amd64
	// Image, when set, delivers nap as an image volume of this reference (napctl image)
	// instead of the ConfigMap.
	Image string
	// Exclude are namespaces never mutated (the controller's own, kube-system).
	Exclude []string
}

// PolicyCannot is what the MutatingAdmissionPolicy cannot do that the webhook does: CEL
// sees the pod and its namespace, nothing else in the cluster. Printed by napctl
// install --admission policy and listed in docs/delivery.md.
var PolicyCannot = []string{
	"the " + strings.Join(byServiceScopes(), " and ") + " policies: whether a Service selects the pod needs the namespace's Services, which CEL cannot read (namespaces labelled " + scope.Label + " are not served; use --admission webhook)",
	"the kubelet versions of the nodes that may run the pod: the native sleep is chosen at install for the whole cluster",
	"warnings, events and metrics for a pod it could not change (a bad " + wait.DelayAnnotation + " annotation): the pod is admitted unchanged, silently; the controller's Reporter still finds it",
	"the delay of a nap hook already in the pod when raising the grace period: only the hooks it adds count",
	"whether the namespace's nap ConfigMap holds this build's binaries: it mounts whatever is there (the ValidatingAdmissionPolicy " + Name + "-configmap lets only the controller write it)",
	"each pod's wait by its own paths (a calibration kept in the cluster, napctl calibrate --store): they depend on the Services that select the pod and the Ingresses that name those, which CEL cannot read; every pod gets the fleet's wait, and the Reporter reports those whose paths need longer (" + string(report.DelayBelowPath) + ")",
	"the adaptive wait's request signal for the pods that a client that pools its connections reaches (an application load balancer with the pods as targets): which those are depends on their Services; the fleet's --requests holds for every pod",
}

// AdmissionPolicy returns the MutatingAdmissionPolicy and its binding that do in the
// API server what the explicit opt-in webhook does (the pod's or its namespace's
// InjectLabel; "disabled" on the pod opts out): the same preStop delay per container,
// the same ConfigMap volume and mounts, the grace period raised; idempotent when
// reinvoked. TestPolicyMatchesWebhook holds it to the webhook's pod specs.
func AdmissionPolicy(name string, o AdmissionPolicyOptions) (*admissionregistrationv1beta1.MutatingAdmissionPolicy, *admissionregistrationv1beta1.MutatingAdmissionPolicyBinding, error) {
	if o.APIVersion == "" {
		o.APIVersion = PolicyAPIV1
	}
	if o.APIVersion != PolicyAPIV1 && o.APIVersion != PolicyAPIV1beta {
		return nil, nil, fmt.Errorf("MutatingAdmissionPolicy API %q: want %s or %s", o.APIVersion, PolicyAPIV1, PolicyAPIV1beta)
	}
	if o.ConfigMap == "" {
		o.ConfigMap = kube.ConfigMapName
	}
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	extra := inject.DefaultGraceExtra
	if o.GraceExtra != nil {
		extra = *o.GraceExtra
	}
	delivery := inject.DeliveryConfigMap
	if o.Image != "" {
		delivery = inject.DeliveryImage
	}
	if err := CheckWaits(o.Waits, inject.Options{Arch: o.Arch, ConfigMap: o.ConfigMap, GraceExtra: &extra, Delivery: delivery, Image: o.Image}); err != nil {
		return nil, nil, err
	}
	if errs := validation.IsDNS1123Subdomain(o.ConfigMap); len(errs) > 0 {
		return nil, nil, fmt.Errorf("ConfigMap %q: %s", o.ConfigMap, errs[0])
	}

	ignore := admissionregistrationv1beta1.Ignore
	policy := &admissionregistrationv1beta1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: o.APIVersion, Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1beta1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1beta1.MatchResources{ResourceRules: []admissionregistrationv1beta1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}}},
			// A pod that opted out is not looked at. Whether its namespace opted in is
			// a variable: match conditions do not see namespaceObject.
			MatchConditions: []admissionregistrationv1beta1.MatchCondition{{Name: "not-opted-out", Expression: celNotOptedOut}},
			Variables:       policyVariables(o, extra),
			Mutations: []admissionregistrationv1beta1.Mutation{{
				PatchType: admissionregistrationv1beta1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1beta1.JSONPatch{Expression: celPatch(o)},
			}},
			// As the webhook: an error admits the pod unchanged.
			FailurePolicy:      &ignore,
			ReinvocationPolicy: admissionregistrationv1.IfNeededReinvocationPolicy,
		},
	}
	binding := &admissionregistrationv1beta1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: o.APIVersion, Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1beta1.MutatingAdmissionPolicyBindingSpec{
			PolicyName: name,
			MatchResources: &admissionregistrationv1beta1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: o.Exclude}}}},
		},
	}
	if len(o.Exclude) == 0 {
		binding.Spec.MatchResources.NamespaceSelector = &metav1.LabelSelector{}
	}
	return policy, binding, nil
}

func byServiceScopes() []string {
	by, _ := scope.ByServiceScopes()
	return by
}

// celNotOptedOut: the pod's own label does not opt it out.
var celNotOptedOut = fmt.Sprintf(`!has(object.metadata.labels) || object.metadata.labels[?%q].orValue('') != '%s'`, InjectLabel, scope.Disabled)

// celOptedIn: the explicit webhooks' selectors (pods.nap.dev, namespace-pods.nap.dev):
// the pod opted in, or its namespace did (and the pod did not opt out: celNotOptedOut).
var celOptedIn = fmt.Sprintf(`(has(object.metadata.labels) && object.metadata.labels[?%[1]q].orValue('') == '%[2]s') ||
(has(namespaceObject.metadata) && has(namespaceObject.metadata.labels) && namespaceObject.metadata.labels[?%[1]q].orValue('') == '%[2]s')`, InjectLabel, scope.Enabled)

// policyVariables are the policy's CEL variables: the delay and how it is delivered,
// the pod's architecture, and which containers get the hook. Each mirrors a decision
// of inject's plan (inject/plan.go, inject/steps.go), named after it.
func policyVariables(o AdmissionPolicyOptions, extra time.Duration) []admissionregistrationv1beta1.Variable {
	q := func(s string) string { return strconv.Quote(s) } // CEL reads Go's quoting of these plain strings
	arches := make([]string, len(nap.Arches))
	for i, a := range nap.Arches {
		arches[i] = q(a)
	}
	ownImage := "false" // an image volume of nap's image is nap's too
	if o.Image != "" {
		ownImage = fmt.Sprintf("(has(v.image) && v.image.reference == %s)", q(o.Image))
	}
	native := "false"
	if o.Native {
		native = "!variables.adaptive && variables.whole"
		if !o.NativeZero {
			native += " && variables.duration > duration('0s')"
		}
	}
	v := func(name, expr string) admissionregistrationv1beta1.Variable {
		return admissionregistrationv1beta1.Variable{Name: name, Expression: expr}
	}
	return []admissionregistrationv1beta1.Variable{
		v("optedIn", celOptedIn),
		// The wait (wait.Defaults.ForPod): the annotation's (trimmed), else the default.
		v("wait", fmt.Sprintf(`has(object.metadata.annotations) && object.metadata.annotations[?%s].orValue('').trim() != '' ? object.metadata.annotations[%s].trim() : %s`,
			q(wait.KindAnnotation), q(wait.KindAnnotation), q(string(o.Waits.Kind)))),
		v("adaptive", fmt.Sprintf(`variables.wait == %s`, q(string(wait.Adaptive)))),
		// The delay (the adaptive wait's MAX): the annotation's (trimmed), else the
		// wait's default.
		v("delay", fmt.Sprintf(`has(object.metadata.annotations) && object.metadata.annotations[?%s].orValue('').trim() != '' ? object.metadata.annotations[%s].trim() : variables.adaptive ? %s : %s`,
			q(wait.DelayAnnotation), q(wait.DelayAnnotation), q(wait.Arg(o.Waits.Adaptive.Delay)), q(o.Waits.Fixed.DelayArg()))),
		// nap's syntax for one argument: a bare number of seconds, or number+unit terms.
		v("syntax", `variables.delay.matches('^([0-9]+[.]?[0-9]*|[.][0-9]+)$') || variables.delay.matches('^(([0-9]+[.]?[0-9]*|[.][0-9]+)(ns|us|ms|s|m|h))+$')`),
		v("duration", `!variables.syntax ? duration('0s') : variables.delay.matches('^([0-9]+[.]?[0-9]*|[.][0-9]+)$') ? duration(variables.delay + 's') : duration(variables.delay)`),
		v("whole", `variables.duration == duration(string(variables.duration.getSeconds()) + 's')`),
		// A wait nap knows, no longer than wait.MaxDelay, and a MAX no shorter than MIN,
		// in whole milliseconds (as wait.Arg writes it back: 60s, 1500ms).
		v("valid", fmt.Sprintf(`variables.syntax && variables.duration <= duration(%s) && (variables.wait == %s || variables.adaptive && variables.duration >= duration(%s) &&
  variables.duration == duration(string(variables.duration.getMilliseconds()) + 'ms'))`, q(fmt.Sprintf("%ds", int64(wait.MaxDelay/time.Second))), q(string(wait.Fixed)), q(fmt.Sprintf("%dns", o.Waits.Adaptive.Min)))),
		v("maxArg", `variables.whole ? string(variables.duration.getSeconds()) + 's' : string(variables.duration.getMilliseconds()) + 'ms'`),
		// The adaptive wait's ALLOW: what the pod's probes open in a quiet window
		// (hook.Background of hook.ProbePeriods).
		v("allow", celAllow(o.Waits.Adaptive.Quiet)),
		// A fixed wait's: the same in the QUIET its verdict judges by (wait.FixedQuiet).
		v("fixedAllow", celAllow(wait.FixedQuiet)),
		v("native", native),
		// A Windows pod (inject.IsWindows): the native sleep or nothing, nap's binary is a
		// Linux executable.
		v("windows", fmt.Sprintf(`(has(object.spec.os) && object.spec.os.name == %[1]s) ||
  (has(object.spec.nodeSelector) && object.spec.nodeSelector[?%[2]s].orValue('') == %[1]s)`, q(kube.Windows), q(kube.OSLabel))),
		// The grace period the delay needs: the delay plus the drain time, whole seconds
		// rounded up.
		v("need", fmt.Sprintf(`(variables.duration + duration(%s)).getSeconds() + ((variables.duration + duration(%s)) > duration(string((variables.duration + duration(%s)).getSeconds()) + 's') ? 1 : 0)`,
			q(extra.String()), q(extra.String()), q(extra.String()))),
		// The architecture: the nodeSelector's, else the one a required node affinity
		// allows, else the default.
		v("affinityArches", fmt.Sprintf(`has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) ?
  object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.map(t,
    has(t.matchExpressions) ? t.matchExpressions.filter(x, x.key == %s && x.operator == 'In' && has(x.values)).map(x, x.values).flatten() : []).flatten().distinct() : []`, q(kube.ArchLabel))),
		v("arch", fmt.Sprintf(`has(object.spec.nodeSelector) && object.spec.nodeSelector[?%s].orValue('') != '' ? object.spec.nodeSelector[%s] : size(variables.affinityArches) == 1 ? variables.affinityArches[0] : %s`,
			q(kube.ArchLabel), q(kube.ArchLabel), q(o.Arch))),
		// Binary delivery leaves the pod alone when nap has no binary for its
		// architecture, or a volume called nap is not the nap ConfigMap.
		v("binaryOK", fmt.Sprintf(`variables.arch in [%s] && !(has(object.spec.volumes) && object.spec.volumes.exists(v, v.name == %s &&
  !(has(v.configMap) && v.configMap.name == %s) && !%s))`,
			strings.Join(arches, ", "), q(kube.VolumeName), q(o.ConfigMap), ownImage)),
		// The containers to delay: every regular container without a preStop hook, and
		// for the binary, none that mounts something else at nap's path.
		v("targets", fmt.Sprintf(`object.spec.containers.transformList(i, c,
  !(has(c.lifecycle) && has(c.lifecycle.preStop)) &&
  (variables.native || !(has(c.volumeMounts) && c.volumeMounts.exists(m, m.mountPath == %s && m.name != %s))), i)`,
			q(kube.MountPath), q(kube.VolumeName))),
	}
}

// celPatch is the mutation: per target container, its mount (binary) and its hook;
// then the volume (binary) and the grace period, as JSON Patch operations. The objects
// it adds are typed (Object.spec...): CEL here takes no map literal with values of
// mixed types, and the types exist only in the mutation, not in the variables.
func celPatch(o AdmissionPolicyOptions) string {
	q := strconv.Quote
	volume := fmt.Sprintf(`Object.spec.volumes{name: %s, configMap: Object.spec.volumes.configMap{name: %s, defaultMode: %d,
    items: [Object.spec.volumes.configMap.items{key: 'nap-' + variables.arch, path: %s}]}}`,
		q(kube.VolumeName), q(o.ConfigMap), 0o555, q(kube.BinaryName))
	if o.Image != "" { // the kubelet pulls its node's architecture
		volume = fmt.Sprintf(`Object.spec.volumes{name: %s, image: Object.spec.volumes.image{reference: %s, pullPolicy: 'IfNotPresent'}}`,
			q(kube.VolumeName), q(o.Image))
	}
	return strings.NewReplacer(
		"PRESTOP", fmt.Sprintf(`(variables.native ?
    Object.spec.containers.lifecycle.preStop{sleep: Object.spec.containers.lifecycle.preStop.sleep{seconds: variables.duration.getSeconds()}} :
    Object.spec.containers.lifecycle.preStop{exec: Object.spec.containers.lifecycle.preStop.exec{command: variables.adaptive ? %s : %s}})`,
			o.Waits.Adaptive.CELCommand("", "variables.maxArg", "variables.allow"), o.Waits.Fixed.CELCommand("variables.delay", "", "variables.fixedAllow")),
		"MOUNT", fmt.Sprintf(`Object.spec.containers.volumeMounts{name: %s, mountPath: %s, readOnly: true}`, q(kube.VolumeName), q(kube.MountPath)),
		"VOLUME", volume,
		"NAPPATH", q(kube.MountPath),
		"NAPNAME", q(kube.VolumeName),
		"DEFAULTGRACE", strconv.FormatInt(int64(kube.DefaultGracePeriod/time.Second), 10),
	).Replace(`!variables.optedIn || !variables.valid || (!variables.native && (variables.windows || !variables.binaryOK)) || size(variables.targets) == 0 ? [] :
variables.targets.map(i,
  (variables.native ? [] :
    !has(object.spec.containers[i].volumeMounts) ?
      [JSONPatch{op: 'add', path: '/spec/containers/' + string(i) + '/volumeMounts', value: [MOUNT]}] :
    object.spec.containers[i].volumeMounts.exists(m, m.mountPath == NAPPATH) ? [] :
      [JSONPatch{op: 'add', path: '/spec/containers/' + string(i) + '/volumeMounts/-', value: MOUNT}]) +
  (!has(object.spec.containers[i].lifecycle) ?
    [JSONPatch{op: 'add', path: '/spec/containers/' + string(i) + '/lifecycle', value: Object.spec.containers.lifecycle{preStop: PRESTOP}}] :
    [JSONPatch{op: 'add', path: '/spec/containers/' + string(i) + '/lifecycle/preStop', value: PRESTOP}])
).flatten() +
(variables.native || (has(object.spec.volumes) && object.spec.volumes.exists(v, v.name == NAPNAME)) ? [] :
  !has(object.spec.volumes) ? [JSONPatch{op: 'add', path: '/spec/volumes', value: [VOLUME]}] :
  [JSONPatch{op: 'add', path: '/spec/volumes/-', value: VOLUME}]) +
(has(object.spec.terminationGracePeriodSeconds) ?
  (object.spec.terminationGracePeriodSeconds < variables.need ?
    [JSONPatch{op: 'replace', path: '/spec/terminationGracePeriodSeconds', value: variables.need}] : []) :
  (variables.need > DEFAULTGRACE ? [JSONPatch{op: 'add', path: '/spec/terminationGracePeriodSeconds', value: variables.need}] : []))`)
}

// celAllow is hook.Background(QUIET, hook.ProbePeriods(pod)) in CEL: per
// BackgroundProbe with a ConnectingHandler of each container and sidecar,
// floor(QUIET/period)+1.
func celAllow(quiet time.Duration) string {
	var perContainer []string
	for _, kind := range hook.BackgroundProbes {
		var handlers []string
		for _, h := range hook.ConnectingHandlers {
			handlers = append(handlers, fmt.Sprintf("has(c.%s.%s)", kind, h))
		}
		perContainer = append(perContainer, fmt.Sprintf(`(has(c.%[1]s) && (%[2]s) ? %[3]d / ((has(c.%[1]s.periodSeconds) && c.%[1]s.periodSeconds > 0 ? c.%[1]s.periodSeconds : %[4]d) * %[5]d) + 1 : 0)`,
			kind, strings.Join(handlers, " || "), int64(quiet), int64(hook.DefaultProbePeriod/time.Second), int64(time.Second)))
	}
	each := strings.Join(perContainer, " + ")
	return fmt.Sprintf(`(object.spec.containers.map(c, %[1]s) +
  (has(object.spec.initContainers) ? object.spec.initContainers.filter(c, has(c.restartPolicy) && c.restartPolicy == '%[2]s').map(c, %[1]s) : [])).sum()`, each, hook.SidecarRestartPolicy)
}
