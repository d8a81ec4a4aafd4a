package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

// TestWebhook has the real kube-apiserver call the Injector over TLS for Pod creates.
func TestWebhook(t *testing.T) {
	cfg, wopts := kubeenv.APIServerWithWebhooks(t, WebhookConfiguration("nap", "nap-system", "nap", nil, scope.OptIn))
	v := kube.Version{Major: 1, Minor: 34}
	serveWebhooks(t, wopts, map[string]http.Handler{WebhookPath: (&Injector{Options: inject.Options{Kube: &v}, Waits: waits5s}).Handler()})
	ctx := context.Background()

	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "opted-in", Labels: map[string]string{InjectLabel: "enabled"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "plain"}},
	} {
		if err := c.Create(ctx, &ns); err != nil {
			t.Fatal(err)
		}
	}
	container := func(lc *corev1.Lifecycle) []corev1.Container {
		return []corev1.Container{{Name: "app", Image: "app:1", Lifecycle: lc}}
	}
	napHook := &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/nap/nap", "7s"}}}}
	shHook := &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "sleep 3"}}}}
	for _, tc := range []struct {
		name, ns string
		labels   map[string]string
		annot    map[string]string
		lc       *corev1.Lifecycle
		want     string // what the pod's preStop is after admission
	}{
		{name: "namespace-opted-in", ns: "opted-in", want: "sleep 5s"},
		{name: "pod-opted-in", ns: "plain", labels: map[string]string{InjectLabel: "enabled"}, want: "sleep 5s"},
		{name: "sub-second-delay-uses-nap", ns: "opted-in", annot: map[string]string{wait.DelayAnnotation: "2.5"}, want: "exec /nap/nap 2.5"},
		{name: "opted-out", ns: "opted-in", labels: map[string]string{InjectLabel: "disabled"}, want: "none"},
		{name: "not-opted-in", ns: "plain", want: "none"},
		{name: "already-injected", ns: "opted-in", lc: napHook, want: "exec /nap/nap 7s"},
		{name: "existing-prestop", ns: "opted-in", lc: shHook, want: "exec /bin/sh -c sleep 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: tc.ns, Labels: tc.labels, Annotations: tc.annot},
				Spec:       corev1.PodSpec{Containers: container(tc.lc)},
			}
			if err := c.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			got := "none"
			if lc := pod.Spec.Containers[0].Lifecycle; lc != nil && lc.PreStop != nil {
				switch pre := lc.PreStop; {
				case pre.Sleep != nil:
					got = "sleep " + (time.Duration(pre.Sleep.Seconds) * time.Second).String()
				case pre.Exec != nil:
					got = "exec " + strings.Join(pre.Exec.Command, " ")
				}
			}
			if got != tc.want {
				t.Errorf("preStop %q, want %q", got, tc.want)
			}
			grace := int64(30)
			if pod.Spec.TerminationGracePeriodSeconds != nil {
				grace = *pod.Spec.TerminationGracePeriodSeconds
			}
			if strings.HasPrefix(tc.want, "sleep 5s") && grace < 35 {
				t.Errorf("grace period %d, want at least 35", grace)
			}
			if strings.Contains(tc.want, "2.5") {
				var vol *corev1.Volume
				for i := range pod.Spec.Volumes {
					if pod.Spec.Volumes[i].Name == kube.ConfigMapName {
						vol = &pod.Spec.Volumes[i]
					}
				}
				if vol == nil || vol.ConfigMap == nil || *vol.ConfigMap.DefaultMode != 0o555 || len(pod.Spec.Containers[0].VolumeMounts) == 0 {
					t.Errorf("the nap volume and mount: %+v", pod.Spec.Volumes)
				}
			}
		})
	}
}

