package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/go-logr/logr"
	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// The label that drives the webhook (a pod's wait.KindAnnotation and
// wait.DelayAnnotation choose its wait).
const (
	// InjectLabel on a pod or its namespace opts in ("enabled") or out ("disabled").
	InjectLabel = kube.InjectLabel
)

// Injector is the mutating admission webhook for Pod CREATE: the same injection as
// `napctl inject`, on the pod's own JSON, answered as a JSON patch.
type Injector struct {
	// Options are napctl inject's; the wait is each pod's (Waits.ForPod).
	Options inject.Options
	// Waits are the default waits; a pod's wait.KindAnnotation and wait.DelayAnnotation choose
	// over them.
	Waits wait.Defaults
	// Nodes, when set, lists the cluster's nodes (from an informer cache: never an API
	// call per admission), so that the native sleep goes only where every kubelet that
	// may run the pod has it. Unset or failing: the skew policy's oldest kubelet.
	Nodes func(context.Context) ([]kube.Node, error)
	// Recorder, when set, gets a Warning event on the namespace for a pod the webhook
	// could not read, and a Normal one for each pod the audit policy would change.
	Recorder record.EventRecorder

	// Scope, when set, makes this the policy webhook (PolicyWebhookPath): it answers for
	// pods that are not opted in explicitly, in namespaces under a scope that decides by
	// Services, and decides with scope.Decide from the namespace's labels and Services,
	// both read through NamespaceLabels and Services (informer caches: never an API call
	// per admission).
	Scope           scope.Scope
	NamespaceLabels func(context.Context, string) (map[string]string, error)
	Services        func(context.Context, string) ([]corev1.Service, error)

	// Mountable, when set, says why a namespace's nap ConfigMap must not be mounted (""
	// when it may: see Publisher.Mountable). A pod that would run nap from it gets the
	// native sleep instead, as long as nap's wait or longer, or, where its kubelets
	// have none, no delay; either way a warning and an event say why.
	Mountable func(ctx context.Context, namespace string) (string, error)

	// Calibration, when set, is the calibration kept in the cluster (CalibrationSource;
	// nil while there is none). With it and Services, each pod that does not set its own
	// delay gets the wait of the slowest path that reaches it (traffic.Need.Wait): the
	// paths of the Services that select it, and of the Ingresses and Gateway API routes
	// that name those (Fronts, a namespace's, from informer caches); the pod's
	// ReasonAnnotation says why. With Services alone, an adaptive wait watches requests
	// where a client that pools its connections reaches the pod (traffic.Path.Pools).
	Calibration func() *traffic.Calibration
	Fronts      func(ctx context.Context, namespace string) (kube.Frontends, error)
}

// deliveryFallbacks are the reasons --delivery auto fell back to the ConfigMap, each
// logged once per process.
var deliveryFallbacks sync.Map

// admissionPod is what the webhook reads of the object before injecting.
type admissionPod struct {
	Labels, Annotations map[string]string
	OwnerKinds          []string
	RestartPolicy       corev1.RestartPolicy
	// Containers holds the names of the pod's containers and init containers (with an
	// init container's restartPolicy): a mesh's proxy among them (kube.MeshNeed).
	Containers corev1.PodSpec
}

// The webhook's bounds on what a pod may cost it. A pod is decoded once, into values
// that inject reads (a tree of nodes): about 30 bytes of memory for each byte of JSON.
// The API server forwards objects of up to 3 MB before it refuses them at storage
// (etcd's limit, 1.5 MiB by default): a 2.8 MB pod held 218 MiB of heap, most of the
// controller's limit. So a pod over MaxPodBytes is admitted unchanged, with a warning
// (no real pod comes near it: the API caps a pod's annotations at 256 KiB), and the
// pods over bigPodBytes are read one at a time (bigPods).
const (
	MaxPodBytes = 1 << 20
	bigPodBytes = 64 << 10
)

