package controller

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/nap-k8s/nap/kube"
)

// The labels and annotation that drive the webhook.
const (
	// InjectLabel on a pod or its namespace opts in ("enabled") or out ("disabled").
	InjectLabel = "nap.dev/inject"
	// DelayAnnotation on a pod sets the delay, in nap's syntax; default the Injector's.
	DelayAnnotation = "nap.dev/delay"
)

var (
	admissions       = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nap_admissions_total", Help: "Pod admissions by result: injected, unchanged, skipped, error."}, []string{"result"})
	admissionSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "nap_admission_duration_seconds", Help: "Time to answer a Pod admission.",
		Buckets: []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1}})
)

func init() { metrics.Registry.MustRegister(admissions, admissionSeconds) }

// Injector is the mutating admission webhook for Pod CREATE: the same injection as
// `napctl inject`, on the pod's own JSON, answered as a JSON patch.
type Injector struct {
	// Options are napctl inject's; Delay is the default, DelayAnnotation overrides it.
	Options kube.InjectOptions
}

var _ admission.Handler = (*Injector)(nil)

// Handle answers one admission request. Errors never block a pod (the webhook's
// failurePolicy is Ignore too): the pod is admitted unchanged, with a warning.
func (i *Injector) Handle(_ context.Context, req admission.Request) admission.Response {
	start := time.Now()
	defer func() { admissionSeconds.Observe(time.Since(start).Seconds()) }()
	if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" || len(req.Object.Raw) == 0 {
		admissions.WithLabelValues("skipped").Inc()
		return admission.Allowed("not a Pod create")
	}
	// The request's object may come without its type; kube.Read needs it.
	doc := req.Object.Raw
	if !bytes.Contains(doc, []byte(`"kind":`)) {
		doc = append([]byte(`{"apiVersion":"v1","kind":"Pod",`), bytes.TrimPrefix(bytes.TrimSpace(doc), []byte("{"))...)
	}
	var meta struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}
	if objs, err := kube.Read("pod", doc); err == nil && len(objs) == 1 {
		objs[0].Decode(&meta, "metadata")
	}
	if meta.Labels[InjectLabel] == "disabled" { // the objectSelector keeps these away too
		admissions.WithLabelValues("skipped").Inc()
		return admission.Allowed("opted out")
	}
	opts := i.Options
	if d := strings.TrimSpace(meta.Annotations[DelayAnnotation]); d != "" {
		opts.Delay = d
	}
	plan, err := kube.NewPlan(opts)
	if err != nil {
		admissions.WithLabelValues("error").Inc()
		return admission.Allowed("").WithWarnings("nap: " + err.Error())
	}
	out, _, err := kube.Inject("pod", doc, plan)
	if err != nil {
		admissions.WithLabelValues("error").Inc()
		return admission.Allowed("").WithWarnings("nap: " + err.Error())
	}
	if bytes.Equal(out, doc) {
		admissions.WithLabelValues("unchanged").Inc()
		return admission.Allowed("nothing to add")
	}
	admissions.WithLabelValues("injected").Inc()
	return admission.PatchResponseFromRaw(doc, out)
}

// Handler returns the webhook as an http.Handler, for a webhook server's path.
func (i *Injector) Handler() http.Handler { return &admission.Webhook{Handler: i} }
