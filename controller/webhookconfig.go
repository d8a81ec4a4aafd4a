package controller

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebhookPath is where the webhook server answers Pod admissions.
const WebhookPath = "/mutate-pod"

// WebhookConfiguration is the MutatingWebhookConfiguration of the Injector served by
// Service svcNamespace/svcName. Two webhooks: one for pods labelled nap.dev/inject:
// enabled, one for every pod of a namespace so labelled; a pod labelled disabled, the
// controller's namespace and kube-system never reach the webhook. Both are Ignore on
// failure, have no side effects, a short timeout, and are reinvoked if another webhook
// adds a container.
func WebhookConfiguration(name, svcNamespace, svcName string, caBundle []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	timeout := int32(5)
	path := WebhookPath
	excluded := metav1.LabelSelectorRequirement{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{svcNamespace, "kube-system"}}
	notDisabled := metav1.LabelSelectorRequirement{Key: InjectLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"}}
	hook := func(hookName string, ns, obj *metav1.LabelSelector) admissionregistrationv1.MutatingWebhook {
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
			hook("pods.nap.dev",
				&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{excluded}},
				&metav1.LabelSelector{MatchLabels: map[string]string{InjectLabel: "enabled"}}),
			hook("namespace-pods.nap.dev",
				&metav1.LabelSelector{MatchLabels: map[string]string{InjectLabel: "enabled"}, MatchExpressions: []metav1.LabelSelectorRequirement{excluded}},
				&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notDisabled}}),
		},
	}
}