var bigPods = make(chan struct{}, 1)

var _ admission.Handler = (*Injector)(nil)

// Handle answers one admission request. Errors never block a pod (the webhook's
// failurePolicy is Ignore too): the pod is admitted unchanged, with a warning. It
// records what answer decided: the metrics, the event, the log.
func (i *Injector) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	a := i.answer(ctx, req)
	admissions.WithLabelValues(a.result).Inc()
	if a.result == "audit" {
		auditWouldInject.WithLabelValues(req.Namespace).Inc()
	}
	if a.event != nil && i.Recorder != nil && req.Namespace != "" {
		i.Recorder.Event(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: req.Namespace}}, a.event.kind, a.event.reason, a.event.message)
	}
	lg := logf.FromContext(ctx)
	for _, l := range a.logs {
		l(lg)
	}
	admissionSeconds.Observe(time.Since(start).Seconds())
	return a.Response
}

// answered is the webhook's answer to one request, and what Handle records of it.
type answered struct {
	admission.Response
	result string   // nap_admissions_total's: injected, unchanged, skipped, audit, error, not-mounted
	event  *nsEvent // on the pod's namespace
	logs   []func(logr.Logger)
}

type nsEvent struct{ kind, reason, message string }

func result(result string, r admission.Response) answered {
	return answered{Response: r, result: result}
}

// failed is an error's answer: the pod admitted unchanged, with a warning.
func failed(err error) answered {
	return result("error", admission.Allowed("").WithWarnings("nap: "+err.Error()))
}

// answer decides for req, with no side effect (no metric, event or log: Handle records
// them), so that the Reporter can ask it about a pod that runs (Refusal).
func (i *Injector) answer(ctx context.Context, req admission.Request) answered {
	if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" || len(req.Object.Raw) == 0 {
		return result("skipped", admission.Allowed("not a Pod create"))
	}
	if n := len(req.Object.Raw); n > MaxPodBytes {
		return undecodable(req, fmt.Errorf("it is %d bytes, more than the webhook reads (%d)", n, MaxPodBytes))
	}
	if len(req.Object.Raw) > bigPodBytes {
		select {
		case bigPods <- struct{}{}:
			defer func() { <-bigPods }()
		case <-ctx.Done():
			return undecodable(req, fmt.Errorf("it waited for another large pod until the admission's time ran out: %w", ctx.Err()))
		}
	}
	v, err := decodePod(req.Object.Raw)
	if err != nil {
		return undecodable(req, err)
	}
	pod, err := readPod(v)
	if err != nil {
		return undecodable(req, err)
	}
	if pod.Labels[InjectLabel] == scope.Disabled { // the objectSelector keeps these away too
		return result("skipped", admission.Allowed("opted out"))
	}
	// The explicit webhook's pods were chosen by its selectors; the policy webhook's
	// are decided here.
	var audit string // under the audit scope: why the pod would get the delay
	if i.Scope != "" {
		d, err := i.decide(ctx, req.Namespace, &pod)
		if err != nil {
			return failed(err)
		}
		if d.Audit {
			audit = d.Why
		} else if !d.Inject {
			return result("skipped", admission.Allowed(d.Why))
		}
	}
	w, err := i.Waits.ForPod(pod.Annotations)
	if err != nil {
		return failed(err)
	}
	var logs []func(logr.Logger)
	w, reason, err := i.routed(ctx, req.Namespace, &pod, w)
	if err != nil { // the fleet's wait, as without a calibration
		reason = fmt.Sprintf("holds %s, the fleet's: the paths that reach the pod could not be read (%v)", w.DelayArg(), err)
		logs = append(logs, func(lg logr.Logger) {
			lg.Info("the paths that reach a pod could not be read; it gets the fleet's wait", "namespace", req.Namespace, "error", err.Error())
		})
	}
	opts := i.Options
	opts.Wait = w
	if i.Nodes != nil && opts.Kube != nil {
		if nodes, err := i.Nodes(ctx); err == nil {
			opts.Nodes = nodes
		} else {
			logs = append(logs, func(lg logr.Logger) {
				lg.Info("nodes unknown; assuming the oldest kubelet the skew policy allows", "error", err.Error())
			})
		}
	}
	a := i.plan(ctx, req, v, opts, audit, reason)
	a.logs = append(logs, a.logs...)
	if a.result == "injected" {
		// The delay nap adds holds nothing while the mesh's proxy stops first: said to
		// whoever created the pod, as lint says it (mesh-proxy-exits-first).
		if need, ok := kube.MeshNeed(pod.Annotations, pod.Labels, &pod.Containers, w.Delay); ok {
			a.Response = a.Response.WithWarnings(fmt.Sprintf("nap: pod %s: %s: %s", podName(req), need.Why, need.Fix))
		}
	}
	return a
}

