package configmap

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Holds reads the bytes a pod would mount, and nothing a writer sets beside them.
func TestHolds(t *testing.T) {
	want, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(cm *corev1.ConfigMap)) *corev1.ConfigMap {
		cm := want.DeepCopy()
		f(cm)
		return cm
	}
	for _, c := range []struct {
		name string
		cm   *corev1.ConfigMap
		want bool
	}{
		{"the same", want.DeepCopy(), true},
		{"labels and annotations do not count", edit(func(cm *corev1.ConfigMap) { cm.Labels, cm.Annotations = nil, nil }), true},
		{"a byte of a binary", edit(func(cm *corev1.ConfigMap) {
			b := append([]byte{}, cm.BinaryData["nap-arm64"]...)
			b[len(b)-1] ^= 1
			cm.BinaryData["nap-arm64"] = b
		}), false},
		{"a binary missing", edit(func(cm *corev1.ConfigMap) { delete(cm.BinaryData, "nap-amd64") }), false},
		{"a binary more", edit(func(cm *corev1.ConfigMap) { cm.BinaryData["nap-riscv64"] = []byte{1} }), false},
		{"data beside them", edit(func(cm *corev1.ConfigMap) { cm.Data = map[string]string{"nap": "#!/bin/sh"} }), false},
		{"none", nil, false},
	} {
		if got := Holds(c.cm, want); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
