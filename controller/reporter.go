package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/lint"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/policyreport/writer"
	"github.com/nap-k8s/nap/scope"
)

// Reason is why a workload's pods may drop requests when they terminate, as the Reporter
// finds it on live pods.
type Reason string

const (
	// NotInjected: the webhook should have given the pod a delay (opted in, or the
	// default policy and a Service selects it) and the pod has none: it was admitted
	// while the webhook was down, unreachable or not yet trusted (failurePolicy Ignore).
	NotInjected Reason = "not-injected"
	// DelayExceedsGrace: the grace period does not cover the preStop delay and a drain
	// (lint's grace-period-too-short and native-sleep-exceeds-grace): the kubelet kills
	// the container mid-sleep or mid-drain.
	DelayExceedsGrace Reason = "delay-exceeds-grace"
	// NativeSleepUnsupported: the native sleep action on a node whose kubelet does not
	// have it (before 1.30; lint's native-sleep-unsupported): the hook fails and the
	// container stops at once.
	NativeSleepUnsupported Reason = "native-sleep-unsupported"
	// Refused: the pod has no delay because the webhook leaves it unchanged on purpose
	// (a bad nap.dev/delay or nap.dev/wait, the pod's own nap volume, an architecture
	// without a binary...; Injector.Refusal says why): rolling it would not help, and
	// it is never rolled.
	Refused Reason = "refused"
	// FailedPreStopHook: the kubelet reported that a pod's preStop hook failed.
	FailedPreStopHook Reason = "failed-prestop-hook"
)

// eventReasons are the Warning events the Reporter puts on workloads.
var eventReasons = map[Reason]string{
	NotInjected:            "NapNotInjected",
	Refused:                "NapRefused",
	DelayExceedsGrace:      "NapDelayExceedsGrace",
	NativeSleepUnsupported: "NapNativeSleepUnsupported",
	FailedPreStopHook:      "NapFailedPreStopHook",
}

// WorkloadRef names the controller of pods (hook.WorkloadOf).
type WorkloadRef = hook.Workload

// reasonOfCheck are lint's termination checks the Reporter runs on live pods, and the
// reason each finding is reported under.
var reasonOfCheck = map[string]Reason{
	lint.GracePeriodTooShort:     DelayExceedsGrace,
	lint.NativeSleepExceedsGrace: DelayExceedsGrace,
	lint.NativeSleepUnsupported:  NativeSleepUnsupported,
}

// reporterChecks are reasonOfCheck's IDs, listed once (the scan runs them on every pod).
var reporterChecks = slices.Sorted(maps.Keys(reasonOfCheck))

// Finding is one workload's problem of one reason.
type Finding struct {
	Workload WorkloadRef
	Reason   Reason
	Pods     []string // the pods it was found on (for FailedPreStopHook: named in events)
	Cause    string   // FailedPreStopHook: what went wrong (hook.CauseLabel)
	Message  string
}

