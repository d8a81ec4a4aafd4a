package configmap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	sigsyaml "sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// Labels and annotations of the nap ConfigMap.
const (
	// SHA256AnnotationPrefix + key is the sha256 of that key's binary, so that a reader
	// can check what it mounts without decoding binaryData.
	SHA256AnnotationPrefix = "nap.dev/sha256-"
	// ManagedByLabel tells who keeps the ConfigMap: napctl, or the controller.
	ManagedByLabel = kube.ManagedByLabel
)

// Options choose what New holds.
type Options struct {
	Name      string   // default kube.ConfigMapName
	Namespace string   // empty: the one of the kubectl context that applies it
	Arches    []string // default nap.Arches
	Version   string   // nap's version, recorded in a label
	ManagedBy string   // the managed-by label; default "napctl"
}

// New returns the ConfigMap that holds one nap binary per architecture, under
// kube.KeyForArch(arch).
func New(o Options) (*corev1.ConfigMap, error) {
	if o.Name == "" {
		o.Name = kube.ConfigMapName
	}
	if len(o.Arches) == 0 {
		o.Arches = nap.Arches
	}
	if o.ManagedBy == "" {
		o.ManagedBy = "napctl"
	}
	if errs := validation.IsDNS1123Subdomain(o.Name); len(errs) > 0 {
		return nil, fmt.Errorf("name %q: %s", o.Name, errs[0])
	}
	if errs := validation.IsDNS1123Label(o.Namespace); o.Namespace != "" && len(errs) > 0 {
		return nil, fmt.Errorf("namespace %q: %s", o.Namespace, errs[0])
	}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      o.Name,
			Namespace: o.Namespace,
			Labels: map[string]string{
				"app.kubernetes.io/name":      "nap",
				"app.kubernetes.io/component": "prestop-sleeper",
				"app.kubernetes.io/part-of":   "nap",
				ManagedByLabel:                o.ManagedBy,
			},
			Annotations: map[string]string{},
		},
		BinaryData: map[string][]byte{},
	}
	if o.Version != "" {
		cm.Labels["app.kubernetes.io/version"] = labelValue(o.Version)
	}
	for _, arch := range o.Arches {
		bin, err := sleeper.Binary(arch)
		if err != nil {
			return nil, err
		}
		key := kube.KeyForArch(arch)
		if _, dup := cm.BinaryData[key]; dup {
			return nil, fmt.Errorf("architecture %s given twice", arch)
		}
		sum := sha256.Sum256(bin)
		cm.BinaryData[key] = bin
		cm.Annotations[SHA256AnnotationPrefix+key] = hex.EncodeToString(sum[:])
	}
	return cm, nil
}

// labelValue makes a version usable as a label value (63 characters of [-A-Za-z0-9_.],
// alphanumeric at both ends): "v0.1.0+dirty" becomes "v0.1.0-dirty".
func labelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	if len(b) > 63 {
		b = b[:63]
	}
	for len(b) > 0 && !isAlnum(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	for len(b) > 0 && !isAlnum(b[0]) {
		b = b[1:]
	}
	return string(b)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Manifest renders an object as YAML or JSON, without the empty fields that the API
// types would print (creationTimestamp: null).
func Manifest(obj any, format string) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	switch format {
	case "json":
		b, err := json.MarshalIndent(m, "", "  ")
		return append(b, '\n'), err
	case "yaml", "":
		return sigsyaml.Marshal(m)
	}
	return nil, fmt.Errorf("format %q: want yaml or json", format)
}

// Holds tells whether cm holds exactly want's binaries, byte for byte, and nothing else
// to mount (no data): what a pod that mounts cm runs is what want would run. Labels and
// annotations are not read: anyone who can write cm can write them too.
func Holds(cm, want *corev1.ConfigMap) bool {
	if cm == nil || len(cm.Data) > 0 || len(cm.BinaryData) != len(want.BinaryData) {
		return false
	}
	for k, b := range want.BinaryData {
		if have, ok := cm.BinaryData[k]; !ok || !bytes.Equal(have, b) {
			return false
		}
	}
	return true
}
