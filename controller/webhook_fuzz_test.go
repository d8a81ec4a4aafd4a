package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/kube"
)

// FuzzInjectorHandle: whatever object a Pod create carries, the webhook admits it (it
// never blocks a pod), and a patch it answers with applies to the object and leaves a
// pod that it would not change again.
func FuzzInjectorHandle(f *testing.F) {
	bench, err := json.Marshal(benchPod())
	if err != nil {
		f.Fatal(err)
	}
	large := benchPod() // over bigPodBytes: read one at a time
	for len(large.Annotations) < 4000 {
		large.Annotations[fmt.Sprintf("example.com/a%05d", len(large.Annotations))] = "v"
	}
	big, err := json.Marshal(large)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(bench), string(big),
		`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"a"}]}}`,
		`{"metadata":{"annotations":{"nap.dev/delay":"2.5","nap.dev/wait":"adaptive"}},"spec":{"containers":[{"name":"a"}],"initContainers":[{"name":"s","restartPolicy":"Always"}]}}`,
		`{"spec":{"nodeSelector":{"kubernetes.io/arch":"arm64"},"volumes":[{"name":"nap","emptyDir":{}}],"containers":[{"name":"a","volumeMounts":[{"name":"x","mountPath":"/nap"}]}]}}`,
		`{"spec":{"os":{"name":"windows"},"terminationGracePeriodSeconds":5,"containers":[{"name":"a","lifecycle":{"preStop":{"exec":{"command":["/nap/nap","7"]}}}}]}}`,
		`{"metadata":{"labels":"x"}}`, `null`, `[1]`, `{}`, `{"spec":[]}`,
	} {
		f.Add([]byte(seed))
	}
	v := kube.Version{Major: 1, Minor: 34}
	i := &Injector{Options: inject.Options{Kube: &v}, Waits: waits5s}
	handle := func(raw []byte) admission.Response {
		return i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop",
			Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}}})
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := handle(raw)
		if !r.Allowed {
			t.Fatalf("refused: %+v", r.Result)
		}
		if len(r.Patches) == 0 {
			return
		}
		ops, err := json.Marshal(r.Patches)
		if err != nil {
			t.Fatal(err)
		}
		p, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			t.Fatalf("patch %s: %v", ops, err)
		}
		out, err := p.Apply(raw)
		if err != nil {
			t.Fatalf("patch %s does not apply to %s: %v", ops, raw, err)
		}
		if again := handle(out); len(again.Patches) != 0 && !strings.Contains(strings.Join(again.Warnings, " "), "nap:") {
			t.Fatalf("injected twice: %s\nthen %v", out, again.Patches)
		}
	})
}