// routed is the wait of a pod by the paths that reach it (traffic.Need.Wait), with the
// calibration kept in the cluster, and why (for ReasonAnnotation); w is the fleet's, of
// the kind the pod chose. A pod that sets its own delay (wait.DelayAnnotation) keeps w. While
// there is no calibration, a pod keeps w ("" reason) but for the request signal, which
// an adaptive wait gets where a client that pools its connections reaches the pod. An
// error reading the caches leaves w.
func (i *Injector) routed(ctx context.Context, ns string, pod *admissionPod, w wait.Wait) (wait.Wait, string, error) {
	if _, own := wait.OwnDelay(pod.Annotations); i.Services == nil || own {
		return w, "", nil
	}
	var c *traffic.Calibration
	if i.Calibration != nil {
		c = i.Calibration()
	}
	if c == nil && (!w.IsAdaptive() || w.Requests > 0) { // nothing the routes change: no read
		return w, "", nil
	}
	all, err := i.Services(ctx, ns)
	if err != nil {
		return w, "", fmt.Errorf("the Services of %s: %w", ns, err)
	}
	svcs := scope.Selecting(all, pod.Labels)
	var fronts kube.Frontends
	if i.Fronts != nil && len(svcs) > 0 {
		if fronts, err = i.Fronts(ctx, ns); err != nil {
			return w, "", fmt.Errorf("the Ingresses and routes of %s: %w", ns, err)
		}
	}
	return traffic.PodWait(c, w, svcs, fronts.Of)
}

// withReason adds to ops the pod's ReasonAnnotation (reason; none when ""), on the
// pod v as decoded.
func withReason(ops []inject.Op, v map[string]any, reason string) []inject.Op {
	if reason == "" || len(ops) == 0 {
		return ops
	}
	meta, _ := v["metadata"].(map[string]any) // readPod checked it is an object or absent
	if meta == nil {
		return append(ops, inject.Op{Op: "add", Path: "/metadata", Value: map[string]any{"annotations": map[string]string{wait.ReasonAnnotation: reason}}})
	}
	if a, _ := meta["annotations"].(map[string]any); a == nil {
		return append(ops, inject.Op{Op: "add", Path: "/metadata/annotations", Value: map[string]string{wait.ReasonAnnotation: reason}})
	}
	return append(ops, inject.Op{Op: "add", Path: "/metadata/annotations/" + strings.ReplaceAll(strings.ReplaceAll(wait.ReasonAnnotation, "~", "~0"), "/", "~1"), Value: reason})
}

