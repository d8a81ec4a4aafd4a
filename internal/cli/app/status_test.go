package app

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/sleeper/nap"
	nstatus "github.com/nap-k8s/nap/status"
	"github.com/nap-k8s/nap/traffic"
)

// statusWorkloads: Deployments behind one Service each (but "batch"), a readiness probe
// on every one, each terminating another way.
const statusWorkloads = `apiVersion: apps/v1
kind: Deployment
metadata: {name: binary}
spec:
  replicas: 2
  selector: {matchLabels: {app: binary}}
  template:
    metadata: {labels: {app: binary}}
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: app
        image: registry.example/app:1
        readinessProbe: {httpGet: {path: /readyz, port: 8080}}
        lifecycle: {preStop: {exec: {command: [/nap/nap, 5s]}}}
        volumeMounts: [{name: nap, mountPath: /nap, readOnly: true}]
      volumes:
      - name: nap
        configMap: {name: nap, defaultMode: 0555, items: [{key: nap-amd64, path: nap}]}
      nodeSelector: {kubernetes.io/arch: amd64}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: native}
spec:
  replicas: 2
  selector: {matchLabels: {app: native}}
  template:
    metadata: {labels: {app: native}}
    spec:
      containers:
      - name: app
        image: registry.example/app:1
        readinessProbe: {httpGet: {path: /readyz, port: 8080}}
        lifecycle: {preStop: {sleep: {seconds: 5}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: nohook}
spec:
  replicas: 2
  selector: {matchLabels: {app: nohook}}
  template:
    metadata: {labels: {app: nohook}}
    spec:
      containers:
      - name: app
        image: registry.example/app:1
        readinessProbe: {httpGet: {path: /readyz, port: 8080}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: batch}
spec:
  replicas: 2
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec:
      containers:
      - name: app
        image: registry.example/app:1
---
apiVersion: v1
kind: Service
metadata: {name: binary}
spec: {selector: {app: binary}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: native}
spec: {selector: {app: native}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: nohook}
spec: {selector: {app: nohook}, ports: [{port: 80, targetPort: 8080}]}
`

