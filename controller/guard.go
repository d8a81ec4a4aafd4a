package controller

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceAccountUser is the user name the API server gives a ServiceAccount's requests.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// ConfigMapGuard returns the ValidatingAdmissionPolicy, and its binding, that let only
// user (the controller's ServiceAccount: ServiceAccountUser) create or update a
// ConfigMap named configMap, in every namespace but exclude: the pods there run what
// it holds as their preStop hook, so a namespace's right to write ConfigMaps must not
// become a right to choose that code. Deletes pass (the namespace controller and the
// garbage collector make them, and the Publisher puts the copy back); so do the
// ConfigMaps of other names. The webhook checks the bytes it mounts too
// (Publisher.Mountable): the guard is what holds where a copy changes after
// admission, and under the MutatingAdmissionPolicy, which cannot check.
//
// A cluster admin is refused too: to write a copy by hand, delete the binding.
func ConfigMapGuard(name, configMap, user string, exclude []string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionregistrationv1.Fail
	forbidden := metav1.StatusReasonForbidden
	conditions := []admissionregistrationv1.MatchCondition{{Name: "nap-configmap", Expression: fmt.Sprintf("object.metadata.name == %q", configMap)}}
	if len(exclude) > 0 {
		// One string split in CEL: the chart fills it from a list as napctl install does.
		conditions = append(conditions, admissionregistrationv1.MatchCondition{Name: "not-excluded",
			Expression: fmt.Sprintf("!(request.namespace in %q.split(','))", strings.Join(exclude, ","))})
	}
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}}},
			MatchConditions: conditions,
			Validations: []admissionregistrationv1.Validation{{
				Expression: fmt.Sprintf("request.userInfo.username == %q", user),
				Message: fmt.Sprintf("the ConfigMap %s holds nap's preStop binary, which the pods of this namespace run: only nap's controller (%s) writes it. "+
					"To keep a ConfigMap of this name of your own, exclude the namespace from nap (napctl install --exclude-namespaces, the chart's excludeNamespaces)", configMap, user),
				Reason: &forbidden,
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	return vap, binding
}
