package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestShareBinaries: copies of the same binaries share their bytes in the cache; an
// edited copy keeps its own; managedFields go.
func TestShareBinaries(t *testing.T) {
	tr := shareBinaries()
	cm := func(ns string, amd []byte) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nap", Namespace: ns,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "nap"}}},
			BinaryData: map[string][]byte{"nap-amd64": append([]byte{}, amd...), "nap-arm64": []byte("arm")}}
	}
	put := func(c *corev1.ConfigMap) *corev1.ConfigMap {
		t.Helper()
		o, err := tr(c)
		if err != nil {
			t.Fatal(err)
		}
		return o.(*corev1.ConfigMap)
	}
	a := put(cm("a", []byte("ELF-1")))
	b := put(cm("b", []byte("ELF-1")))
	edited := put(cm("c", []byte("ELF-2")))
	if &a.BinaryData["nap-amd64"][0] != &b.BinaryData["nap-amd64"][0] || &a.BinaryData["nap-arm64"][0] != &b.BinaryData["nap-arm64"][0] {
		t.Error("equal binaries are not shared")
	}
	if string(edited.BinaryData["nap-amd64"]) != "ELF-2" || string(b.BinaryData["nap-amd64"]) != "ELF-1" {
		t.Error("an edited copy must keep its own bytes, and the others theirs")
	}
	if a.ManagedFields != nil || edited.ManagedFields != nil {
		t.Error("managedFields kept")
	}
	if o, err := tr(&corev1.Pod{}); err != nil || o == nil {
		t.Errorf("another kind: %v, %v", o, err)
	}
}