// serveWebhooks serves handlers (by path) where envtest's API server calls its webhooks,
// until the test ends.
func serveWebhooks(t *testing.T, wopts *envtest.WebhookInstallOptions, handlers map[string]http.Handler) {
	t.Helper()
	srv := webhook.NewServer(webhook.Options{Host: wopts.LocalServingHost, Port: wopts.LocalServingPort, CertDir: wopts.LocalServingCertDir})
	for path, h := range handlers {
		srv.Register(path, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go srv.Start(ctx)
	for deadline := time.Now().Add(10 * time.Second); srv.StartedChecker()(nil) != nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the webhook server did not start")
		}
	}
}

// The handler on its own: an object without its type, an opt-out, a bad delay.
func TestInjectorHandle(t *testing.T) {
	v := kube.Version{Major: 1, Minor: 34}
	i := &Injector{Options: inject.Options{Kube: &v}}
	req := func(raw string) admission.Request {
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Object: runtime.RawExtension{Raw: []byte(raw)}}}
	}
	r := i.Handle(context.Background(), req(`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"a"}]}}`))
	if !r.Allowed || len(r.Patches) == 0 || !strings.Contains(fmt.Sprint(r.Patches), "sleep") {
		t.Errorf("untyped pod: allowed %v, patches %v", r.Allowed, r.Patches)
	}
	r = i.Handle(context.Background(), req(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","annotations":{"nap.dev/delay":"soon"}},"spec":{"containers":[{"name":"a","image":"a"}]}}`))
	if !r.Allowed || len(r.Patches) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], `"soon"`) {
		t.Errorf("bad delay: allowed %v, patches %v, warnings %v", r.Allowed, r.Patches, r.Warnings)
	}
	r = i.Handle(context.Background(), req(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","labels":{"nap.dev/inject":"disabled"}},"spec":{"containers":[{"name":"a","image":"a"}]}}`))
	if !r.Allowed || len(r.Patches) != 0 {
		t.Errorf("opted out: allowed %v, patches %v", r.Allowed, r.Patches)
	}
	r = i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Delete, Kind: metav1.GroupVersionKind{Kind: "Pod"}}})
	if !r.Allowed || len(r.Patches) != 0 {
		t.Errorf("delete: %+v", r)
	}
	// No top-level kind, but "kind": inside (ownerReferences): still typed and injected.
	r = i.Handle(context.Background(), req(`{"metadata":{"name":"p","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"r","uid":"u"}]},"spec":{"containers":[{"name":"a","image":"a"}]}}`))
	if !r.Allowed || len(r.Patches) == 0 || !strings.Contains(fmt.Sprint(r.Patches), "sleep") {
		t.Errorf("untyped pod with an ownerReference: allowed %v, patches %v, warnings %v", r.Allowed, r.Patches, r.Warnings)
	}
	r = i.Handle(context.Background(), req(`{}`))
	if !r.Allowed || len(r.Warnings) != 0 {
		t.Errorf("empty object: allowed %v, warnings %v", r.Allowed, r.Warnings)
	}
}

// A meshed pod gets its delay and a warning of what its proxy also needs, as lint's
// mesh-proxy-exits-first says; a proxy that already stays up, or runs as a native
// sidecar, gets none.
func TestInjectorMeshedPod(t *testing.T) {
	v := kube.Version{Major: 1, Minor: 34}
	i := &Injector{Options: inject.Options{Kube: &v}} // the default wait: 10 s
	for _, tc := range []struct {
		name, meta, spec string
		warning          string // "" for none
	}{
		{name: "linkerd, annotated", meta: `"annotations":{"linkerd.io/inject":"enabled"}`, spec: `"containers":[{"name":"a","image":"a"}]`,
			warning: `config.alpha.linkerd.io/proxy-wait-before-exit-seconds: "10"`},
		{name: "linkerd, injected first", spec: `"containers":[{"name":"a","image":"a"},{"name":"linkerd-proxy","image":"l"}]`,
			warning: "Linkerd's proxy refuses new requests"},
		{name: "linkerd waits long enough", meta: `"annotations":{"linkerd.io/inject":"enabled","config.alpha.linkerd.io/proxy-wait-before-exit-seconds":"15"}`, spec: `"containers":[{"name":"a","image":"a"}]`},
		{name: "istio, classic sidecar", meta: `"labels":{"sidecar.istio.io/inject":"true"}`, spec: `"containers":[{"name":"a","image":"a"}]`,
			warning: "terminationDrainDuration (5s)"},
		{name: "istio, native sidecar", spec: `"initContainers":[{"name":"istio-proxy","image":"i","restartPolicy":"Always"}],"containers":[{"name":"a","image":"a"}]`},
		{name: "no mesh", spec: `"containers":[{"name":"a","image":"a"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"` + map[bool]string{true: "," + tc.meta, false: ""}[tc.meta != ""] + `},"spec":{` + tc.spec + `}}`
			r := i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: []byte(raw)}}})
			if !r.Allowed || len(r.Patches) == 0 {
				t.Fatalf("allowed %v, patches %v, warnings %v: want the delay", r.Allowed, r.Patches, r.Warnings)
			}
			warned := strings.Join(r.Warnings, "\n")
			if (tc.warning == "") != (warned == "") || !strings.Contains(warned, tc.warning) {
				t.Errorf("warnings %q, want %q", warned, tc.warning)
			}
		})
	}
}

