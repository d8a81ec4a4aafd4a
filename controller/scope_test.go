package controller

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
)

// warnings collects the warnings the API server passes on from admission webhooks.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) take() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := strings.Join(w.msgs, "\n")
	w.msgs = nil
	return s
}

// TestWebhookPolicies has the real kube-apiserver call both webhooks (installed policy
// opt-in) for pods of namespaces under the default and audit policies: a pod that backs
// a Service gets the delay under default and only a warning, a metric and an event under
// audit; a pod no Service selects, a Job's pod, a pod that does not restart, a pod or
// namespace opted out, and a namespace under no policy are left alone; an explicit
// opt-in still works everywhere.
func TestWebhookPolicies(t *testing.T) {
	cfg, wopts := kubeenv.APIServerWithWebhooks(t, WebhookConfiguration("nap", "nap-system", "nap", nil, scope.OptIn))
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := kube.Version{Major: 1, Minor: 34}
	recorder := record.NewFakeRecorder(10)
	explicit := Injector{Options: inject.Options{Kube: &v}, Waits: waits5s}
	policy := explicit
	policy.Scope, policy.NamespaceLabels, policy.Services, policy.Recorder = scope.OptIn, NamespaceLabelsFrom(c), ServicesFrom(c), recorder
	serveWebhooks(t, wopts, map[string]http.Handler{WebhookPath: explicit.Handler(), PolicyWebhookPath: policy.Handler()})
	ctx := context.Background()
	warned := &warnings{}
	wcfg := rest.CopyConfig(cfg)
	wcfg.WarningHandler = warned
	wc, err := client.New(wcfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}

	for ns, l := range map[string]map[string]string{
		"pol-default":     {scope.Label: "default"},
		"pol-audit":       {scope.Label: "audit"},
		"pol-default-out": {scope.Label: "default", InjectLabel: "disabled"},
		"pol-none":        nil,
	} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: l}}); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}
		if err := c.Create(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
	job := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "nightly", UID: types.UID("5b0c4a4e-0000-4000-8000-000000000001")}}
	for _, tc := range []struct {
		name, ns string
		labels   map[string]string
		owners   []metav1.OwnerReference
		restart  corev1.RestartPolicy
		want     string // the preStop after admission
		warning  string // in the API server's warnings
	}{
		{name: "service-backed", ns: "pol-default", labels: map[string]string{"app": "web"}, want: "sleep 5s"},
		{name: "no-service", ns: "pol-default", labels: map[string]string{"app": "batch"}, want: "none"},
		{name: "job-pod", ns: "pol-default", labels: map[string]string{"app": "web"}, owners: job, want: "none"},
		{name: "restart-never", ns: "pol-default", labels: map[string]string{"app": "web"}, restart: corev1.RestartPolicyNever, want: "none"},
		{name: "pod-opted-out", ns: "pol-default", labels: map[string]string{"app": "web", InjectLabel: "disabled"}, want: "none"},
		{name: "namespace-opted-out", ns: "pol-default-out", labels: map[string]string{"app": "web"}, want: "none"},
		{name: "audit", ns: "pol-audit", labels: map[string]string{"app": "web"}, want: "none", warning: "nap (audit policy): pod pol-audit/audit would get a 5s preStop delay (Service web selects it)"},
		{name: "audit-no-service", ns: "pol-audit", labels: map[string]string{"app": "batch"}, want: "none"},
		{name: "no-policy", ns: "pol-none", labels: map[string]string{"app": "web"}, want: "none"},
		{name: "explicit-opt-in", ns: "pol-none", labels: map[string]string{"app": "batch", InjectLabel: "enabled"}, want: "sleep 5s"},
		{name: "explicit-in-audit", ns: "pol-audit", labels: map[string]string{"app": "web", InjectLabel: "enabled"}, want: "sleep 5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: tc.ns, Labels: tc.labels, OwnerReferences: tc.owners},
				Spec:       corev1.PodSpec{RestartPolicy: tc.restart, Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
			}
			if err := wc.Create(ctx, pod); err != nil {
				t.Fatal(err)
			}
			got := "none"
			if lc := pod.Spec.Containers[0].Lifecycle; lc != nil && lc.PreStop != nil && lc.PreStop.Sleep != nil {
				got = "sleep " + (time.Duration(lc.PreStop.Sleep.Seconds) * time.Second).String()
			}
			if got != tc.want {
				t.Errorf("preStop %q, want %q", got, tc.want)
			}
			if w := warned.take(); (tc.warning == "") != (w == "") || !strings.Contains(w, tc.warning) {
				t.Errorf("warnings %q, want %q", w, tc.warning)
			}
		})
	}
	if n := testutil.ToFloat64(auditWouldInject.WithLabelValues("pol-audit")); n != 1 {
		t.Errorf("nap_audit_would_inject_total{namespace=pol-audit} = %v, want 1", n)
	}
	var events []string
	for len(recorder.Events) > 0 {
		events = append(events, <-recorder.Events)
	}
	if len(events) != 1 || !strings.Contains(events[0], "NapAuditWouldInject") {
		t.Errorf("events %q, want one NapAuditWouldInject", events)
	}
}

