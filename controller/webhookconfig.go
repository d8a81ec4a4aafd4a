package controller

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/scope"
)

// WebhookPath is where the webhook server answers the admissions of pods opted in
// explicitly; PolicyWebhookPath those of the other pods of namespaces under a policy.
const (
	WebhookPath       = "/mutate-pod"
	PolicyWebhookPath = "/mutate-pod-policy"
)

// WebhookConfiguration is the MutatingWebhookConfiguration of the Injector served by
// Service svcNamespace/svcName. Three webhooks: one for pods labelled nap.dev/inject:
// enabled, one for every pod of a namespace so labelled, and one (PolicyWebhookPath)
// for the other pods of the namespaces under a scope that decides by Services (default,
// audit): those whose scope.Label says so, and with such a scope installed, every
// namespace whose label does not say otherwise. A pod or namespace labelled disabled, the controller's
// namespace and kube-system never reach the webhook. All are Ignore on failure, have no
// side effects, a short timeout, and are reinvoked if another webhook adds a container.
func WebhookConfiguration(name, svcNamespace, svcName string, caBundle []byte, installed scope.Scope) *admissionregistrationv1.MutatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	timeout := int32(5)
	excluded := metav1.LabelSelectorRequirement{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{svcNamespace, "kube-system"}}
	notDisabled := metav1.LabelSelectorRequirement{Key: InjectLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{scope.Disabled}}
	explicit := metav1.LabelSelectorRequirement{Key: InjectLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{scope.Enabled, scope.Disabled}}
	// The policy webhook sees the namespaces whose scope decides by Services
	// (scope.Decide): those labelled so, and with such a scope installed, every one not
	// labelled otherwise.
	byService, other := scope.ByServiceScopes()
	underPolicy := metav1.LabelSelectorRequirement{Key: scope.Label, Operator: metav1.LabelSelectorOpIn, Values: byService}
	if installed.ByService() {
		underPolicy = metav1.LabelSelectorRequirement{Key: scope.Label, Operator: metav1.LabelSelectorOpNotIn, Values: other}
	}
	hook := func(hookName, path string, ns, obj *metav1.LabelSelector) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name: hookName,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: svcNamespace, Name: svcName, Path: &path},
				CABundle: caBundle,
			},
			NamespaceSelector:       ns,
			ObjectSelector:          obj,
			SideEffects:             &none,
			FailurePolicy:           &ignore,
			ReinvocationPolicy:      &ifNeeded,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}
	}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			hook("pods.nap.dev", WebhookPath,
				&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{excluded}},
				&metav1.LabelSelector{MatchLabels: map[string]string{InjectLabel: scope.Enabled}}),
			hook("namespace-pods.nap.dev", WebhookPath,
				&metav1.LabelSelector{MatchLabels: map[string]string{InjectLabel: scope.Enabled}, MatchExpressions: []metav1.LabelSelectorRequirement{excluded}},
				&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notDisabled}}),
			hook("policy-pods.nap.dev", PolicyWebhookPath,
				&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{excluded, explicit, underPolicy}},
				&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{explicit}}),
		},
	}
}