// A pod the webhook cannot read is admitted unchanged, and that is reported: a warning
// in the response, the error metric, the log and an event on the namespace.
func TestInjectorUndecodable(t *testing.T) {
	v := kube.Version{Major: 1, Minor: 34}
	rec := record.NewFakeRecorder(10)
	i := &Injector{Options: inject.Options{Kube: &v}, Recorder: rec}
	for _, raw := range []string{`[1,2]`, `null`, `{"metadata":{"labels":"x"}}`, `{"metadata"`} {
		before := testutil.ToFloat64(admissions.WithLabelValues("error"))
		var logged strings.Builder
		ctx := logf.IntoContext(context.Background(), funcr.New(func(prefix, args string) { logged.WriteString(args) }, funcr.Options{}))
		r := i.Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "shop", Name: "p",
			Object: runtime.RawExtension{Raw: []byte(raw)}}})
		if !r.Allowed || len(r.Patches) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "could not be read") {
			t.Errorf("%s: allowed %v, patches %v, warnings %v", raw, r.Allowed, r.Patches, r.Warnings)
		}
		if after := testutil.ToFloat64(admissions.WithLabelValues("error")); after != before+1 {
			t.Errorf("%s: nap_admissions_total{result=error} %v → %v, want one more", raw, before, after)
		}
		if !strings.Contains(logged.String(), "could not read") {
			t.Errorf("%s: logged %q", raw, logged.String())
		}
		select {
		case e := <-rec.Events:
			if !strings.HasPrefix(e, "Warning NapUndecodablePod nap: pod shop/p") {
				t.Errorf("%s: event %q", raw, e)
			}
		default:
			t.Errorf("%s: no event", raw)
		}
	}
}