// TestPolicyWebhookSelectors: which namespaces and pods the policy webhook is called
// for, under each installed policy (the API server applies these selectors; the
// handler never sees the rest).
func TestPolicyWebhookSelectors(t *testing.T) {
	for _, tc := range []struct {
		installed scope.Scope
		ns        map[string]string
		pod       map[string]string
		want      bool
	}{
		{installed: scope.OptIn, ns: map[string]string{}, want: false},
		{installed: scope.OptIn, ns: map[string]string{scope.Label: "default"}, want: true},
		{installed: scope.OptIn, ns: map[string]string{scope.Label: "audit"}, want: true},
		{installed: scope.Default, ns: map[string]string{}, want: true},
		{installed: scope.Default, ns: map[string]string{scope.Label: "opt-in"}, want: false},
		{installed: scope.Audit, ns: map[string]string{scope.Label: "default"}, want: true},
		{installed: scope.Default, ns: map[string]string{InjectLabel: "disabled"}, want: false},
		{installed: scope.Default, ns: map[string]string{InjectLabel: "enabled"}, want: false}, // the namespace webhook's
		{installed: scope.Default, ns: map[string]string{"kubernetes.io/metadata.name": "kube-system"}, want: false},
		{installed: scope.Default, ns: map[string]string{"kubernetes.io/metadata.name": "nap-system"}, want: false},
		{installed: scope.Default, ns: map[string]string{}, pod: map[string]string{InjectLabel: "disabled"}, want: false},
		{installed: scope.Default, ns: map[string]string{}, pod: map[string]string{InjectLabel: "enabled"}, want: false}, // the pod webhook's
	} {
		var hook *struct{ ns, obj labels.Selector }
		for _, h := range WebhookConfiguration("nap", "nap-system", "nap", nil, tc.installed).Webhooks {
			if *h.ClientConfig.Service.Path == PolicyWebhookPath {
				ns, err1 := metav1.LabelSelectorAsSelector(h.NamespaceSelector)
				obj, err2 := metav1.LabelSelectorAsSelector(h.ObjectSelector)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				hook = &struct{ ns, obj labels.Selector }{ns, obj}
			}
		}
		if hook == nil {
			t.Fatal("no policy webhook")
		}
		if got := hook.ns.Matches(labels.Set(tc.ns)) && hook.obj.Matches(labels.Set(tc.pod)); got != tc.want {
			t.Errorf("installed %s, namespace %v, pod %v: called %v, want %v", tc.installed, tc.ns, tc.pod, got, tc.want)
		}
	}
}

// TestSelectorsFollowDecide: the three webhooks' selectors and scope.Decide agree, for
// every scope installed and labelled and every opt-in label: a pod that a Service
// selects reaches some webhook exactly when Decide gives it the delay (or, under
// audit, would), so that the selectors never keep away a pod Decide wants, nor send
// one it does not (the explicit webhook injects whatever reaches it).
func TestSelectorsFollowDecide(t *testing.T) {
	labelValues := []string{"", scope.Enabled, scope.Disabled}
	scopeLabels := []string{""}
	for _, s := range scope.All() {
		scopeLabels = append(scopeLabels, string(s))
	}
	for _, installed := range scope.All() {
		type selectors struct {
			path     string
			ns, pods labels.Selector
		}
		var hooks []selectors
		for _, h := range WebhookConfiguration("nap", "nap-system", "nap", nil, installed).Webhooks {
			ns, err1 := metav1.LabelSelectorAsSelector(h.NamespaceSelector)
			obj, err2 := metav1.LabelSelectorAsSelector(h.ObjectSelector)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			hooks = append(hooks, selectors{*h.ClientConfig.Service.Path, ns, obj})
		}
		for _, nsName := range []string{"shop", "nap-system", "kube-system"} {
			for _, nsInject := range labelValues {
				for _, nsScope := range scopeLabels {
					for _, podInject := range labelValues {
						nsLabels := map[string]string{"kubernetes.io/metadata.name": nsName}
						if nsInject != "" {
							nsLabels[InjectLabel] = nsInject
						}
						if nsScope != "" {
							nsLabels[scope.Label] = nsScope
						}
						podLabels := map[string]string{"app": "shop"}
						if podInject != "" {
							podLabels[InjectLabel] = podInject
						}
						d, err := scope.Decide(scope.Input{Installed: installed, Excluded: nsName != "shop", NamespaceLabels: nsLabels,
							Pod:       scope.Pod{Labels: podLabels},
							Selecting: func() (string, bool, error) { return "shop", true, nil }})
						if err != nil {
							t.Fatal(err)
						}
						reached := ""
						for _, h := range hooks {
							if h.ns.Matches(labels.Set(nsLabels)) && h.pods.Matches(labels.Set(podLabels)) {
								reached = h.path
								break
							}
						}
						want := d.Inject || d.Audit
						if (reached != "") != want {
							t.Errorf("installed %s, namespace %v, pod %v: reaches %q, Decide says %+v", installed, nsLabels, podLabels, reached, d)
						}
						if reached == WebhookPath && !d.Explicit {
							t.Errorf("installed %s, namespace %v, pod %v: the explicit webhook gets a pod Decide decides by scope: %+v", installed, nsLabels, podLabels, d)
						}
					}
				}
			}
		}
	}
}