// Reporter finds, at start and then every Interval, what makes nap's protection fail
// silently, from the manager's caches (no API call per pod):
//
//   - pods the webhook should have injected and did not (NotInjected), apart from
//     those it leaves unchanged on purpose (Refused);
//   - hooks that cannot do their job (DelayExceedsGrace, NativeSleepUnsupported);
//   - FailedPreStopHook events, per workload and cause.
//
// It reports each as a Warning event on the owning workload (once while it lasts, again
// when more pods show it) and as the metrics nap_pods_unprotected{namespace,reason} and
// nap_prestop_hook_failures{namespace,workload,cause}, which stay until the workload is
// rolled (the pods are replaced) or the events expire. With Roll, it evicts one
// not-injected pod every RollInterval through the Eviction API, so that
// PodDisruptionBudgets hold and the pod's controller recreates it through the webhook.
// At rest (nothing new found) it writes nothing to the API.
type Reporter struct {
	Client   client.Client // the manager's: cached reads; evictions
	Recorder record.EventRecorder
	// Kube is the API server's version, for lint's native-sleep check; zero: the newest
	// kubelet's.
	Kube kube.Version
	// Scope is the installed scope (scope.Label on a namespace overrides it).
	Scope scope.Scope
	// Exclude are the namespaces the webhook never sees: its own and kube-system.
	Exclude  map[string]bool
	Interval time.Duration // default 10s

	Roll         bool
	RollInterval time.Duration // default 1m

	// Refusal, when set, says why the webhook would leave a pod without a delay
	// unchanged if it were created now ("" when it would give it one): such a pod is
	// Refused, not NotInjected, and never rolled. See RefusalOf.
	Refusal func(ctx context.Context, namespace, name string) (string, error)

	// Reports, when set, keeps a policy report per namespace of what is found
	// (policyreport: OpenReports or the wg-policy PolicyReport).
	Reports *writer.Writer

	Log logr.Logger

	// Informers, when set (the manager's cache), make the scans incremental: the
	// Reporter is told of every change to pods, Services, namespaces and nodes, and a
	// pass scans again only the namespaces where something changed since the last one
	// (all of them when a node's kubelet version changed). Unset, every pass scans
	// every pod.
	Informers cache.Informers

	// Before, when set, is waited for before the Reporter starts its informers: the
	// manager has it wait until every namespace holds the ConfigMap (Publisher.Published),
	// so that on a cold start the pod list, the largest the controller reads, does not
	// compete with publishing on the API server and the controller's CPU. An error
	// is logged and the Reporter starts anyway.
	Before func(ctx context.Context) error

	// AfterFirstPass, when set, is called once after the first pass: the caches are
	// full and the one full scan is done.
	AfterFirstPass func()

	reported map[findingKey]int // how many pods each finding had when last evented
	lastRoll time.Time

	mu       sync.Mutex
	dirty    map[string]bool // namespaces changed since the last scan
	allDirty bool
	scanned  map[string]*nsScan // each namespace's last scan (Scan's own)
	base     *merged            // scanned taken together
	// Told of by Watch: events changed since the last scan; last is that scan's result,
	// the next one's too when nothing was told.
	watching, eventsDirty bool
	last                  *scanResult
	pods                  toolscache.Indexer // the pod informer's store, once asked for
	rescans               int                // namespaces the last Scan read the pods of
}

type findingKey struct {
	workload WorkloadRef
	reason   Reason
	cause    string
}

// NeedLeaderElection: one replica reports and rolls.
func (r *Reporter) NeedLeaderElection() bool { return true }