// The handler takes the nodes' kubelets into account: one node without the sleep
// action makes it mount nap instead; a nodeSelector that avoids it brings the sleep back.
func TestInjectorKubeletSkew(t *testing.T) {
	v := kube.Version{Major: 1, Minor: 34}
	nodes := []kube.Node{{Name: "new", Labels: map[string]string{"pool": "new"}, Kubelet: kube.Version{Major: 1, Minor: 34}},
		{Name: "old", Labels: map[string]string{"pool": "old"}, Kubelet: kube.Version{Major: 1, Minor: 29}}}
	for _, c := range []struct {
		name  string
		nodes func(context.Context) ([]kube.Node, error)
		spec  string
		want  string
	}{
		{name: "no lister: skew rule", spec: `{"containers":[{"name":"a","image":"a"}]}`, want: "sleep"},
		{name: "an old kubelet", nodes: func(context.Context) ([]kube.Node, error) { return nodes, nil }, spec: `{"containers":[{"name":"a","image":"a"}]}`, want: "/nap/nap"},
		{name: "kept off the old node", nodes: func(context.Context) ([]kube.Node, error) { return nodes, nil }, spec: `{"nodeSelector":{"pool":"new"},"containers":[{"name":"a","image":"a"}]}`, want: "sleep"},
		{name: "lister fails: skew rule", nodes: func(context.Context) ([]kube.Node, error) { return nil, fmt.Errorf("cache not synced") }, spec: `{"containers":[{"name":"a","image":"a"}]}`, want: "sleep"},
	} {
		t.Run(c.name, func(t *testing.T) {
			i := &Injector{Options: inject.Options{Kube: &v}, Nodes: c.nodes}
			r := i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Object: runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"p"},"spec":` + c.spec + `}`)}}})
			if got := fmt.Sprint(r.Patches); !r.Allowed || !strings.Contains(got, c.want) {
				t.Errorf("patches %s, want %q in them", got, c.want)
			}
		})
	}
}

// The binary for the nodes' architecture: the one of the nodes that may run the pod
// where the pod names none (a cluster of arm64 nodes gets nap-arm64), the pod's own
// selector first, and a warning to the pod's creator where the nodes are of several.
func TestInjectorNodeArches(t *testing.T) {
	v := kube.Version{Major: 1, Minor: 37}
	node := func(name, arch, pool string) kube.Node {
		return kube.Node{Name: name, Kubelet: v, Labels: map[string]string{kube.ArchLabel: arch, "pool": pool}}
	}
	arm := []kube.Node{node("a", "arm64", "x"), node("b", "arm64", "x")}
	mixed := []kube.Node{node("a", "amd64", "intel"), node("b", "arm64", "graviton")}
	for _, c := range []struct {
		name    string
		nodes   []kube.Node
		spec    string
		key     string // the ConfigMap's key the patch mounts
		warning string
	}{
		{"arm64 nodes", arm, `{"containers":[{"name":"a","image":"a"}]}`, "nap-arm64", ""},
		{"the pod's selector first", arm, `{"nodeSelector":{"kubernetes.io/arch":"amd64"},"containers":[{"name":"a","image":"a"}]}`, "nap-amd64", ""},
		{"mixed, kept to one pool", mixed, `{"nodeSelector":{"pool":"graviton"},"containers":[{"name":"a","image":"a"}]}`, "nap-arm64", ""},
		{"mixed", mixed, `{"containers":[{"name":"a","image":"a"}]}`, "nap-amd64", "nodes that may run them are amd64, arm64; nap is mounted for amd64 only"},
		{"nodes without the label", []kube.Node{{Name: "a", Kubelet: v}}, `{"containers":[{"name":"a","image":"a"}]}`, "nap-amd64", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			nodes := c.nodes
			i := &Injector{Options: inject.Options{Kube: &v}, Waits: waits5s, Nodes: func(context.Context) ([]kube.Node, error) { return nodes, nil }}
			r := i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Object: runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"p","annotations":{"nap.dev/wait":"adaptive"}},"spec":` + c.spec + `}`)}}})
			got := fmt.Sprint(r.Patches)
			if !r.Allowed || !strings.Contains(got, "key:"+c.key+" ") {
				t.Errorf("patches %s, want the key %s mounted", got, c.key)
			}
			warned := strings.Join(r.Warnings, "; ")
			if c.warning == "" && warned != "" || !strings.Contains(warned, c.warning) {
				t.Errorf("warnings %q, want %q", warned, c.warning)
			}
		})
	}
}

