package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nap-k8s/nap/controller/report"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/policyreport/writer"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/wait"
)

// TestReporter runs the Reporter on a manager's caches against a real kube-apiserver
// (envtest): pods made as they would be when the webhook is down, hooks that cannot
// work, FailedPreStopHook events (the kubelet's, with no reason, and one with a reason);
// then a roll.
func TestReporter(t *testing.T) {
	ctx, mgr, c := startedManager(t, true)
	create := func(o client.Object) {
		t.Helper()
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	for name, l := range map[string]map[string]string{
		"opted-in": {InjectLabel: "enabled"}, "defaulted": {scope.Label: "default"}, "audited": {scope.Label: "audit"},
		"opted-out": {InjectLabel: "disabled"}, "plain": nil, "nap-system": {InjectLabel: "enabled"},
	} {
		create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}})
	}
	for _, ns := range []string{"defaulted", "audited"} {
		create(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}})
	}
	old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old-node"}}
	create(old)
	old.Status.NodeInfo.KubeletVersion = "v1.29.4"
	if err := c.Status().Update(ctx, old); err != nil {
		t.Fatal(err)
	}

	yes := true
	// pod makes a pod of Deployment (ReplicaSet name-hash) or of another owner kind.
	pod := func(ns, name, ownerKind, owner string, lbl map[string]string, mutate func(*corev1.Pod)) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
		for k, v := range lbl {
			p.Labels[k] = v
		}
		if ownerKind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: owner, UID: types.UID("u-" + owner), Controller: &yes}}
			if ownerKind == "ReplicaSet" {
				p.Labels["pod-template-hash"] = owner[strings.LastIndex(owner, "-")+1:]
			}
		}
		if mutate != nil {
			mutate(p)
		}
		create(p)
	}
	web := map[string]string{"app": "web"}
	pod("opted-in", "api-7d9f8c6b5-abcde", "ReplicaSet", "api-7d9f8c6b5", nil, nil)                        // missed
	pod("opted-in", "api-7d9f8c6b5-fghij", "ReplicaSet", "api-7d9f8c6b5", nil, nil)                        // missed
	pod("defaulted", "web-0", "StatefulSet", "web", web, nil)                                              // missed: a Service selects it
	pod("defaulted", "batch-xk2p9", "Job", "batch", web, nil)                                              // a Job's pod: left alone
	pod("defaulted", "lonely-5c4d-zzzzz", "ReplicaSet", "lonely-5c4d", map[string]string{"app": "x"}, nil) // no Service
	pod("audited", "web-1", "StatefulSet", "web", web, nil)                                                // audit: reported at admission
	pod("opted-out", "api-1", "StatefulSet", "api", nil, nil)
	pod("plain", "api-2", "StatefulSet", "api", nil, nil)
	pod("nap-system", "nap-6b7c8d9f-aaaaa", "ReplicaSet", "nap-6b7c8d9f", nil, nil) // the controller's own namespace
	pod("opted-in", "own-0", "StatefulSet", "own", map[string]string{InjectLabel: "disabled"}, nil)
	// Left unchanged by the webhook on purpose: refused, never rolled.
	pod("opted-in", "bad-0", "StatefulSet", "bad", nil, func(p *corev1.Pod) { p.Annotations = map[string]string{wait.DelayAnnotation: "soon"} })
	pod("opted-in", "ownvol-0", "StatefulSet", "ownvol", nil, func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: kube.ConfigMapName, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		p.Annotations = map[string]string{wait.DelayAnnotation: "2.5"} // nap's binary, which needs the volume
	})
	pod("plain", "slow-0", "StatefulSet", "slow", nil, func(p *corev1.Pod) {
		p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(10))
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/nap/nap", "10s"}}}}
	})
	pod("plain", "fits-0", "StatefulSet", "fits", nil, func(p *corev1.Pod) {
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/nap/nap", "10s"}}}}
	})
	pod("plain", "native-0", "StatefulSet", "native", nil, func(p *corev1.Pod) {
		p.Spec.NodeName = "old-node"
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}}
	})
	pod("plain", "shellhook-0", "StatefulSet", "shellhook", nil, func(p *corev1.Pod) {
		p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "sleep 5"}}}}
	})
	// The kubelet's own event says no more than this: the cause comes from the hook.
	create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "shellhook.1", Namespace: "plain"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "plain", Name: "shellhook-0"},
		Reason:         "FailedPreStopHook", Type: corev1.EventTypeWarning, Count: 1, Message: "PreStopHook failed"})
	// A FailedPreStopHook event with a reason (another writer's), of a pod that is gone.
	create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "shell.1", Namespace: "plain"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "plain", Name: "shell-6f7d8c9b4-q2w3e"},
		Reason:         "FailedPreStopHook", Type: corev1.EventTypeWarning, Count: 1,
		Message: `PreStopHook failed: rpc error: code = Unknown desc = failed to exec in container: failed to start exec "x": OCI runtime exec failed: exec failed: unable to start container process: exec: "/bin/sh": stat /bin/sh: no such file or directory: unknown`})
	// An event of another reason, which the cache never holds.
	create(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "other.1", Namespace: "plain"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "plain", Name: "api-2"}, Reason: "Killing", Type: corev1.EventTypeNormal})

	v := kube.Version{Major: 1, Minor: 34}
	reporter := func(rec record.EventRecorder) *report.Reporter {
		return &report.Reporter{Client: mgr.GetClient(), Informers: mgr.GetCache(), Recorder: rec, Scope: scope.OptIn, Exclude: map[string]bool{"nap-system": true, "kube-system": true}, Log: logr.Discard(),
			Refusal: RefusalOf(c, &Injector{Options: inject.Options{Kube: &v}, Waits: waits5s})}
	}
	want := []string{
		"Deployment/opted-in/api not-injected api-7d9f8c6b5-abcde,api-7d9f8c6b5-fghij",
		"Deployment/plain/shell failed-prestop-hook/no-shell shell-6f7d8c9b4-q2w3e",
		"StatefulSet/defaulted/web not-injected web-0",
		"StatefulSet/opted-in/bad refused bad-0",
		"StatefulSet/opted-in/ownvol refused ownvol-0",
		"StatefulSet/plain/native native-sleep-unsupported native-0",
		"StatefulSet/plain/shellhook failed-prestop-hook/hook-shell shellhook-0",
		"StatefulSet/plain/slow delay-exceeds-grace slow-0",
	}
	var got []string
	scan := func(r *report.Reporter) {
		t.Helper()
		if err := r.SyncAll(ctx); err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, f := range r.Findings() {
			reason := string(f.Reason)
			if f.Cause != "" {
				reason += "/" + f.Cause
			}
			got = append(got, fmt.Sprintf("%s %s %s", f.Workload, reason, strings.Join(f.Pods, ",")))
		}
	}
	// The caches fill asynchronously: wait, with a Reporter that reports nothing, until
	// they hold every object made above.
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("caches did not sync")
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		scan(reporter(nil))
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The Reporter as the manager runs it: its first sync of every namespace.
	rec := record.NewFakeRecorder(100)
	r := reporter(rec)
	r.Reports = &writer.Writer{Client: c, Format: policyreport.OpenReports}
	scan(r)
	if !slices.Equal(got, want) {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	events := drain(rec)
	if len(events) != 8 {
		t.Errorf("%d events after the first pass, want 8: %q", len(events), events)
	}
	for _, w := range []string{"Warning NapNotInjected 2 pod(s) (api-7d9f8c6b5-abcde, api-7d9f8c6b5-fghij)",
		`Warning NapRefused 1 pod(s) (bad-0): pods have no preStop delay: nap's webhook leaves them unchanged (nap.dev/delay "soon"`, "Warning NapFailedPreStopHook", "Warning NapDelayExceedsGrace", "Warning NapNativeSleepUnsupported"} {
		if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, w) }) {
			t.Errorf("no event %q in %q", w, events)
		}
	}
	if v := gauge(t, "nap_pods_unprotected", map[string]string{"namespace": "opted-in", "reason": string(report.NotInjected)}); v != 2 {
		t.Errorf("nap_pods_unprotected{opted-in,not-injected} = %v, want 2", v)
	}
	if v := gauge(t, "nap_prestop_hook_failures", map[string]string{"namespace": "plain", "workload": "Deployment/shell", "cause": "no-shell"}); v != 1 {
		t.Errorf("nap_prestop_hook_failures{plain,Deployment/shell,no-shell} = %v, want 1", v)
	}
	// One OpenReports Report per namespace with findings, one result per finding.
	reportOf := func(ns string) (fails int64, rv string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(policyreport.OpenReports.GroupVersion.WithKind(policyreport.OpenReports.Kind))
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: policyreport.Name}, u); err != nil {
			return -1, ""
		}
		fails, _, _ = unstructured.NestedInt64(u.Object, "summary", "fail")
		return fails, u.GetResourceVersion()
	}
	rvs := map[string]string{}
	for ns, want := range map[string]int64{"opted-in": 3, "defaulted": 1, "plain": 4, "opted-out": -1, "audited": -1} {
		fails, rv := reportOf(ns)
		if fails != want {
			t.Errorf("namespace %s: a report of %d failures, want %d (-1: none)", ns, fails, want)
		}
		rvs[ns] = rv
	}
	// At rest: no new event, no report written.
	scan(r)
	if e := drain(rec); len(e) != 0 {
		t.Errorf("events at rest: %q", e)
	}
	for ns, rv := range rvs {
		if _, now := reportOf(ns); now != rv {
			t.Errorf("namespace %s: the report was written at rest (%s → %s)", ns, rv, now)
		}
	}

	// Rolling: one not-injected pod evicted per interval.
	r.Roll, r.RollInterval = true, time.Hour
	for range 2 { // the second within the hour: nothing
		if err := r.RollOne(ctx); err != nil {
			t.Fatal(err)
		}
	}
	gone := 0
	for _, name := range []string{"api-7d9f8c6b5-abcde", "api-7d9f8c6b5-fghij", "web-0"} {
		var p corev1.Pod
		ns := "opted-in"
		if name == "web-0" {
			ns = "defaulted"
		}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil {
			gone++
		}
	}
	if gone != 1 {
		t.Errorf("%d pods evicted by one pass with --roll-missed, want 1", gone)
	}
	if e := drain(rec); !slices.ContainsFunc(e, func(s string) bool { return strings.HasPrefix(s, "Normal NapRolled") }) {
		t.Errorf("no NapRolled event: %q", e)
	}
	// Pass after pass, the missed pods go and the refused ones stay.
	r.RollInterval = time.Nanosecond
	for range 4 {
		scan(r)
		if err := r.RollOne(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"bad-0", "ownvol-0"} {
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: "opted-in", Name: name}, &p); err != nil || p.DeletionTimestamp != nil {
			t.Errorf("refused pod %s rolled: %v", name, err)
		}
	}
	if n := gauge(t, "nap_pods_rolled_total", map[string]string{"namespace": "opted-in"}) + gauge(t, "nap_pods_rolled_total", map[string]string{"namespace": "defaulted"}); n < 3 {
		t.Errorf("%v missed pods rolled, want the 3", n)
	}
}

func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// gauge is the value of the metric name (a gauge or a counter) of exactly these
// labels, as the controller serves it; 0 when it has none.
func gauge(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			if maps.Equal(have, labels) {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
