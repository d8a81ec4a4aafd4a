package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/probe"
)

// A variant of the demo service: how its pods stop.
type variant struct {
	name   string
	mode   string // the app's shutdown: plain (Shutdown at SIGTERM) or drain (the drain library)
	inject *inject.Options
	env    []corev1.EnvVar
	expect expectation
	// webhook: the namespace opts in (nap.dev/inject: enabled) and nap's controller,
	// installed, publishes the ConfigMap and injects the hook; annotations go on the
	// pod template.
	webhook     bool
	annotations map[string]string
}

// expectation is what a variant must show.
type expectation int

const (
	// fails: requests fail; the experiment still shows the problem.
	fails expectation = iota
	// newClean: no request over a new connection fails. A keep-alive connection to an
	// old pod outlives its removal from the Service (routing applies to new
	// connections), and a plain app closes it when it shuts down after the delay: a
	// request racing that close fails unless the client resends it. Counted, not hidden.
	newClean
	// clean: no request fails at all (the app tells keep-alive clients to leave
	// during the delay: Connection: close, HTTP/2 GOAWAY).
	clean
)

var (
	noDelay   = variant{name: "no preStop", mode: "plain", expect: fails}
	napBinary = variant{name: "nap preStop (binary)", mode: "plain", inject: &inject.Options{Mode: inject.ModeBinary, Delay: "5s"}, expect: newClean}
	napNative = variant{name: "native sleep preStop", mode: "plain", inject: &inject.Options{Mode: inject.ModeNative, Delay: "5s"}, expect: newClean}
	drainOnly = variant{name: "drain library alone", mode: "drain", expect: clean}
	napDrain  = variant{name: "nap preStop + drain", mode: "drain", inject: &inject.Options{Mode: inject.ModeBinary, Delay: "5s"},
		env: []corev1.EnvVar{{Name: "NAP_DRAIN_DELAY", Value: "1s"}}, expect: clean}
	// The controller installed; the webhook injects a 4.5 s delay (not whole seconds:
	// the nap binary, mounted from the ConfigMap the controller published).
	viaWebhook = variant{name: "nap preStop by the webhook", mode: "plain", webhook: true,
		annotations: map[string]string{"nap.dev/delay": "4.5"}, expect: newClean}
)

// check fails the test when d does not show what its variant expects.
func (d downtime) check(t *testing.T) {
	t.Helper()
	s := d.summary
	failedNew := 0
	if c := s.Modes[probe.New]; c != nil {
		failedNew = c.Failed
	}
	switch d.variant.expect {
	case fails:
		if s.Total.Failed == 0 {
			t.Errorf("%s: no request failed: the experiment no longer shows the problem", d.variant.name)
		}
	case newClean:
		if failedNew > 0 {
			t.Errorf("%s: %d requests over new connections failed, want none: %+v", d.variant.name, failedNew, s.Outages)
		}
	case clean:
		if s.Total.Failed > 0 {
			t.Errorf("%s: %d requests failed, want none: %+v", d.variant.name, s.Total.Failed, s.Outages)
		}
	}
}

const serviceDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  replicas: 3
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  selector:
    matchLabels: {app: app}
  template:
    metadata:
      labels: {app: app}
    spec:
      containers:
      - name: app
        image: nap/app:e2e
        imagePullPolicy: Never
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /readyz, port: 8080}
          periodSeconds: 1
`

// downtime is one variant's measurement.
type downtime struct {
	ns       string
	variant  variant
	rollouts int
	summary  probe.Summary
}

// measure deploys v behind a Service, probes its ClusterIP at rate over new and
// keep-alive connections while rollouts `rollout restart`s run one after another, and
// returns the report.
func measure(t *testing.T, cs *kubernetes.Clientset, v variant, rollouts int, rate float64) downtime {
	t.Helper()
	ctx := context.Background()
	var ns string
	if v.webhook {
		ns = optedInNamespace(t, cs)
	} else {
		ns = namespace(t, cs)
	}
	src := []byte(serviceDeployment)
	if v.inject != nil {
		src = injectManifest(t, src, *v.inject)
	}
	objs, err := manifest.Read("deployment.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := objs[0].Decode(&d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Annotations = v.annotations
	c := &d.Spec.Template.Spec.Containers[0]
	c.Env = append([]corev1.EnvVar{{Name: "APP_MODE", Value: v.mode}}, v.env...)
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "app"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "app"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intOrPort(8080)}}},
	}
	svc, err = cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, cs, ns)
	url := "http://" + svc.Spec.ClusterIP + "/"
	waitServing(t, url)

	pctx, stop := context.WithCancel(ctx)
	start := time.Now()
	rep := probe.NewReport(start, 500*time.Millisecond)
	opts := probe.Options{URL: url, Rate: rate, Timeout: 2 * time.Second}
	done := make(chan error, 1)
	go func() { done <- probe.Run(pctx, opts, rep.Add) }()
	time.Sleep(2 * time.Second)
	for i := range rollouts {
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"nap.dev/restartedAt":%q}}}}}`, time.Now().Format(time.RFC3339Nano)+strconv.Itoa(i))
		if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "app", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRolledOut(t, cs, ns)
	}
	time.Sleep(2 * time.Second)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return downtime{ns: ns, variant: v, rollouts: rollouts, summary: rep.Summarize(opts, time.Since(start), nil)}
}