// --delivery auto in the webhook: the image volume when every node mounts them, the
// ConfigMap otherwise, with a warning that names the node.
func TestInjectorDeliveryAuto(t *testing.T) {
	v := kube.Version{Major: 1, Minor: 37}
	node := func(name, rt string) kube.Node { return kube.Node{Name: name, Kubelet: v, Runtime: rt} }
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop",
		Kind:   metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Object: runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"p","annotations":{"nap.dev/delay":"2.5"}},"spec":{"containers":[{"name":"a","image":"a"}]}}`)}}}
	for _, tc := range []struct {
		nodes   []kube.Node
		volume  string // what the patch mounts
		warning string
	}{
		{[]kube.Node{node("a", "containerd://2.1.4"), node("b", "cri-o://1.33.1")}, `"image":{"pullPolicy":"IfNotPresent","reference":"r/nap:1"}`, ""},
		{[]kube.Node{node("a", "containerd://2.1.4"), node("old", "containerd://1.7.24")}, `"configMap":{`, "node old runs containerd://1.7.24"},
	} {
		i := &Injector{Options: inject.Options{Kube: &v, Delivery: inject.DeliveryAuto, Image: "r/nap:1"}, Waits: waits5s,
			Nodes: func(context.Context) ([]kube.Node, error) { return tc.nodes, nil }}
		r := i.Handle(context.Background(), req)
		patch, _ := json.Marshal(r.Patches)
		if !r.Allowed || !strings.Contains(string(patch), tc.volume) {
			t.Errorf("nodes %v: patch %s, want %s", tc.nodes, patch, tc.volume)
		}
		if warned := strings.Join(r.Warnings, "\n"); (tc.warning == "") != (warned == "") || !strings.Contains(warned, tc.warning) {
			t.Errorf("nodes %v: warnings %q, want %q", tc.nodes, warned, tc.warning)
		}
	}
}

// A pod that would run nap from a ConfigMap that must not be mounted (Mountable: not this
// build's bytes, or a namespace nap does not publish into) gets the native sleep, as
// long as its wait or longer, where its kubelets have it, and no delay where they have
// not; a warning, an event and the metric say so. Where the pod needs no ConfigMap,
// Mountable is not asked.
func TestInjectorNotMountable(t *testing.T) {
	v := kube.Version{Major: 1, Minor: 34}
	old := []kube.Node{{Name: "old", Kubelet: kube.Version{Major: 1, Minor: 29}}}
	pod := func(annotations string) []byte {
		return []byte(`{"metadata":{"name":"p","annotations":{` + annotations + `}},"spec":{"containers":[{"name":"a","image":"a"}]}}`)
	}
	for _, tc := range []struct {
		name      string
		raw       []byte
		nodes     []kube.Node
		why       string
		err       error
		asked     bool
		want      string // in the patch; "" for none
		warning   string
		notMounts float64
	}{
		{name: "mountable", raw: pod(`"nap.dev/delay":"2.5"`), asked: true, want: `"/nap/nap","2.5"`},
		{name: "other bytes: the native sleep, rounded up", raw: pod(`"nap.dev/delay":"2.5"`), why: "the ConfigMap shop/nap holds other bytes", asked: true,
			want: `"sleep":{"seconds":3}`, warning: "not nap's binary, as the ConfigMap shop/nap holds other bytes; the native sleep of 3s instead", notMounts: 1},
		{name: "adaptive: the native sleep of MAX", raw: pod(`"nap.dev/wait":"adaptive","nap.dev/delay":"40s"`), why: "x", asked: true,
			want: `"sleep":{"seconds":40}`, warning: "the native sleep of 40s instead", notMounts: 1},
		{name: "a cache error is a reason", raw: pod(`"nap.dev/delay":"2.5"`), err: fmt.Errorf("cache not synced"), asked: true,
			want: `"sleep":{"seconds":3}`, warning: "its nap ConfigMap could not be read: cache not synced", notMounts: 1},
		{name: "kubelets without the sleep action: no delay", raw: pod(`"nap.dev/delay":"2.5"`), nodes: old, why: "x", asked: true,
			warning: "node old runs kubelet 1.29, which has no sleep action (1.30+)): admitted without a preStop delay", notMounts: 1},
		{name: "native anyway: not asked", raw: pod(""), why: "x", want: `"sleep":{"seconds":5}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			asked := false
			i := &Injector{Options: inject.Options{Kube: &v}, Waits: waits5s, Recorder: rec,
				Mountable: func(_ context.Context, ns string) (string, error) {
					asked = true
					if ns != "shop" {
						t.Errorf("asked about namespace %q", ns)
					}
					return tc.why, tc.err
				}}
			if tc.nodes != nil {
				i.Nodes = func(context.Context) ([]kube.Node, error) { return tc.nodes, nil }
			}
			before := testutil.ToFloat64(admissions.WithLabelValues("not-mounted"))
			r := i.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "shop",
				Object: runtime.RawExtension{Raw: tc.raw}}})
			patch, _ := json.Marshal(r.Patches)
			switch {
			case !r.Allowed:
				t.Errorf("refused: %+v", r.Result)
			case tc.want == "" && len(r.Patches) > 0, tc.want != "" && !strings.Contains(string(patch), tc.want):
				t.Errorf("patch %s, want %q", patch, tc.want)
			case tc.want != "" && tc.notMounts > 0 && strings.Contains(string(patch), `"configMap"`):
				t.Errorf("mounts the ConfigMap: %s", patch)
			}
			if asked != tc.asked {
				t.Errorf("Mountable asked: %v, want %v", asked, tc.asked)
			}
			if warned := strings.Join(r.Warnings, "\n"); (tc.warning == "") != (warned == "") || !strings.Contains(warned, tc.warning) {
				t.Errorf("warnings %q, want %q", warned, tc.warning)
			}
			if n := testutil.ToFloat64(admissions.WithLabelValues("not-mounted")) - before; n != tc.notMounts {
				t.Errorf("not-mounted admissions: %v, want %v", n, tc.notMounts)
			}
			select {
			case e := <-rec.Events:
				if tc.notMounts == 0 || !strings.HasPrefix(e, "Warning NapBinaryNotMounted nap: pod") {
					t.Errorf("event %q", e)
				}
			default:
				if tc.notMounts > 0 {
					t.Error("no event")
				}
			}
		})
	}
}