// plan is answer's part once the pod is read and its wait known.
func (i *Injector) plan(ctx context.Context, req admission.Request, v map[string]any, opts inject.Options, audit, reason string) answered {
	plan, err := inject.NewPlan(opts)
	if err != nil {
		return failed(err)
	}
	if err := ctx.Err(); err != nil { // the API server has stopped waiting
		return failed(err)
	}
	o, err := manifest.FromValue("pod", v)
	if err != nil {
		return undecodable(req, err)
	}
	ops, notes, err := inject.Patch(o, plan)
	if err != nil {
		return failed(err)
	}
	if len(ops) == 0 { // why, in the answer's message: not a warning to every pod with its own hook
		why := "nothing to add"
		for _, n := range notes {
			why += "; " + n.Msg
		}
		return result("unchanged", admission.Allowed(why))
	}
	if i.Mountable != nil && len(plan.ConfigMapNamespaces()) > 0 {
		why, err := i.Mountable(ctx, req.Namespace)
		if err != nil {
			why = "its nap ConfigMap could not be read: " + err.Error()
		}
		if why != "" {
			return notMountable(req, v, opts, why, audit, reason)
		}
	}
	if audit != "" {
		msg := fmt.Sprintf("nap (audit policy): pod %s would get %s (%s); admitted unchanged", podName(req), describe(opts.Wait), audit)
		a := result("audit", admission.Allowed("audit").WithWarnings(msg))
		a.event = &nsEvent{corev1.EventTypeNormal, "NapAuditWouldInject", msg}
		return a
	}
	a := result("injected", patched(withReason(ops, v, reason)))
	for _, n := range notes { // what the pod's creator should know of the hook it got
		if _, w, ok := strings.Cut(n.Msg, ": warning: "); ok {
			a.Response = a.Response.WithWarnings("nap: " + w)
		}
	}
	if plan.DeliveryWhy != "" { // --delivery auto fell back: said to whoever created the pod, and logged once
		msg := "nap: the nap ConfigMap, not the image volume: " + plan.DeliveryWhy
		a.Response = a.Response.WithWarnings(msg)
		a.logs = append(a.logs, func(lg logr.Logger) {
			if _, said := deliveryFallbacks.LoadOrStore(msg, true); !said {
				lg.Info("delivering nap from the ConfigMap", "why", plan.DeliveryWhy)
			}
		})
	}
	return a
}

// notMountable answers for a pod (v, as decoded) that would run nap from a ConfigMap
// that must not be mounted (why): the native sleep of opts' wait (Wait.Native) where every kubelet that
// may run the pod has it, else the pod unchanged; a warning and a Warning event
// (NapBinaryNotMounted) on the namespace either way, and the result "not-mounted".
func notMountable(req admission.Request, v map[string]any, opts inject.Options, why, audit, reason string) answered {
	opts.Wait, opts.Mode = opts.Wait.Native(), inject.ModeNative
	var ops []inject.Op
	plan, err := inject.NewPlan(opts)
	if err == nil {
		// A new tree of the decoded pod: the first plan's edits were to its own.
		var o *manifest.Object
		if o, err = manifest.FromValue("pod", v); err == nil {
			ops, _, err = inject.Patch(o, plan)
		}
	}
	msg := fmt.Sprintf("nap: pod %s: not nap's binary, as %s; ", podName(req), why)
	switch {
	case err != nil:
		msg += "and no native sleep (" + err.Error() + "): admitted without a preStop delay"
	case len(ops) == 0:
		msg += "admitted unchanged"
	case audit != "":
		msg += fmt.Sprintf("it would get the native sleep of %s (audit policy: %s); admitted unchanged", opts.Wait.DelayArg(), audit)
		ops = nil
	default:
		msg += fmt.Sprintf("the native sleep of %s instead", opts.Wait.DelayArg())
	}
	a := result("not-mounted", admission.Allowed("").WithWarnings(msg))
	if len(ops) > 0 {
		a.Response = patched(withReason(ops, v, reason)).WithWarnings(msg)
	}
	a.event = &nsEvent{corev1.EventTypeWarning, "NapBinaryNotMounted", msg}
	injected := len(ops) > 0
	a.logs = []func(logr.Logger){func(lg logr.Logger) {
		lg.Info("did not mount a namespace's nap ConfigMap", "namespace", req.Namespace, "why", why, "injected", injected)
	}}
	return a
}