func injectManifest(t *testing.T, src []byte, opts inject.Options) []byte {
	t.Helper()
	p, err := inject.NewPlan(opts)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := inject.Inject("deployment.yaml", src, p)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitRolledOut waits until every pod of the Deployment is updated and available and no
// old pod is left, terminating or not.
func waitRolledOut(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
		if err == nil && d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == *d.Spec.Replicas &&
			d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.Replicas == *d.Spec.Replicas {
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
			if err == nil && len(pods.Items) == int(*d.Spec.Replicas) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("rollout in %s not done after 3 minutes", ns)
}

// waitServing waits until url answers (kube-proxy has its rules, the pod listens): one
// request at a time with a short timeout, for at most 30 s, before any load is sent.
func waitServing(t *testing.T, url string) {
	t.Helper()
	c := &http.Client{Timeout: time.Second}
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var resp *http.Response
		if resp, err = c.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
	}
	t.Fatalf("%s never answered: %v", url, err)
}

func (d downtime) row() string {
	s := d.summary
	var kinds []string
	for _, k := range probe.Kinds {
		if n := s.Total.ByKind[k]; n > 0 && k != probe.OK {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		}
	}
	failed := fmt.Sprintf("%d", s.Total.Failed)
	if len(kinds) > 0 {
		failed += " (" + strings.Join(kinds, ", ") + ")"
	}
	perMode := func(m probe.Mode) int {
		if c := s.Modes[m]; c != nil {
			return c.Failed
		}
		return 0
	}
	return fmt.Sprintf("| %s | %d | %d | %s | %d / %d | %.2f s |", d.variant.name, d.rollouts, s.Total.Requests, failed,
		perMode(probe.New), perMode(probe.Reuse), s.LongestOutage)
}

// TestRolloutDowntime is the proof, small enough for every `make test`: a rolling
// restart of 3 replicas under 200 req/s (no client-side resend) drops requests without
// a preStop delay, and none over new connections with nap's. (nap with drain, expected
// clean on every connection, is held to it by the experiment, `make e2e-downtime`: in
// one run of this test it lost one request to a timeout, not yet explained.)
func TestRolloutDowntime(t *testing.T) {
	cs := client(t)
	for _, v := range []variant{noDelay, napBinary} {
		d := measure(t, cs, v, 1, 200)
		t.Log(d.row())
		d.check(t)
	}
}

// TestDowntimeExperiment is `make e2e-downtime`: every variant, NAP_DOWNTIME_ROLLOUTS
// restarts each (default 3), a Markdown table to NAP_DOWNTIME_OUT. It runs only when
// NAP_DOWNTIME_OUT is set: it is an experiment that takes minutes, not a check.
func TestDowntimeExperiment(t *testing.T) {
	out := os.Getenv("NAP_DOWNTIME_OUT")
	if out == "" {
		t.Skip("an experiment: run it with make e2e-downtime")
	}
	rollouts := 3
	if n, err := strconv.Atoi(os.Getenv("NAP_DOWNTIME_ROLLOUTS")); err == nil && n > 0 {
		rollouts = n
	}
	cs := client(t)
	var b strings.Builder
	b.WriteString("| variant | rollouts | requests | failed | failed new / reuse conns | longest outage |\n|---|---|---|---|---|---|\n")
	for _, v := range []variant{noDelay, napBinary, napNative, drainOnly, napDrain, viaWebhook} {
		if v.webhook {
			installController(t, cs)
		}
		d := measure(t, cs, v, rollouts, 200)
		t.Log(d.row())
		b.WriteString(d.row() + "\n")
		d.check(t)
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func intOrPort(p int) intstr.IntOrString { return intstr.FromInt32(int32(p)) }