// Start runs a pass at once, then every Interval, until ctx ends.
func (r *Reporter) Start(ctx context.Context) error {
	interval := r.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	if r.Before != nil {
		if err := r.Before(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.Log.Error(err, "starting the reports anyway")
		}
	}
	if r.Informers != nil {
		if err := r.Watch(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while the informers filled: not an error
			}
			return err
		}
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for first := true; ; first = false {
		if err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			r.Log.Error(err, "report pass")
		}
		if first && r.AfterFirstPass != nil {
			r.AfterFirstPass()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Pass finds, reports and (with Roll) rolls once.
func (r *Reporter) Pass(ctx context.Context) error {
	found, notInjected, err := r.Scan(ctx)
	if err != nil {
		return err
	}
	r.report(found)
	if r.Reports != nil {
		if err := r.Reports.Sync(ctx, Results(found)); err != nil {
			r.Log.Error(err, "policy reports")
		}
	}
	if r.Roll && len(notInjected) > 0 {
		return r.roll(ctx, notInjected)
	}
	return nil
}

// Scan returns what is wrong now, and the pods that were not injected. With Informers
// it rescans only the namespaces changed since the last scan (see Informers).
func (r *Reporter) Scan(ctx context.Context) (found []Finding, notInjected []corev1.Pod, err error) {
	r.mu.Lock()
	full := r.Informers == nil || r.scanned == nil || r.allDirty
	dirty, eventsDirty, last := r.dirty, r.eventsDirty, r.last
	r.dirty, r.allDirty, r.eventsDirty = map[string]bool{}, false, false
	told := r.watching
	r.mu.Unlock()
	r.rescans = 0
	if !full && told && len(dirty) == 0 && !eventsDirty && last != nil {
		// Nothing told since the last scan: what it found stands.
		return slices.Clone(last.found), slices.Clone(last.notInjected), nil
	}
	defer func() {
		if err != nil { // what was taken as changed is scanned again
			r.mu.Lock()
			r.allDirty, r.eventsDirty = true, true
			r.mu.Unlock()
		}
	}()
	// Read-only, so the cache's objects themselves, not deep copies.
	ro := client.UnsafeDisableDeepCopy
	var env *scanEnv // the nodes, read once a pass and only when a namespace is scanned
	rescan := func(ns *corev1.Namespace) error {
		if env == nil {
			e, err := r.env(ctx)
			if err != nil {
				return err
			}
			env = e
		}
		s, err := r.scanNamespace(ctx, ns, env)
		if err != nil {
			return err
		}
		r.base.forget(r.scanned[ns.Name])
		r.base.add(s)
		r.scanned[ns.Name] = s
		r.rescans++
		return nil
	}
	if full {
		r.scanned, r.base = map[string]*nsScan{}, newMerged()
		var nsList corev1.NamespaceList
		if err := r.Client.List(ctx, &nsList, ro); err != nil {
			return nil, nil, err
		}
		for i := range nsList.Items {
			if err := rescan(&nsList.Items[i]); err != nil {
				return nil, nil, err
			}
		}
	} else {
		// Only the namespaces told of: at rest a pass reads nothing of the namespaces,
		// and what they showed is kept merged.
		for _, name := range slices.Sorted(maps.Keys(dirty)) {
			var ns corev1.Namespace
			err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &ns, ro)
			switch {
			case apierrors.IsNotFound(err):
				r.base.forget(r.scanned[name])
				delete(r.scanned, name)
			case err != nil:
				return nil, nil, err
			default:
				if err := rescan(&ns); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.base.missed)) {
		notInjected = append(notInjected, r.scanned[name].notInjected...)
	}

	// The pods' findings, then the events' on copies of them.
	byKey := make(map[findingKey]*Finding, len(r.base.findings))
	for k, f := range r.base.findings {
		c := *f
		c.Pods = slices.Clone(f.Pods)
		byKey[k] = &c
	}
	add := func(w WorkloadRef, reason Reason, cause, pod, msg string) {
		addFinding(byKey, findingKey{workload: w, reason: reason, cause: cause}, pod, msg)
	}
	// What the workload's pods' hooks run, from its namespace's scan.
	hookKind := func(w WorkloadRef) hook.Kind {
		if s := r.scanned[w.Namespace]; s != nil {
			return s.hookKinds[w]
		}
		return hook.None
	}

	var events corev1.EventList
	if err := r.Client.List(ctx, &events, ro); err != nil {
		return nil, nil, err
	}
	for _, e := range events.Items {
		if e.Reason != "FailedPreStopHook" || e.InvolvedObject.Kind != "Pod" {
			continue
		}
		w := hook.WorkloadOfName(e.InvolvedObject.Namespace, e.InvolvedObject.Name)
		if p, err := r.pod(ctx, e.InvolvedObject.Namespace, e.InvolvedObject.Name); err != nil {
			return nil, nil, err
		} else if p != nil {
			w = hook.WorkloadOf(p) // the pod still runs: its owner, not a guess from its name
		}
		// The kubelet's own event says nothing more: then the cause is what the hook
		// runs, from a live pod.
		cause, why := hook.CauseLabel(e.Message, hookKind(w)), hook.Cause(e.Message)
		if hook.Bare(e.Message) {
			why = "the kubelet gives no reason"
			if k := hookKind(w); k != hook.None {
				why += "; the workload's hook is of kind " + string(k)
			}
		}
		add(w, FailedPreStopHook, cause, e.InvolvedObject.Name, "preStop hook failed ("+cause+"): "+why)
	}

	// Sorted by workload, reason and cause as one string, each made once.
	type keyed struct {
		key string
		f   Finding
	}
	ks := make([]keyed, 0, len(byKey))
	for _, f := range byKey {
		slices.Sort(f.Pods)
		ks = append(ks, keyed{f.Workload.String() + string(f.Reason) + f.Cause, *f})
	}
	slices.SortFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	out := make([]Finding, len(ks))
	for i := range ks {
		out[i] = ks[i].f
	}
	r.mu.Lock()
	r.last = &scanResult{slices.Clone(out), slices.Clone(notInjected)}
	r.mu.Unlock()
	return out, notInjected, nil
}

// scanResult is what a scan returned.
type scanResult struct {
	found       []Finding
	notInjected []corev1.Pod
}

// merged is the namespaces' scans taken together, kept as they change: their findings
// by workload, reason and cause, and the namespaces with pods not injected.
type merged struct {
	findings map[findingKey]*Finding
	missed   map[string]bool
}

func newMerged() *merged {
	return &merged{findings: map[findingKey]*Finding{}, missed: map[string]bool{}}
}

// add takes in a namespace's scan.
func (m *merged) add(s *nsScan) {
	for _, f := range s.finds {
		addFinding(m.findings, findingKey{workload: f.workload, reason: f.reason}, f.pod, f.message)
	}
	if len(s.notInjected) > 0 {
		m.missed[s.namespace] = true
	}
}

// forget takes out a namespace's scan (nil: none): a workload is of one namespace, so
// its findings are that scan's alone.
func (m *merged) forget(s *nsScan) {
	if s == nil {
		return
	}
	for _, f := range s.finds {
		delete(m.findings, findingKey{workload: f.workload, reason: f.reason})
	}
	if len(s.notInjected) > 0 {
		delete(m.missed, s.namespace)
	}
}

// addFinding adds pod (if any) to the finding of key, made with msg if new.
func addFinding(byKey map[findingKey]*Finding, k findingKey, pod, msg string) {
	f := byKey[k]
	if f == nil {
		f = &Finding{Workload: k.workload, Reason: k.reason, Cause: k.cause, Message: msg}
		byKey[k] = f
	}
	if pod != "" && !slices.Contains(f.Pods, pod) {
		f.Pods = append(f.Pods, pod)
	}
}

// scanEnv is what a pass reads once for every namespace it scans: the nodes' kubelets.
type scanEnv struct {
	nodes     map[string]kube.Node
	apiserver kube.Version
}

func (r *Reporter) env(ctx context.Context) (*scanEnv, error) {
	var nodeList corev1.NodeList
	if err := r.Client.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	e := &scanEnv{nodes: make(map[string]kube.Node, len(nodeList.Items)), apiserver: r.Kube} // unknown: no older than the newest kubelet
	for i := range nodeList.Items {
		if n, err := kube.NodeOf(&nodeList.Items[i]); err == nil {
			e.nodes[n.Name] = n
			if r.Kube == (kube.Version{}) && e.apiserver.Less(n.Kubelet) {
				e.apiserver = n.Kubelet
			}
		}
	}
	return e, nil
}

// podsIn returns a namespace's pods: from the informer's namespace index (the cache
// holds summaries, see podSummary) with Informers, else listed from Client.
func (r *Reporter) podsIn(ctx context.Context, ns string) ([]*podSummary, error) {
	if r.Informers == nil {
		var list corev1.PodList
		if err := r.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out := make([]*podSummary, len(list.Items))
		for i := range list.Items {
			out[i] = summaryOf(&list.Items[i])
		}
		return out, nil
	}
	idx, err := r.podIndex(ctx)
	if err != nil {
		return nil, err
	}
	items, err := idx.ByIndex(toolscache.NamespaceIndex, ns)
	if err != nil {
		return nil, err
	}
	out := make([]*podSummary, 0, len(items))
	for _, o := range items {
		if s := asSummary(o); s != nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// pod returns a pod as the Reporter reads it, or nil when it is gone.
func (r *Reporter) pod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	if r.Informers == nil {
		var p corev1.Pod
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return &p, nil
	}
	idx, err := r.podIndex(ctx)
	if err != nil {
		return nil, err
	}
	o, ok, err := idx.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil, err
	}
	s := asSummary(o)
	if s == nil {
		return nil, nil
	}
	var p corev1.Pod
	s.fill(&p)
	return &p, nil
}

// asSummary is a cached pod as a summary: the cache's own, or made from a full pod
// when the cache was set up without CacheOptions' transform.
func asSummary(o any) *podSummary {
	switch o := o.(type) {
	case *podSummary:
		return o
	case *corev1.Pod:
		return summaryOf(o)
	}
	return nil
}

// podIndex is the pod informer's store, indexed by namespace.
func (r *Reporter) podIndex(ctx context.Context) (toolscache.Indexer, error) {
	r.mu.Lock()
	idx := r.pods
	r.mu.Unlock()
	if idx != nil {
		return idx, nil
	}
	inf, err := r.Informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	i, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the pod informer (%T) has no indexer", inf)
	}
	r.mu.Lock()
	r.pods = i.GetIndexer()
	r.mu.Unlock()
	return i.GetIndexer(), nil
}

// nsScan is what one namespace's pods showed at its last scan.
type nsScan struct {
	namespace   string
	finds       []podFinding
	notInjected []corev1.Pod
	hookKinds   map[WorkloadRef]hook.Kind
}

type podFinding struct {
	workload     WorkloadRef
	reason       Reason
	pod, message string
}

// scanNamespace judges one namespace's pods.
func (r *Reporter) scanNamespace(ctx context.Context, ns *corev1.Namespace, env *scanEnv) (*nsScan, error) {
	ro := client.UnsafeDisableDeepCopy
	pods, err := r.podsIn(ctx, ns.Name)
	if err != nil {
		return nil, err
	}
	out := &nsScan{namespace: ns.Name}
	var svcs []corev1.Service
	listed := false
	selecting := func(p *corev1.Pod) (string, bool, error) {
		if !listed {
			var list corev1.ServiceList
			if err := r.Client.List(ctx, &list, client.InNamespace(ns.Name), ro); err != nil {
				return "", false, err
			}
			svcs, listed = list.Items, true
		}
		name, found := scope.SelectingService(svcs, p.Labels)
		return name, found, nil
	}
	var pod corev1.Pod // each summary in turn: see podSummary.fill
	p := &pod
	for _, sum := range pods {
		sum.fill(p)
		w := hook.WorkloadOf(p)
		h, _ := hook.First(p.Spec)
		if h.Kind != hook.None {
			if out.hookKinds == nil {
				out.hookKinds = map[WorkloadRef]hook.Kind{}
			}
			out.hookKinds[w] = h.Kind
		}
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if h.Kind != hook.None {
			// lint's termination checks, on the pod as it runs: its node's kubelet.
			opts := lint.Options{KubeVersion: &env.apiserver}
			if n, ok := env.nodes[p.Spec.NodeName]; ok {
				opts.Nodes = []kube.Node{n}
			}
			for _, f := range lint.CheckPod(p.Namespace, p.Name, p.Spec, opts, reporterChecks...) {
				out.finds = append(out.finds, podFinding{w, reasonOfCheck[f.ID], p.Name, f.Message})
			}
			continue
		}
		in := scope.Input{Installed: r.Scope, Excluded: r.Exclude[p.Namespace], NamespaceLabels: ns.Labels,
			Pod:       scope.Pod{Labels: p.Labels, RestartPolicy: p.Spec.RestartPolicy},
			Selecting: func() (string, bool, error) { return selecting(p) }}
		for _, o := range p.OwnerReferences {
			in.Pod.OwnerKinds = append(in.Pod.OwnerKinds, o.Kind)
		}
		d, err := scope.Decide(in)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		// Under audit nothing is injected by design: that is reported at admission.
		if d.Inject && r.Refusal != nil {
			why, err := r.Refusal(ctx, p.Namespace, p.Name)
			if err != nil {
				return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
			}
			if why != "" {
				out.finds = append(out.finds, podFinding{w, Refused, p.Name, "pods have no preStop delay: nap's webhook leaves them unchanged (" + why + "); fix that, then roll the workload"})
				continue
			}
		}
		if d.Inject {
			out.finds = append(out.finds, podFinding{w, NotInjected, p.Name, fmt.Sprintf("pods have no preStop delay although nap's webhook gives them one (%s): admitted while the webhook was down, unreachable or not yet trusted; roll the workload to inject them", d)})
			out.notInjected = append(out.notInjected, *p.DeepCopy()) // p is the next pod's too
		}
	}
	return out, nil
}

// Watch has the Reporter told, through Informers, of every change to pods, Services
// and namespaces (their namespace is scanned again at the next pass) and of nodes'
// kubelet versions (every namespace is). Start calls it; whoever calls Scan without
// Start calls it once first. It returns once the informers' present objects have been
// told, and the next scan is a full one.
func (r *Reporter) Watch(ctx context.Context) error {
	mark := func(o any) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		m, ok := o.(metav1.Object)
		if !ok {
			return
		}
		ns := m.GetNamespace()
		if ns == "" { // a Namespace
			ns = m.GetName()
		}
		r.mu.Lock()
		r.dirty[ns] = true
		r.mu.Unlock()
	}
	all := func(any) {
		r.mu.Lock()
		r.allDirty = true
		r.mu.Unlock()
	}
	events := func(any) {
		r.mu.Lock()
		r.eventsDirty = true
		r.mu.Unlock()
	}
	r.mu.Lock()
	r.dirty = map[string]bool{}
	r.mu.Unlock()
	handlers := []struct {
		obj client.Object
		h   toolscache.ResourceEventHandler
	}{
		{&corev1.Pod{}, toolscache.ResourceEventHandlerFuncs{AddFunc: mark, UpdateFunc: func(_, o any) { mark(o) }, DeleteFunc: mark}},
		{&corev1.Service{}, toolscache.ResourceEventHandlerFuncs{AddFunc: mark, UpdateFunc: func(_, o any) { mark(o) }, DeleteFunc: mark}},
		{&corev1.Namespace{}, toolscache.ResourceEventHandlerFuncs{AddFunc: mark, UpdateFunc: func(_, o any) { mark(o) }, DeleteFunc: mark}},
		{&corev1.Event{}, toolscache.ResourceEventHandlerFuncs{AddFunc: events, UpdateFunc: func(_, o any) { events(o) }, DeleteFunc: events}},
		{&corev1.Node{}, toolscache.ResourceEventHandlerFuncs{AddFunc: all, DeleteFunc: all, UpdateFunc: func(old, o any) {
			a, errA := nodeOf(old)
			b, errB := nodeOf(o)
			if errA != nil || errB != nil || a.Kubelet != b.Kubelet {
				all(o)
			}
		}}},
	}
	var synced []toolscache.InformerSynced
	for _, h := range handlers {
		inf, err := r.Informers.GetInformer(ctx, h.obj)
		if err != nil {
			return err
		}
		reg, err := inf.AddEventHandler(h.h)
		if err != nil {
			return err
		}
		synced = append(synced, reg.HasSynced)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	// The objects present were all told as added: the next scan is a full one anyway.
	r.mu.Lock()
	r.dirty, r.allDirty, r.watching = map[string]bool{}, true, true
	r.mu.Unlock()
	return nil
}

func nodeOf(o any) (kube.Node, error) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return kube.Node{}, fmt.Errorf("not a node: %T", o)
	}
	return kube.NodeOf(n)
}