// The webhook's bounds: a pod over MaxPodBytes, a large pod that waits past the
// admission's time for another, and an admission whose time ran out are admitted
// unchanged, with a warning and the error metric.
func TestInjectorBounds(t *testing.T) {
	v := kube.Version{Major: 1, Minor: 34}
	i := &Injector{Options: inject.Options{Kube: &v}, Waits: waits5s}
	pod := func(annotations int) []byte {
		p := benchPod()
		for k := range annotations {
			p.Annotations[fmt.Sprintf("example.com/a%06d", k)] = "v"
		}
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	handle := func(ctx context.Context, raw []byte) admission.Response {
		return i.Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: "shop", Name: "p",
			Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}}})
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	large := pod(4000) // over bigPodBytes, under MaxPodBytes
	if len(large) <= bigPodBytes || len(large) > MaxPodBytes {
		t.Fatalf("the large pod is %d bytes", len(large))
	}
	for _, c := range []struct {
		name    string
		ctx     context.Context
		raw     []byte
		hold    bool // another large pod is being read
		warning string
	}{
		{name: "a large pod is read", ctx: context.Background(), raw: large},
		{name: "over the bound", ctx: context.Background(), raw: pod(50000), warning: "more than the webhook reads (1048576)"},
		{name: "a large pod waits for another", ctx: canceled, raw: large, hold: true, warning: "waited for another large pod until the admission's time ran out"},
		{name: "time ran out", ctx: canceled, raw: pod(0), warning: "nap: context canceled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.hold {
				bigPods <- struct{}{}
				defer func() { <-bigPods }()
			}
			before := testutil.ToFloat64(admissions.WithLabelValues("error"))
			r := handle(c.ctx, c.raw)
			warned := strings.Join(r.Warnings, "\n")
			switch {
			case !r.Allowed:
				t.Errorf("refused: %+v", r.Result)
			case c.warning == "" && (len(r.Patches) == 0 || warned != ""):
				t.Errorf("not injected: %v, warnings %q", r.Patches, warned)
			case c.warning != "" && (len(r.Patches) != 0 || !strings.Contains(warned, c.warning)):
				t.Errorf("patches %v, warnings %q; want none, and %q", r.Patches, warned, c.warning)
			}
			if n := testutil.ToFloat64(admissions.WithLabelValues("error")) - before; (n == 1) != (c.warning != "") {
				t.Errorf("error admissions: %v more", n)
			}
		})
	}
}