// TestStatus: napctl status on a real API server tells each Service-backed workload's
// means and safety (a Deployment no Service selects is not counted), takes a namespace
// opted in to the webhook as protected only while the webhook is registered, and counts
// a pod's FailedPreStopHook events on its Deployment with the cause.
func TestStatus(t *testing.T) {
	cs, kubeconfig, kubectl := envtestCluster(t)
	ctx := context.Background()
	for ns, labels := range map[string]map[string]string{"st-plain": nil, "st-optin": {kube.InjectLabel: "enabled"}} {
		applyIn(t, cs, kubectl, kubeconfig, ns, labels, writeTemp(t, statusWorkloads))
	}
	const cause = `Exec lifecycle hook ([/bin/sh -c sleep 5]) for Container "app" in Pod "nohook-5d9f8c6b5-x7k2p_st-plain" failed - error: rpc error: code = Unknown desc = exec: "/bin/sh": stat /bin/sh: no such file or directory`
	for i, pod := range []string{"nohook-5d9f8c6b5-x7k2p", "nohook-5d9f8c6b5-q9r4s", "native-canary-7c4b9-zz"} { // the last is a pod of native-canary, not of native
		_, err := cs.CoreV1().Events("st-plain").Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: pod + ".hook"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "st-plain", Name: pod},
			Reason:         "FailedPreStopHook", Message: cause, Type: corev1.EventTypeWarning,
			LastTimestamp: metav1.NewTime(time.Now().Add(time.Duration(i) * time.Second)),
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}

	status := func(args ...string) (int, nstatus.Report, string) {
		t.Helper()
		code, stdout, stderr := runNapctl(append([]string{"status", "--kubeconfig", kubeconfig, "-o", "json"}, args...)...)
		var r nstatus.Report
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("status -o json: exit %d, %v: %s %s", code, err, stdout, stderr)
		}
		return code, r, stderr
	}
	type want struct {
		means nstatus.Means
		safe  bool
	}
	check := func(r nstatus.Report, wants map[string]want) {
		t.Helper()
		got := map[string]nstatus.Workload{}
		for _, ns := range r.Namespaces {
			for _, w := range ns.Workloads {
				got[w.Namespace+"/"+w.Name] = w
			}
		}
		if len(got) != len(wants) {
			t.Errorf("%d Service-backed workloads %v, want %d", len(got), got, len(wants))
		}
		for name, w := range wants {
			if g, ok := got[name]; !ok || g.Means != w.means || g.Safe != w.safe {
				t.Errorf("%s: %+v, want means %q safe %v", name, g, w.means, w.safe)
			}
		}
	}

	// Without nap's webhook: opting in protects nothing.
	code, r, _ := status("-A", "--fail-on", "unprotected")
	check(r, map[string]want{
		"st-plain/binary": {nstatus.Binary, true}, "st-plain/native": {nstatus.Native, true}, "st-plain/nohook": {nstatus.None, false},
		"st-optin/binary": {nstatus.Binary, true}, "st-optin/native": {nstatus.Native, true}, "st-optin/nohook": {nstatus.None, false},
	})
	if code != 1 || r.Unprotected != 2 || r.Safe != 4 || r.ByMeans[nstatus.Native] != 2 {
		t.Errorf("exit %d, %d unprotected, %d safe, %v; want 1, 2, 4, native 2", code, r.Unprotected, r.Safe, r.ByMeans)
	}
	for _, ns := range r.Namespaces {
		for _, w := range ns.Workloads {
			switch {
			case w.Namespace+"/"+w.Name == "st-plain/nohook":
				if w.FailedPreStopHooks != 2 || w.LastFailure != cause || !strings.Contains(strings.Join(w.Reasons, ";"), "no-prestop-delay") {
					t.Errorf("st-plain/nohook: %+v, want 2 failed hooks with the cause and no-prestop-delay", w)
				}
			case w.Name == "nohook":
				if !strings.Contains(strings.Join(w.Reasons, ";"), "not installed") {
					t.Errorf("st-optin/nohook: %+v, want the webhook named as missing", w)
				}
			case w.FailedPreStopHooks != 0:
				t.Errorf("%s/%s: %d failed hooks, want none", w.Namespace, w.Name, w.FailedPreStopHooks)
			}
		}
	}

	// With it registered, the opted-in namespace's workload without a hook is protected.
	hook := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "nap"}}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, hook, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, r, _ = status("-A", "--fail-on", "unprotected")
	if code != 1 || r.Unprotected != 1 {
		t.Errorf("with the webhook: exit %d, %d unprotected; want 1, 1", code, r.Unprotected)
	}
	check(r, map[string]want{
		"st-plain/binary": {nstatus.Binary, true}, "st-plain/native": {nstatus.Native, true}, "st-plain/nohook": {nstatus.None, false},
		"st-optin/binary": {nstatus.Binary, true}, "st-optin/native": {nstatus.Native, true}, "st-optin/nohook": {nstatus.Webhook, true},
	})
	code, r, _ = status("-n", "st-optin", "--fail-on", "unprotected")
	if code != 0 || r.Workloads != 3 || r.Unprotected != 0 {
		t.Errorf("-n st-optin: exit %d, %d workloads, %d unprotected; want 0, 3, 0", code, r.Workloads, r.Unprotected)
	}
	// Neither -n nor -A: the context's namespace, as kubectl; "default" where it names
	// none (no workload there).
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc.Contexts[kc.CurrentContext].Namespace = "st-optin"
	inOptin := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, inOptin); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kubeconfig string
		workloads  int
	}{{inOptin, 3}, {kubeconfig, 0}} {
		code, stdout, stderr := runNapctl("status", "--kubeconfig", tc.kubeconfig, "-o", "json")
		var r nstatus.Report
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 || r.Workloads != tc.workloads {
			t.Errorf("status with the context's namespace: exit %d, %d workloads, want %d (%v %s)", code, r.Workloads, tc.workloads, err, stderr)
		}
	}
	if code, _, stderr := runNapctl("status", "--kubeconfig", kubeconfig, "-n", "st-optin", "-A"); code != 2 || !strings.Contains(stderr, "-n st-optin and -A") {
		t.Errorf("-n and -A: exit %d, %q; want 2 and why", code, stderr)
	}
	code, stdout, _ := runNapctl("status", "--kubeconfig", kubeconfig, "-n", "st-plain")
	t.Logf("napctl status -n st-plain:\n%s", stdout)
	if code != 0 || !strings.Contains(stdout, "Deployment/nohook") || !strings.Contains(stdout, `2, last: exec: "/bin/sh": stat /bin/sh: no such file or directory`) ||
		!strings.Contains(stdout, "3 Service-backed workloads in 1 namespaces: 2 safe (nap binary 1, native sleep 1), 1 unprotected") {
		t.Errorf("status text: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := runNapctl("status", "--kubeconfig", kubeconfig, "--fail-on", "everything"); code != 2 || stderr == "" {
		t.Errorf("--fail-on everything: exit %d %q, want 2 and a reason", code, stderr)
	}

	// A calibration kept in the cluster (napctl calibrate --store) whose in-cluster path
	// needs 8 s: status holds the 5 s delays to it, with no flag; one that is not a
	// calibration is left out with a word.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controller.DefaultNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kept := &traffic.Calibration{APIVersion: traffic.CalibrationAPIVersion, Kind: traffic.CalibrationKind, Measured: time.Now(), Rounds: 1, MarginS: 2,
		Paths: []traffic.PathTail{{Name: traffic.ClusterIP.Name, Samples: 3, P50: 4, P99: 5.5, Max: 5.5, DelayS: 8}}}
	if err := controller.StoreCalibration(ctx, cs, controller.DefaultNamespace, kept); err != nil {
		t.Fatal(err)
	}
	code, r, _ = status("-n", "st-optin", "--fail-on", "unprotected")
	if code != 1 || r.Unprotected != 2 {
		t.Errorf("-n st-optin beside a kept calibration: exit %d, %d unprotected; want 1, 2 (binary and native below the path)", code, r.Unprotected)
	}
	for _, ns := range r.Namespaces {
		for _, w := range ns.Workloads {
			if below := strings.Contains(strings.Join(w.Reasons, ";"), "it needs 8s"); below != (w.Name != "nohook") {
				t.Errorf("%s: reasons %q; want delay-below-path (it needs 8s) on binary and native only", w.Name, w.Reasons)
			}
		}
	}
	cm, err := cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Get(ctx, kube.CalibrationConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[kube.CalibrationKey] = "{}"
	if _, err := cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, r, stderr := status("-n", "st-optin", "--fail-on", "unprotected")
	if code != 0 || r.Unprotected != 0 || !strings.Contains(stderr, "napctl status: not holding delays to a calibration: ConfigMap nap-system/nap-calibration key calibration.json") {
		t.Errorf("beside a ConfigMap that is not a calibration: exit %d, %d unprotected, %q; want 0, 0 and a word", code, r.Unprotected, stderr)
	}

	// One namespace's status reads the nodes only when a workload there uses the native
	// sleep; st-plain's does, so a node with a 1.29 kubelet (no sleep action) makes it
	// unprotected there too.
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "status-old"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	node.Status.NodeInfo.KubeletVersion = "v1.29.4"
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, r, _ = status("-n", "st-plain"); code != 0 || r.Unprotected != 2 {
		t.Errorf("-n st-plain beside a 1.29 kubelet: exit %d, %d unprotected; want 0, 2 (the native sleep too)", code, r.Unprotected)
	}
}