// report puts a Warning event on each workload whose finding is new or has more pods
// than when it was last reported, and sets the gauges.
func (r *Reporter) report(found []Finding) {
	if r.reported == nil {
		r.reported = map[findingKey]int{}
	}
	unprotected.Reset()
	hookFailures.Reset()
	seen := map[findingKey]bool{}
	for _, f := range found {
		k := findingKey{workload: f.Workload, reason: f.Reason, cause: f.Cause}
		seen[k] = true
		if f.Reason == FailedPreStopHook {
			hookFailures.WithLabelValues(f.Workload.Namespace, f.Workload.Kind+"/"+f.Workload.Name, f.Cause).Set(float64(len(f.Pods)))
		} else {
			unprotected.WithLabelValues(f.Workload.Namespace, string(f.Reason)).Add(float64(len(f.Pods)))
		}
		if len(f.Pods) <= r.reported[k] {
			continue
		}
		r.reported[k] = len(f.Pods)
		msg := fmt.Sprintf("%d pod(s) (%s): %s", len(f.Pods), strings.Join(firstN(f.Pods, 5), ", "), f.Message)
		r.Log.Info("unprotected", "workload", f.Workload.String(), "reason", f.Reason, "pods", len(f.Pods), "message", f.Message)
		if r.Recorder != nil {
			r.Recorder.Event(objectOf(f.Workload), corev1.EventTypeWarning, eventReasons[f.Reason], msg)
		}
	}
	for k := range r.reported {
		if !seen[k] {
			delete(r.reported, k) // gone: the workload was rolled, or the events expired
		}
	}
}