// patched is the response that makes inject's edits.
func patched(ops []inject.Op) admission.Response {
	patches := make([]jsonpatch.JsonPatchOperation, len(ops))
	for i, op := range ops {
		patches[i] = jsonpatch.NewOperation(op.Op, op.Path, op.Value)
	}
	return admission.Patched("", patches...)
}

// describe names the wait a pod would get, for the audit policy's words.
func describe(w wait.Wait) string {
	if w.IsAdaptive() {
		return fmt.Sprintf("an adaptive preStop wait of %v to %v", w.Min, w.Delay)
	}
	return fmt.Sprintf("a %s preStop delay", w.DelayArg())
}

// decodePod decodes the request's pod once, into the values inject.Patch reads
// (manifest.FromValue: not parsed as YAML text, and no diff of two documents
// afterwards: the patch is the edits), its type filled in when the request's object
// comes without one.
func decodePod(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	// One object and nothing after it: a patch is made for the bytes as a whole.
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value, or bytes that are not JSON, after the object")
	}
	if v == nil {
		return nil, errors.New("the object is null")
	}
	if v["kind"] == nil {
		v["kind"], v["apiVersion"] = "Pod", "v1"
	}
	return v, nil
}

// readPod reads what the webhook decides by from the decoded pod, each field of the
// type the API gives it.
func readPod(v map[string]any) (admissionPod, error) {
	var p admissionPod
	meta, err := field[map[string]any](v, "metadata")
	if err != nil {
		return p, err
	}
	if p.Labels, err = stringMap(meta, "labels"); err != nil {
		return p, err
	}
	if p.Annotations, err = stringMap(meta, "annotations"); err != nil {
		return p, err
	}
	refs, err := field[[]any](meta, "ownerReferences")
	if err != nil {
		return p, fmt.Errorf("metadata.%w", err)
	}
	for i, r := range refs {
		ref, ok := r.(map[string]any)
		if !ok {
			return p, fmt.Errorf("metadata.ownerReferences[%d]: not an object", i)
		}
		kind, err := field[string](ref, "kind")
		if err != nil {
			return p, fmt.Errorf("metadata.ownerReferences[%d].%w", i, err)
		}
		p.OwnerKinds = append(p.OwnerKinds, kind)
	}
	spec, err := field[map[string]any](v, "spec")
	if err != nil {
		return p, err
	}
	rp, err := field[string](spec, "restartPolicy")
	if err != nil {
		return p, fmt.Errorf("spec.%w", err)
	}
	p.RestartPolicy = corev1.RestartPolicy(rp)
	// The containers' names, for a mesh's proxy: what is not of the API's types is left
	// to inject, which says so.
	for _, f := range []struct {
		name string
		into *[]corev1.Container
	}{{"containers", &p.Containers.Containers}, {"initContainers", &p.Containers.InitContainers}} {
		list, _ := spec[f.name].([]any)
		for _, c := range list {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			ct := corev1.Container{Name: name}
			if rp, _ := m["restartPolicy"].(string); rp != "" {
				crp := corev1.ContainerRestartPolicy(rp)
				ct.RestartPolicy = &crp
			}
			*f.into = append(*f.into, ct)
		}
	}
	return p, nil
}

// field is m[key] as a T: its zero value when absent or null, an error naming key when
// of another type.
func field[T any](m map[string]any, key string) (T, error) {
	var zero T
	e, ok := m[key]
	if !ok || e == nil {
		return zero, nil
	}
	t, ok := e.(T)
	if !ok {
		return zero, fmt.Errorf("%s: a %T, not a %T", key, e, zero)
	}
	return t, nil
}