// TestStatusTerminations: napctl status reads what nap's controller counted of each
// workload's terminations from its namespace's Report (OpenReports, on a real API
// server with its CRD) and shows it beside the workload, a late one on a line of its
// own; the native sleep's workload is "not observed".
func TestStatusTerminations(t *testing.T) {
	cfg := kubeenv.APIServer(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, kubectl := kubeenv.Kubeconfig(t, cfg), kubeenv.Kubectl(t)
	crd := kubeenv.ModuleFile(t, "github.com/openreports/reports-api", "config/crd/openreports.io_reports.yaml")
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{crd}}); err != nil {
		t.Fatal(err)
	}
	applyIn(t, cs, kubectl, kubeconfig, "st-verdicts", nil, writeTemp(t, statusWorkloads))
	tm := policyreport.Terminations{Since: time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)}
	for range 41 {
		tm.Add(nap.Quiet, 1200*time.Millisecond, "binary-a", nil, time.Time{})
	}
	tm.Add(nap.Late, 0, "binary-7d9f8c6b5-x", nil, time.Date(2026, 12, 1, 8, 12, 0, 0, time.UTC))
	ref := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "st-verdicts", Name: "binary"}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), policyreport.Report(policyreport.OpenReports, "st-verdicts", []policyreport.Result{tm.Result(ref)})); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr := runNapctl("status", "--kubeconfig", kubeconfig, "-n", "st-verdicts", "-o", "json")
	var r nstatus.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 0 {
		t.Fatalf("status -o json: exit %d, %v: %s %s", code, err, stdout, stderr)
	}
	for _, w := range r.Namespaces[0].Workloads {
		switch w.Name {
		case "binary":
			if w.Terminations == nil || w.Terminations.Total() != 42 || w.Terminations.Count(nap.Late) != 1 {
				t.Errorf("binary: %+v, want its 42 terminations, 1 late", w.Terminations)
			}
		case "native":
			if w.Terminations != nil || w.NotObserved == "" {
				t.Errorf("native: %+v, want not observed", w)
			}
		}
	}
	if !strings.Contains(stdout, `"verdicts": {`) {
		t.Errorf("no verdicts by kind in the JSON:\n%s", stdout)
	}
	code, stdout, _ = runNapctl("status", "--kubeconfig", kubeconfig, "-n", "st-verdicts")
	t.Logf("napctl status -n st-verdicts:\n%s", stdout)
	for _, want := range []string{"42: 41 quiet, 1 late; p99 1.2s", "not observed",
		"st-verdicts Deployment/binary: 42 terminations since 2026-11-25 10:00 UTC: 41 quiet, 1 late; tail p50 1.2s, p99 1.2s of 41; last late or cut 2026-12-01 08:12 UTC, pod binary-7d9f8c6b5-x"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status text: exit %d, no %q in\n%s", code, want, stdout)
		}
	}
	// -o openreports says it too, as the controller wrote it.
	if _, stdout, _ = runNapctl("status", "--kubeconfig", kubeconfig, "-n", "st-verdicts", "-o", "openreports"); !strings.Contains(stdout, "policy: terminations") {
		t.Errorf("-o openreports: no terminations result in\n%s", stdout)
	}
}