// Refusal tells the pods the webhook leaves unchanged on purpose, and why, from those
// it would inject if created now; it records nothing.
func TestInjectorRefusal(t *testing.T) {
	v := kube.Version{Major: 1, Minor: 34}
	i := &Injector{Options: inject.Options{Kube: &v}, Waits: waits5s}
	pod := func(f func(p *corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "shop"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "a"}}}}
		if f != nil {
			f(p)
		}
		return p
	}
	for _, c := range []struct {
		name string
		pod  *corev1.Pod
		want string // in the refusal; "" for none
	}{
		{"missed", pod(nil), ""},
		{"a bad delay", pod(func(p *corev1.Pod) { p.Annotations = map[string]string{wait.DelayAnnotation: "soon"} }), `nap.dev/delay "soon"`},
		{"a bad wait", pod(func(p *corev1.Pod) { p.Annotations = map[string]string{wait.KindAnnotation: "sometimes"} }), `"sometimes"`},
		{"its own nap volume", pod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{wait.DelayAnnotation: "2.5"}
			p.Spec.Volumes = []corev1.Volume{{Name: kube.ConfigMapName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}), "volume"},
		{"an architecture without a binary", pod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{wait.DelayAnnotation: "2.5"}
			p.Spec.NodeSelector = map[string]string{"kubernetes.io/arch": "s390x"}
		}), "s390x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := testutil.ToFloat64(admissions.WithLabelValues("error"))
			why, err := i.Refusal(context.Background(), c.pod)
			if err != nil || (c.want == "") != (why == "") || !strings.Contains(why, c.want) {
				t.Errorf("%q, %v; want %q", why, err, c.want)
			}
			if testutil.ToFloat64(admissions.WithLabelValues("error")) != before {
				t.Error("Refusal counted an admission")
			}
		})
	}
}

// TestWebhookLiveWait: with the live wait (napctl controller --live-wait), the webhook
// gives a Deployment's pod nap's hook with --live and the nap volume projecting, beside
// the binary, its Deployment's key of the live waits, optional; the API server admits
// it as written.
func TestWebhookLiveWait(t *testing.T) {
	cfg, wopts := kubeenv.APIServerWithWebhooks(t, WebhookConfiguration("nap", "nap-system", "nap", nil, scope.OptIn))
	v := kube.Version{Major: 1, Minor: 34}
	serveWebhooks(t, wopts, map[string]http.Handler{WebhookPath: (&Injector{Options: inject.Options{Kube: &v, Mode: inject.ModeBinary, Live: true}, Waits: waits5s}).Handler()})
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{InjectLabel: "enabled"}}}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-7d9f8c6b5-", Namespace: "shop",
		Labels:          map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5", UID: "0b5e7c1e-0000-4000-8000-000000000001", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if pre := pod.Spec.Containers[0].Lifecycle; pre == nil || pre.PreStop == nil || pre.PreStop.Exec == nil ||
		strings.Join(pre.PreStop.Exec.Command, " ") != "/nap/nap 5s --live" {
		t.Fatalf("preStop %+v, want /nap/nap 5s --live", pre)
	}
	want := corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o555), Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: kube.ConfigMapName},
			Items: []corev1.KeyToPath{{Key: kube.KeyForArch("amd64"), Path: kube.BinaryName}}}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: kube.LiveWaitsName},
			Items: []corev1.KeyToPath{{Key: "deployment.web", Path: kube.LiveFile}}, Optional: ptr.To(true)}},
	}}
	var got *corev1.ProjectedVolumeSource
	for _, vol := range pod.Spec.Volumes {
		if vol.Name == kube.VolumeName {
			got = vol.Projected
		}
	}
	if got == nil || !equality.Semantic.DeepEqual(*got, want) {
		t.Errorf("the nap volume: %+v, want %+v", pod.Spec.Volumes, want)
	}
}
