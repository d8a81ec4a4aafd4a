package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
)

// TestConfigMapGuard: on a real API server, the guard refuses every write of a nap
// ConfigMap but the controller's (a cluster admin's too), in every namespace but the
// excluded ones, and lets deletes and other ConfigMaps through.
func TestConfigMapGuard(t *testing.T) {
	cfg := kubeenv.APIServer(t)
	ctx := context.Background()
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const sa = "system:serviceaccount:nap-system:nap"
	vap, binding := ConfigMapGuard("nap-configmap", kube.ConfigMapName, sa, []string{"sandbox", "lab"})
	for _, o := range []client.Object{vap, binding,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sandbox"}},
		// The controller's own rights do not matter here: the guard's do.
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sa-admin"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: sa}}},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	saCfg := rest.CopyConfig(cfg)
	saCfg.Impersonate = rest.ImpersonationConfig{UserName: sa}
	controller, err := client.New(saCfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := func(ns, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, BinaryData: map[string][]byte{"nap-amd64": []byte("#!/bin/sh\n")}}
	}
	// The API server compiles a new policy in the background: wait for its first refusal.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		err := admin.Create(ctx, cm("shop", kube.ConfigMapName))
		if apierrors.IsForbidden(err) {
			if !strings.Contains(err.Error(), "only nap's controller ("+sa+") writes it") {
				t.Fatalf("the refusal does not say why: %v", err)
			}
			break
		}
		if err == nil {
			admin.Delete(ctx, cm("shop", kube.ConfigMapName))
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s the guard still lets an admin create the nap ConfigMap: %v", err)
		}
	}
	refused := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: want refused, got %v", what, err)
		}
	}
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	allowed("the controller creates it", controller.Create(ctx, cm("shop", kube.ConfigMapName)))
	var have corev1.ConfigMap
	if err := admin.Get(ctx, client.ObjectKey{Namespace: "shop", Name: kube.ConfigMapName}, &have); err != nil {
		t.Fatal(err)
	}
	edited := have.DeepCopy()
	edited.BinaryData["nap-amd64"] = []byte("#!/bin/sh\nrm -rf /data\n")
	refused("an admin edits its binary", admin.Update(ctx, edited))
	unlabelled := have.DeepCopy()
	unlabelled.Labels = map[string]string{"x": "y"}
	refused("an admin relabels it", admin.Update(ctx, unlabelled))
	immutable := have.DeepCopy()
	immutable.Immutable = new(bool)
	*immutable.Immutable = true
	refused("an admin makes it immutable", admin.Update(ctx, immutable))
	fixed := have.DeepCopy()
	fixed.Data = map[string]string{"a": "b"}
	allowed("the controller updates it", controller.Update(ctx, fixed))
	allowed("an admin deletes it (the Publisher puts it back)", admin.Delete(ctx, &have))
	refused("an admin creates it again", admin.Create(ctx, cm("shop", kube.ConfigMapName)))
	allowed("a ConfigMap of another name", admin.Create(ctx, cm("shop", "napkin")))
	allowed("the name in an excluded namespace", admin.Create(ctx, cm("sandbox", kube.ConfigMapName)))
}