// roll evicts one not-injected pod, at most every RollInterval.
func (r *Reporter) roll(ctx context.Context, pods []corev1.Pod) error {
	every := r.RollInterval
	if every <= 0 {
		every = time.Minute
	}
	if time.Since(r.lastRoll) < every {
		return nil
	}
	for _, p := range pods {
		if len(p.OwnerReferences) == 0 {
			continue // nothing would recreate it
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		err := r.Client.SubResource("eviction").Create(ctx, &p, ev)
		switch {
		case err == nil:
			r.lastRoll = time.Now()
			rolled.WithLabelValues(p.Namespace).Inc()
			w := hook.WorkloadOf(&p)
			r.Log.Info("evicted a pod the webhook missed, to be recreated through it", "pod", p.Namespace+"/"+p.Name, "workload", w.String())
			if r.Recorder != nil {
				r.Recorder.Event(objectOf(w), corev1.EventTypeNormal, "NapRolled", "evicted pod "+p.Name+", which nap's webhook missed, so that it is recreated with a preStop delay")
			}
			return nil
		case apierrors.IsTooManyRequests(err): // a PodDisruptionBudget says not now
			continue
		case apierrors.IsNotFound(err):
			continue
		default:
			return fmt.Errorf("evicting %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}

// Results are the findings as policy report results, by namespace: one per workload,
// reason and cause.
func Results(found []Finding) map[string][]policyreport.Result {
	out := map[string][]policyreport.Result{}
	for _, f := range found {
		severity := policyreport.Medium
		if f.Reason == NotInjected || f.Reason == Refused || f.Reason == FailedPreStopHook {
			severity = policyreport.High // no delay at all
		}
		props := map[string]string{"pods": fmt.Sprint(len(f.Pods))}
		if f.Cause != "" {
			props["cause"] = f.Cause
		}
		out[f.Workload.Namespace] = append(out[f.Workload.Namespace], policyreport.Result{
			Workload: f.Workload.Reference(), Policy: string(f.Reason), Severity: severity, Message: f.Message, Properties: props})
	}
	return out
}

// objectOf is the workload as an event's involved object.
func objectOf(w WorkloadRef) *corev1.ObjectReference {
	ref := w.Reference()
	return &ref
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}
