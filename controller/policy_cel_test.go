package controller

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

// policyCase is a pod created in a namespace, through the webhook and through the policy.
type policyCase struct {
	name, ns string
	pod      corev1.Pod
	changed  bool // admission changes the pod (checked on the webhook's side)
}

// policyCases is the table; with image (nap's image delivery), an already injected pod
// has nap's image volume rather than the ConfigMap.
func policyCases(image string) []policyCase {
	app := func(name string) corev1.Container { return corev1.Container{Name: name, Image: "app:1"} }
	withPreStop := func(c corev1.Container, h corev1.LifecycleHandler) corev1.Container {
		c.Lifecycle = &corev1.Lifecycle{PreStop: &h}
		return c
	}
	grace := func(s int64) *int64 { return &s }
	pod := func(annot map[string]string, labels map[string]string, spec corev1.PodSpec) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annot, Labels: labels}, Spec: spec}
	}
	delay := func(d string) map[string]string { return map[string]string{wait.DelayAnnotation: d} }
	wait := func(w string, max string) map[string]string {
		a := map[string]string{wait.KindAnnotation: w}
		if max != "" {
			a[wait.DelayAnnotation] = max
		}
		return a
	}
	windows := corev1.PodSpec{Containers: []corev1.Container{app("iis")}, NodeSelector: map[string]string{kube.OSLabel: kube.Windows}}
	windowsOS := corev1.PodSpec{Containers: []corev1.Container{app("iis")}, OS: &corev1.PodOS{Name: corev1.Windows}}
	always := corev1.ContainerRestartPolicyAlways
	probe := func(h corev1.ProbeHandler, period int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: h, PeriodSeconds: period}
	}
	httpProbe := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}
	probed := app("app")
	probed.ReadinessProbe = probe(httpProbe, 1)
	probed.LivenessProbe = probe(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, 0)
	execProbed := app("app")
	execProbed.ReadinessProbe = probe(corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/ready"}}}, 1)
	execProbed.StartupProbe = probe(httpProbe, 1)
	probedSidecar := app("sidecar")
	probedSidecar.RestartPolicy = &always
	probedSidecar.LivenessProbe = probe(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}, 2)

	one := corev1.PodSpec{Containers: []corev1.Container{app("app")}}
	napVolume := corev1.Volume{Name: kube.ConfigMapName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	data := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	foreignMount := app("mounts-nap-path")
	foreignMount.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: kube.MountPath}}
	withData := app("app")
	withData.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	injected := withPreStop(app("app"), corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/nap/nap", "7s"}}})
	injected.VolumeMounts = []corev1.VolumeMount{{Name: kube.ConfigMapName, MountPath: kube.MountPath, ReadOnly: true}}
	mode := int32(0o555)
	ownVolume := corev1.Volume{Name: kube.ConfigMapName, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: kube.ConfigMapName}, DefaultMode: &mode,
		Items: []corev1.KeyToPath{{Key: kube.KeyForArch("amd64"), Path: kube.BinaryName}}}}}
	if image != "" {
		ownVolume = corev1.Volume{Name: kube.ConfigMapName, VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: image, PullPolicy: corev1.PullIfNotPresent}}}
	}
	arm := corev1.PodSpec{Containers: []corev1.Container{app("app")}, Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: kube.ArchLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}}}}}}}
	return []policyCase{
		{"namespace-opted-in", "opted-in", pod(nil, nil, one), true},
		{"pod-opted-in", "plain", pod(nil, map[string]string{InjectLabel: "enabled"}, one), true},
		{"pod-opted-in-namespace-opted-out", "opted-out", pod(nil, map[string]string{InjectLabel: "enabled"}, one), true},
		{"opted-out", "opted-in", pod(nil, map[string]string{InjectLabel: "disabled"}, one), false},
		{"not-opted-in", "plain", pod(nil, nil, one), false},
		{"native-20s", "opted-in", pod(delay("20s"), nil, one), true},
		{"native-1m30s", "opted-in", pod(delay(" 1m30s "), nil, one), true},
		{"native-0", "opted-in", pod(delay("0"), nil, one), true},
		{"binary-bare-seconds", "opted-in", pod(delay("4.5"), nil, one), true},
		{"binary-ms", "opted-in", pod(delay("2500ms"), nil, one), true},
		{"binary-dot", "opted-in", pod(delay(".5"), nil, one), true},
		{"binary-arm64-nodeselector", "opted-in", pod(delay("1.5"), nil, corev1.PodSpec{Containers: []corev1.Container{app("app")}, NodeSelector: map[string]string{kube.ArchLabel: "arm64"}}), true},
		{"binary-arm64-affinity", "opted-in", pod(delay("1.5"), nil, arm), true},
		{"binary-unknown-arch", "opted-in", pod(delay("1.5"), nil, corev1.PodSpec{Containers: []corev1.Container{app("app")}, NodeSelector: map[string]string{kube.ArchLabel: "s390x"}}), false},
		{"native-unknown-arch", "opted-in", pod(nil, nil, corev1.PodSpec{Containers: []corev1.Container{app("app")}, NodeSelector: map[string]string{kube.ArchLabel: "s390x"}}), true},
		{"binary-existing-volumes-and-mounts", "opted-in", pod(delay("2.5s"), nil, corev1.PodSpec{Containers: []corev1.Container{withData}, Volumes: []corev1.Volume{data}}), true},
		{"binary-foreign-nap-volume", "opted-in", pod(delay("1.5"), nil, corev1.PodSpec{Containers: []corev1.Container{app("app")}, Volumes: []corev1.Volume{napVolume}}), false},
		{"binary-foreign-mount-at-nap-path", "opted-in", pod(delay("1.5"), nil, corev1.PodSpec{Containers: []corev1.Container{foreignMount, app("app")}, Volumes: []corev1.Volume{data}}), true},
		{"two-containers-one-hooked", "opted-in", pod(nil, nil, corev1.PodSpec{Containers: []corev1.Container{
			withPreStop(app("proxy"), corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/drain", Port: intstr.FromInt32(15000)}}), app("app")}}), true},
		{"sidecar-left-alone", "opted-in", pod(nil, nil, corev1.PodSpec{InitContainers: []corev1.Container{func() corev1.Container {
			c := app("sidecar")
			c.RestartPolicy = &always
			return c
		}()}, Containers: []corev1.Container{app("app")}}), true},
		{"grace-already-long", "opted-in", pod(nil, nil, corev1.PodSpec{Containers: []corev1.Container{app("app")}, TerminationGracePeriodSeconds: grace(90)}), true},
		{"grace-short", "opted-in", pod(delay("10s"), nil, corev1.PodSpec{Containers: []corev1.Container{app("app")}, TerminationGracePeriodSeconds: grace(5)}), true},
		{"bad-delay", "opted-in", pod(delay("soon"), nil, one), false},
		{"fixed-by-annotation", "opted-in", pod(wait("fixed", "3s"), nil, one), true},
		{"adaptive-no-probes", "opted-in", pod(wait("adaptive", ""), nil, one), true},
		{"adaptive-probes", "opted-in", pod(wait(" adaptive ", ""), nil, corev1.PodSpec{Containers: []corev1.Container{probed}}), true},
		{"adaptive-exec-and-startup-probes", "opted-in", pod(wait("adaptive", "45s"), nil, corev1.PodSpec{Containers: []corev1.Container{execProbed}}), true},
		{"adaptive-sidecar-probes", "opted-in", pod(wait("adaptive", "1.5m"), nil, corev1.PodSpec{InitContainers: []corev1.Container{probedSidecar}, Containers: []corev1.Container{probed}}), true},
		{"adaptive-max-ms", "opted-in", pod(wait("adaptive", "2500ms"), nil, corev1.PodSpec{Containers: []corev1.Container{probed}}), true},
		{"adaptive-arm64", "opted-in", pod(wait("adaptive", "30"), nil, corev1.PodSpec{Containers: []corev1.Container{app("app")}, NodeSelector: map[string]string{kube.ArchLabel: "arm64"}}), true},
		{"adaptive-max-below-min", "opted-in", pod(wait("adaptive", "500ms"), nil, one), false},
		{"bad-wait", "opted-in", pod(wait("eventually", ""), nil, one), false},
		{"windows-native", "opted-in", pod(nil, nil, windows), true},
		{"windows-os-native", "opted-in", pod(delay("20s"), nil, windowsOS), true},
		{"windows-subsecond", "opted-in", pod(delay("1.5"), nil, windows), false},
		{"windows-adaptive", "opted-in", pod(wait("adaptive", ""), nil, windowsOS), false},
		{"negative-delay", "opted-in", pod(delay("-5s"), nil, one), false},
		{"a-day", "opted-in", pod(delay("24h"), nil, one), true},
		{"past-a-day", "opted-in", pod(delay("1000000h"), nil, one), false},
		{"adaptive-past-a-day", "opted-in", pod(wait("adaptive", "86401"), nil, one), false},
		{"already-injected", "opted-in", pod(nil, nil, corev1.PodSpec{Containers: []corev1.Container{injected}, Volumes: []corev1.Volume{ownVolume}, TerminationGracePeriodSeconds: grace(37)}), false},
		{"existing-lifecycle-poststart", "opted-in", pod(nil, nil, corev1.PodSpec{Containers: []corev1.Container{func() corev1.Container {
			c := app("app")
			c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/warm"}}}}
			return c
		}()}}), true},
	}
}

// policyWaits are the defaults both are configured with.
var policyWaits = mustWaits(wait.Input{Delay: "5s", Min: "1s", Quiet: "2500ms"})

// waits5s are the default waits with a fixed delay of 5s.
var waits5s = mustWaits(wait.Input{Delay: "5s"})

func mustWaits(in wait.Input) wait.Defaults {
	d, err := in.Defaults()
	if err != nil {
		panic(err)
	}
	return d
}

// TestPolicyMatchesWebhook: one table of pods through the webhook and through the
// MutatingAdmissionPolicy, each on a real API server: the same pod specs, case by
// case, with nap from the ConfigMap and from an image volume. Both are configured as
// napctl install configures them for a cluster whose kubelets all have the native sleep.
func TestPolicyMatchesWebhook(t *testing.T) {
	for _, image := range []string{"", "registry.example/nap:1"} {
		t.Run("delivery="+cmp.Or(image, "configmap"), func(t *testing.T) {
			cases := policyCases(image)
			delivery := inject.DeliveryConfigMap
			if image != "" {
				delivery = inject.DeliveryImage
			}
			cfg, wopts := kubeenv.APIServerWithWebhooks(t, WebhookConfiguration("nap", "nap-system", "nap", nil, scope.OptIn))
			v := kube.Version{Major: 1, Minor: 37}
			serveWebhooks(t, wopts, map[string]http.Handler{WebhookPath: (&Injector{Options: inject.Options{Kube: &v, Delivery: delivery, Image: image}, Waits: policyWaits}).Handler()})
			viaWebhook := admitCases(t, cfg, cases)
			control := controlSpecs(t, cfg, cases)

			cfg = kubeenv.APIServer(t)
			policy, binding, err := AdmissionPolicy("nap", AdmissionPolicyOptions{Waits: policyWaits, Native: true, NativeZero: true, Image: image,
				Exclude: []string{"nap-system", "kube-system"}})
			if err != nil {
				t.Fatal(err)
			}
			applyPolicy(t, cfg, policy, binding)
			viaPolicy := admitCases(t, cfg, cases)

			nsLabels := map[string]map[string]string{"opted-in": {InjectLabel: scope.Enabled}, "opted-out": {InjectLabel: scope.Disabled}, "plain": nil}
			for i, tc := range cases {
				// The one decision says which pods are in scope; the plan may still leave
				// one alone (a bad delay, an architecture nap has no binary for).
				d, err := scope.Decide(scope.Input{NamespaceLabels: nsLabels[tc.ns], Pod: scope.Pod{Labels: tc.pod.Labels}})
				if err != nil {
					t.Fatal(err)
				}
				if tc.changed && !d.Inject {
					t.Errorf("%s: the table wants it changed, but scope.Decide says %s", tc.name, d)
				}
				if !d.Inject && !reflect.DeepEqual(viaPolicy[i], control[i]) {
					t.Errorf("%s: scope.Decide says %s, but the policy changed the pod", tc.name, d)
				}
				w, p := viaWebhook[i], viaPolicy[i]
				if changed := !reflect.DeepEqual(w, control[i]); changed != tc.changed {
					t.Errorf("%s: the webhook changed the pod: %v, want %v\n%s", tc.name, changed, tc.changed, specJSON(t, w))
				}
				if !reflect.DeepEqual(w, p) {
					t.Errorf("%s: the policy made\n%s\nthe webhook made\n%s", tc.name, specJSON(t, p), specJSON(t, w))
				}
			}
		})
	}
}

// admitCases creates each case's pod (namespaces opted-in, opted-out and plain) and
// returns the specs the API server stored.
func admitCases(t *testing.T, cfg *rest.Config, cases []policyCase) []corev1.PodSpec {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	for name, label := range map[string]string{"opted-in": "enabled", "opted-out": "disabled", "plain": ""} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if label != "" {
			ns.Labels = map[string]string{InjectLabel: label}
		}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	var out []corev1.PodSpec
	for _, tc := range cases {
		p := tc.pod.DeepCopy()
		p.Name = tc.name
		got, err := cs.CoreV1().Pods(tc.ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		out = append(out, got.Spec)
	}
	return out
}

// controlSpecs are the cases' pods as the API server stores them with no mutation:
// created (dry run) without their labels in the namespace nothing selects.
func controlSpecs(t *testing.T, cfg *rest.Config, cases []policyCase) []corev1.PodSpec {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	var out []corev1.PodSpec
	for _, tc := range cases {
		p := tc.pod.DeepCopy()
		p.Name, p.Labels = "control-"+tc.name, nil
		got, err := cs.CoreV1().Pods("plain").Create(context.Background(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		out = append(out, got.Spec)
	}
	return out
}

// applyPolicy creates the policy and its binding (in the API version they carry) and
// waits until the API server applies them: a dry-run pod in an opted-in namespace comes
// back with a preStop.
func applyPolicy(t *testing.T, cfg *rest.Config, objs ...runtime.Object) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, &unstructured.Unstructured{Object: u}); err != nil {
			t.Fatalf("creating %T: %v", o, err)
		}
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "policy-ready", Labels: map[string]string{InjectLabel: "enabled"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
		got, err := cs.CoreV1().Pods(ns.Name).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		if lc := got.Spec.Containers[0].Lifecycle; lc != nil && lc.PreStop != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the MutatingAdmissionPolicy did not take effect within 30 s: %s", specJSON(t, got.Spec))
		}
	}
}

func specJSON(t *testing.T, s corev1.PodSpec) string {
	t.Helper()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