// stringMap is metadata's field key as a map of strings (labels, annotations).
func stringMap(meta map[string]any, key string) (map[string]string, error) {
	raw, err := field[map[string]any](meta, key)
	if err != nil {
		return nil, fmt.Errorf("metadata.%w", err)
	}
	if raw == nil {
		return nil, nil
	}
	out := make(map[string]string, len(raw))
	for k, e := range raw {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("metadata.%s[%q]: a %T, not a string", key, k, e)
		}
		out[k] = s
	}
	return out, nil
}

// decide is the policy webhook's scope.Decide for a pod, from the caches.
func (i *Injector) decide(ctx context.Context, ns string, pod *admissionPod) (scope.Decision, error) {
	in := scope.Input{Installed: i.Scope, Pod: scope.Pod{Labels: pod.Labels, RestartPolicy: pod.RestartPolicy, OwnerKinds: pod.OwnerKinds}}
	if i.NamespaceLabels != nil {
		var err error
		if in.NamespaceLabels, err = i.NamespaceLabels(ctx, ns); err != nil {
			return scope.Decision{}, fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	in.Selecting = func() (string, bool, error) {
		if i.Services == nil {
			return "", false, nil
		}
		svcs, err := i.Services(ctx, ns)
		if err != nil {
			return "", false, fmt.Errorf("%s: %w", ns, err)
		}
		name, ok := scope.SelectingService(svcs, pod.Labels)
		return name, ok, nil
	}
	return scope.Decide(in)
}

// podName names the pod of req for people: its name, or that it has none yet.
func podName(req admission.Request) string {
	if req.Name != "" {
		return req.Namespace + "/" + req.Name
	}
	return "in " + req.Namespace + " (its name not yet generated)"
}

// undecodable admits a pod the webhook could not read, unchanged, and says so: in the
// response's warnings, the error metric, the log and an event on the namespace.
func undecodable(req admission.Request, err error) answered {
	msg := fmt.Sprintf("nap: pod %s/%s admitted without a preStop delay: its object could not be read: %v", req.Namespace, req.Name, err)
	a := result("error", admission.Allowed("").WithWarnings(msg))
	a.event = &nsEvent{corev1.EventTypeWarning, "NapUndecodablePod", msg}
	a.logs = []func(logr.Logger){func(lg logr.Logger) {
		lg.Error(err, "admitted a pod the webhook could not read, unchanged", "namespace", req.Namespace, "name", req.Name, "uid", req.UID)
	}}
	return a
}

// Refusal says why the webhook would leave pod, which runs without nap's hook,
// unchanged if it were created now ("" when it would give it a delay): what its
// warnings say (a bad annotation, the pod's own nap volume, an architecture without a
// binary, a ConfigMap it may not mount where no native sleep will do), or why not.
// It asks answer, so it records nothing.
func (i *Injector) Refusal(ctx context.Context, pod *corev1.Pod) (string, error) {
	raw, err := json.Marshal(pod)
	if err != nil {
		return "", err
	}
	a := i.answer(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Namespace: pod.Namespace, Name: pod.Name,
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Object: runtime.RawExtension{Raw: raw}}})
	if len(a.Patches) > 0 {
		return "", nil
	}
	if len(a.Warnings) > 0 {
		return strings.TrimPrefix(strings.Join(a.Warnings, "; "), "nap: "), nil
	}
	return "the webhook would not change it: " + a.Result.Message, nil
}

// RefusalOf is the Reporter's Refusal: the pod read whole through reader (the cache
// holds summaries), then Injector.Refusal. A pod gone meanwhile is not refused.
func RefusalOf(reader client.Reader, i *Injector) func(ctx context.Context, namespace, name string) (string, error) {
	return func(ctx context.Context, namespace, name string) (string, error) {
		var p corev1.Pod
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
			return "", client.IgnoreNotFound(err)
		}
		return i.Refusal(ctx, &p)
	}
}

// Handler returns the webhook as an http.Handler, for a webhook server's path.
func (i *Injector) Handler() http.Handler { return &admission.Webhook{Handler: i} }
