package report

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/lint"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/policyreport/writer"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
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
	// DelayBelowPath: by the calibration kept in the cluster, a path that reaches the
	// pods (a LoadBalancer Service or an Ingress added after they were admitted) sends
	// to them for longer than their hook holds them (lint's delay-below-path): a rollout
	// gives the new pods the longer wait.
	DelayBelowPath Reason = "delay-below-path"
	// AdaptiveMissesPool: the pods' adaptive wait watches new connections alone, and a
	// client that pools its connections reaches them (traffic.Need.MissesPool: an
	// application load balancer with the pods as targets): the wait can end while that
	// client still sends. Admitted before the path existed, or under the
	// MutatingAdmissionPolicy, which cannot read Services; needs no calibration.
	AdaptiveMissesPool Reason = "adaptive-misses-pool"
)

// eventReasons are the Warning events the Reporter puts on workloads.
var eventReasons = map[Reason]string{
	NotInjected:            "NapNotInjected",
	Refused:                "NapRefused",
	DelayExceedsGrace:      "NapDelayExceedsGrace",
	NativeSleepUnsupported: "NapNativeSleepUnsupported",
	FailedPreStopHook:      "NapFailedPreStopHook",
	DelayBelowPath:         "NapDelayBelowPath",
	AdaptiveMissesPool:     "NapAdaptiveMissesPool",
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

// Reporter finds what makes nap's protection fail silently, from the manager's caches
// (no API call per pod):
//
//   - pods the webhook should have injected and did not (NotInjected), apart from
//     those it leaves unchanged on purpose (Refused);
//   - hooks that cannot do their job (DelayExceedsGrace, NativeSleepUnsupported), or
//     not for the paths that reach their pods (DelayBelowPath, AdaptiveMissesPool);
//   - FailedPreStopHook events, per workload and cause.
//
// It is shaped as Kubernetes' small controllers are (the root-CA publisher): the
// informers' handlers put the namespace of each change on a work queue, sync judges one
// namespace at a time, and a rate-limited queue retries a namespace whose sync failed. A
// change to a node's kubelet version puts every namespace on it. At rest the queue is
// empty: nothing is read and nothing is written.
//
// It reports each finding as a Warning event on the owning workload (once while it
// lasts, again when more pods show it) and as the metrics
// nap_pods_unprotected{namespace,reason} and
// nap_prestop_hook_failures{namespace,workload,cause}, which stay until the workload is
// rolled (the pods are replaced) or the events expire; with Reports, as a policy report
// per namespace. With Roll, it evicts one not-injected pod every RollInterval through
// the Eviction API, so that PodDisruptionBudgets hold and the pod's controller recreates
// it through the webhook.
type Reporter struct {
	Client   client.Client // the manager's: cached reads; evictions
	Recorder record.EventRecorder
	// Kube is the API server's version, for lint's native-sleep check; zero: the newest
	// kubelet's.
	Kube kube.Version
	// Scope is the installed scope (scope.Label on a namespace overrides it).
	Scope scope.Scope
	// Exclude are the namespaces the webhook never sees: its own and kube-system.
	Exclude map[string]bool

	Roll         bool
	RollInterval time.Duration // default 1m

	// Refusal, when set, says why the webhook would leave a pod without a delay
	// unchanged if it were created now ("" when it would give it one): such a pod is
	// Refused, not NotInjected, and never rolled.
	Refusal func(ctx context.Context, namespace, name string) (string, error)

	// Calibration, when set, is the calibration kept in the cluster (nil while there is
	// none): pods whose hook holds them less than the slowest measured path that reaches
	// them needs are DelayBelowPath. Call Recalibrated when it changes.
	Calibration func() *traffic.Calibration
	// Waits are the fleet's waits (the webhook's defaults): a path no calibration
	// measured needs at least the fleet's wait of the pod's kind.
	Waits wait.Defaults
	// Fronts reads a namespace's front doors (the Services its Ingresses and Gateway
	// API routes name) from the caches; FrontKinds are their kinds, watched (an
	// Ingress, and the routes the API server serves, as unstructured objects). Unset:
	// no front door counts.
	Fronts     func(ctx context.Context, namespace string) (kube.Frontends, error)
	FrontKinds []client.Object

	// Reports, when set, keeps a policy report per namespace of what is found
	// (policyreport: OpenReports or the wg-policy PolicyReport), and of what its
	// workloads' terminations said (policyreport.Terminations), which a restarted
	// Reporter takes up from it.
	Reports *writer.Writer
	// TerminationsEvery is how often at most a report is rewritten for quiet
	// terminations alone (default TerminationsEvery).
	TerminationsEvery time.Duration

	Log logr.Logger

	// Informers are the manager's cache, whose pod informer holds summaries (see
	// CacheByObject): Start has the Reporter told of every change through them. Unset,
	// pods are listed through Client (tests that sync by hand).
	Informers cache.Informers

	// Before, when set, is waited for before the Reporter starts its informers: the
	// manager has it wait until every namespace holds the ConfigMap (Publisher.Published),
	// so that on a cold start the pod list, the largest the controller reads, does not
	// compete with publishing on the API server and the controller's CPU. An error
	// is logged and the Reporter starts anyway.
	Before func(ctx context.Context) error

	// AfterSynced, when set, is called once, when every namespace there at the start
	// has been synced: the caches are full and the first report is done.
	AfterSynced func()

	// Workers sync namespaces at once (default 2); Batch is how long after a change its
	// namespace is synced (default 1s), so that a burst of changes (a rollout's pods)
	// is judged and reported once.
	Workers int
	Batch   time.Duration

	queue workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	state    map[string]*nsState // each namespace's last sync
	env      *scanEnv            // the nodes' kubelets; nil: to be read again
	pods     toolscache.Indexer  // the pod informer's store, once asked for
	initial  map[string]bool     // namespaces of the start not yet synced
	lastRoll time.Time

	// synced counts namespace syncs begun (tests, benchmarks).
	synced atomic.Int64

	tallies tallies // the terminations' verdicts, by workload
}

// everyNamespace is the queue's key for "sync every namespace": a node's kubelet
// changed, or the Reporter starts. No namespace has an empty name.
const everyNamespace = ""

// nsState is what a namespace's last sync found.
type nsState struct {
	found       []Finding          // by workload, reason and cause
	notInjected []corev1.Pod       // to roll
	reported    map[findingKey]int // how many pods each finding had when last evented
}

type findingKey struct {
	workload WorkloadRef
	reason   Reason
	cause    string
}

// NeedLeaderElection: one replica reports and rolls.
func (r *Reporter) NeedLeaderElection() bool { return true }

func (r *Reporter) batch() time.Duration {
	if r.Batch > 0 {
		return r.Batch
	}
	return time.Second
}

func (r *Reporter) init() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queue == nil {
		r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: QueueName})
	}
	if r.state == nil {
		r.state = map[string]*nsState{}
	}
}

// QueueName names the Reporter's work queue in controller-runtime's workqueue_*
// metrics.
const QueueName = "nap-reporter"

// Start has the Reporter told of changes (Watch), syncs every namespace once, then
// each one as it changes, until ctx ends.
func (r *Reporter) Start(ctx context.Context) error {
	r.init()
	defer r.queue.ShutDown()
	if r.Before != nil {
		if err := r.Before(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.Log.Error(err, "starting the reports anyway")
		}
	}
	if r.Reports != nil { // the terminations an earlier run counted, before any is counted here
		said, err := r.Reports.Read(ctx)
		if err != nil {
			r.Log.Error(err, "reading the reports an earlier run wrote: counting terminations from what could be read")
		}
		r.tallies.seed(said)
	}
	if err := r.Watch(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while the informers filled: not an error
		}
		return err
	}
	r.queue.Add(everyNamespace)
	workers := r.Workers
	if workers <= 0 {
		workers = 2
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for r.processNext(ctx) {
			}
		})
	}
	if r.Roll {
		wg.Go(func() { r.rollEvery(ctx) })
	}
	<-ctx.Done()
	r.queue.ShutDown()
	wg.Wait()
	return nil
}

// processNext syncs the next key of the queue; false once the queue is shut down.
func (r *Reporter) processNext(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			r.Log.Error(err, "report", "namespace", key)
		}
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	return true
}

// sync is the queue's: every namespace put on it, or one namespace synced.
func (r *Reporter) sync(ctx context.Context, key string) error {
	if key != everyNamespace {
		return r.Sync(ctx, key)
	}
	names, err := r.namespaces(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.env = nil // read again at the next sync
	first := r.initial == nil
	if first {
		r.initial = make(map[string]bool, len(names))
		for _, n := range names {
			r.initial[n] = true
		}
	}
	r.mu.Unlock()
	for _, n := range names {
		r.queue.Add(n)
	}
	if first && len(names) == 0 {
		r.afterSynced()
	}
	return nil
}

// namespaces are the names of the namespaces in the cache, and of those a sync found
// before (gone since, to be forgotten).
func (r *Reporter) namespaces(ctx context.Context) ([]string, error) {
	var list corev1.NamespaceList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(list.Items))
	for i := range list.Items {
		seen[list.Items[i].Name] = true
	}
	r.mu.Lock()
	for n := range r.state {
		seen[n] = true
	}
	r.mu.Unlock()
	return slices.Sorted(maps.Keys(seen)), nil
}

// afterSynced calls AfterSynced: once, when the namespaces of the start have all been synced.
func (r *Reporter) afterSynced() {
	if r.AfterSynced != nil {
		r.AfterSynced()
	}
}

// Sync judges namespace ns from the caches and reports what changed: events on the
// workloads with a finding new or grown, its metrics, its policy report (the findings,
// and its workloads' terminations: a late or cut one at once, quiet ones at most every
// TerminationsEvery). A namespace
// gone is forgotten.
func (r *Reporter) Sync(ctx context.Context, name string) error {
	r.init()
	r.synced.Add(1)
	defer r.doneInitial(name)
	var ns corev1.Namespace
	err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &ns, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		r.forget(ctx, name)
		return nil
	}
	if err != nil {
		return err
	}
	env, err := r.environment(ctx)
	if err != nil {
		return err
	}
	s, err := r.scanNamespace(ctx, &ns, env)
	if err != nil {
		return err
	}
	found, err := r.judge(ctx, s)
	if err != nil {
		return err
	}
	r.mu.Lock()
	st := r.state[name]
	if st == nil {
		st = &nsState{reported: map[findingKey]int{}}
		r.state[name] = st
	}
	st.found, st.notInjected = found, s.notInjected
	r.mu.Unlock()
	r.report(name, st)
	if r.Reports != nil {
		said, again := r.tallies.results(name, time.Now(), cmp.Or(r.TerminationsEvery, TerminationsEvery))
		if again > 0 { // quiet terminations held back: report them when they are due
			r.queue.AddAfter(name, again)
		}
		if err := r.Reports.SyncNamespace(ctx, name, append(Results(found)[name], said...)); err != nil {
			return fmt.Errorf("policy report: %w", err)
		}
	}
	return nil
}

func (r *Reporter) doneInitial(name string) {
	r.mu.Lock()
	last := false
	if r.initial[name] {
		delete(r.initial, name)
		last = len(r.initial) == 0
	}
	r.mu.Unlock()
	if last {
		r.afterSynced()
	}
}

// SyncAll syncs every namespace in turn: what Start does first, at once.
func (r *Reporter) SyncAll(ctx context.Context) error {
	r.init()
	names, err := r.namespaces(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.env = nil
	r.mu.Unlock()
	for _, n := range names {
		if err := r.Sync(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// Synced is how many namespace syncs the Reporter has begun (AfterSynced tells when
// the first report is done).
func (r *Reporter) Synced() int64 { return r.synced.Load() }

// Findings are what the namespaces' last syncs found, by workload, reason and cause.
func (r *Reporter) Findings() []Finding {
	r.mu.Lock()
	var out []Finding
	for _, st := range r.state {
		out = append(out, st.found...)
	}
	r.mu.Unlock()
	return sortFindings(out)
}

// sortFindings sorts findings by workload, reason and cause, taken as one string made
// once for each.
func sortFindings(fs []Finding) []Finding {
	type keyed struct {
		key string
		f   Finding
	}
	ks := make([]keyed, len(fs))
	for i, f := range fs {
		ks[i] = keyed{f.Workload.String() + string(f.Reason) + f.Cause, f}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for i := range ks {
		fs[i] = ks[i].f
	}
	return fs
}

// NotInjected are the pods the namespaces' last syncs found not injected, by namespace.
func (r *Reporter) NotInjected() []corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []corev1.Pod
	for _, n := range slices.Sorted(maps.Keys(r.state)) {
		out = append(out, r.state[n].notInjected...)
	}
	return out
}

// forget drops a namespace gone: its state, its metrics; its report went with it.
func (r *Reporter) forget(ctx context.Context, name string) {
	r.mu.Lock()
	_, had := r.state[name]
	delete(r.state, name)
	r.mu.Unlock()
	r.tallies.forget(name)
	if !had {
		return
	}
	unprotected.DeletePartialMatch(prometheus.Labels{"namespace": name})
	hookFailures.DeletePartialMatch(prometheus.Labels{"namespace": name})
	if r.Reports != nil {
		r.Reports.Forget(name)
	}
}

// judge is a namespace's findings: its pods' (s), then its FailedPreStopHook events',
// by workload, reason and cause.
func (r *Reporter) judge(ctx context.Context, s *nsScan) ([]Finding, error) {
	byKey := map[findingKey]*Finding{}
	for _, f := range s.finds {
		addFinding(byKey, findingKey{workload: f.workload, reason: f.reason}, f.pod, f.message)
	}
	var events corev1.EventList
	if err := r.Client.List(ctx, &events, client.InNamespace(s.namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for _, e := range events.Items {
		if e.Reason != "FailedPreStopHook" || e.InvolvedObject.Kind != "Pod" {
			continue
		}
		w := hook.WorkloadOfName(e.InvolvedObject.Namespace, e.InvolvedObject.Name)
		if p, err := r.pod(ctx, e.InvolvedObject.Namespace, e.InvolvedObject.Name); err != nil {
			return nil, err
		} else if p != nil {
			w = hook.WorkloadOf(p) // the pod still runs: its owner, not a guess from its name
		}
		// The kubelet's own event says nothing more: then the cause is what the hook
		// runs, from a live pod.
		kind := s.hookKinds[w]
		cause, why := hook.CauseLabel(e.Message, kind), hook.Cause(e.Message)
		if hook.Bare(e.Message) {
			why = "the kubelet gives no reason"
			if kind != hook.None {
				why += "; the workload's hook is of kind " + string(kind)
			}
		}
		addFinding(byKey, findingKey{workload: w, reason: FailedPreStopHook, cause: cause}, e.InvolvedObject.Name, "preStop hook failed ("+cause+"): "+why)
	}
	out := make([]Finding, 0, len(byKey))
	for _, f := range byKey {
		slices.Sort(f.Pods)
		out = append(out, *f)
	}
	return sortFindings(out), nil
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

// scanEnv is what every namespace's sync reads the same: the nodes' kubelets.
type scanEnv struct {
	nodes     map[string]kube.Node
	apiserver kube.Version
}

// environment is the nodes' kubelets, read once until a node's kubelet changes.
func (r *Reporter) environment(ctx context.Context) (*scanEnv, error) {
	r.mu.Lock()
	e := r.env
	r.mu.Unlock()
	if e != nil {
		return e, nil
	}
	var nodeList corev1.NodeList
	if err := r.Client.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	e = &scanEnv{nodes: make(map[string]kube.Node, len(nodeList.Items)), apiserver: r.Kube} // unknown: no older than the newest kubelet
	for i := range nodeList.Items {
		if n, err := kube.NodeOf(&nodeList.Items[i]); err == nil {
			e.nodes[n.Name] = n
			if r.Kube == (kube.Version{}) && e.apiserver.Less(n.Kubelet) {
				e.apiserver = n.Kubelet
			}
		}
	}
	r.mu.Lock()
	r.env = e
	r.mu.Unlock()
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

// nsScan is what one namespace's pods showed.
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
	var cal *traffic.Calibration
	if r.Calibration != nil {
		cal = r.Calibration()
	}
	var fronts kube.Frontends // the Services this namespace's Ingresses and routes name
	frontsRead := false
	// route is what the paths that reach p need, by the calibration (nil: none); ok
	// false: no Service selects p.
	route := func(p *corev1.Pod) (n traffic.Need, ok bool, err error) {
		if _, _, err := selecting(p); err != nil { // the Services, listed once
			return n, false, err
		}
		mine := scope.Selecting(svcs, p.Labels)
		if len(mine) == 0 {
			return n, false, nil
		}
		if !frontsRead && r.Fronts != nil {
			if fronts, err = r.Fronts(ctx, ns.Name); err != nil {
				return n, false, err
			}
		}
		frontsRead = true
		return cal.Route(mine, fronts.Of), true, nil
	}
	// pathFindings are what the paths that reach p say of its hook h: a delay below
	// the slowest measured path's need (DelayBelowPath), an adaptive wait blind to a
	// client that pools its connections (AdaptiveMissesPool).
	pathFindings := func(p *corev1.Pod, h hook.Hook) ([]podFinding, error) {
		if cal == nil && !h.Adaptive() {
			return nil, nil
		}
		n, ok, err := route(p)
		if err != nil || !ok {
			return nil, err
		}
		w := hook.WorkloadOf(p)
		var out []podFinding
		if n.MissesPool(h.Wait) {
			out = append(out, podFinding{w, AdaptiveMissesPool, p.Name, "pods' preStop hook: " + n.PoolMessage() +
				fmt.Sprintf("; roll the workload (nap's webhook gives new pods --%s %s), or, under the MutatingAdmissionPolicy, which cannot read Services, give the fleet's wait --%s %s (napctl install)",
					wait.FlagRequests, wait.Arg(wait.PooledRequests), wait.FlagRequests, wait.Arg(wait.PooledRequests))})
		}
		if cal == nil {
			return out, nil
		}
		fleet := r.Waits.Wait(wait.Fixed)
		if h.Adaptive() {
			fleet = r.Waits.Wait(wait.Adaptive)
		}
		need, why, ok := n.Requires(fleet)
		if !ok || h.Holds() >= need {
			return out, nil
		}
		what := fmt.Sprintf("holds them %v", h.Holds())
		if h.Adaptive() {
			what = fmt.Sprintf("holds them at least %v (the adaptive wait's MIN)", h.Holds())
		}
		return append(out, podFinding{w, DelayBelowPath, p.Name, fmt.Sprintf("pods' preStop hook %s, but %s: they need %v; roll the workload (nap's webhook gives new pods the wait of their slowest path)", what, why, need)}), nil
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
			if h.Known && !h.Stops {
				found, err := pathFindings(p, h)
				if err != nil {
					return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
				}
				out.finds = append(out.finds, found...)
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

// Watch has the Reporter told, through Informers, of every change to pods, Services,
// namespaces and FailedPreStopHook events (their namespace is put on the queue, synced
// Batch later) and of nodes' kubelet versions (every namespace is). The objects already
// there when it is called are not told one by one: Start syncs every namespace first.
// It returns once the informers have synced.
func (r *Reporter) Watch(ctx context.Context) error {
	r.init()
	enqueue := func(o any) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		m, err := meta.Accessor(o)
		if err != nil {
			return
		}
		ns := m.GetNamespace()
		if ns == "" { // a Namespace
			ns = m.GetName()
		}
		r.queue.AddAfter(ns, r.batch())
	}
	every := func() {
		r.mu.Lock()
		r.env = nil
		r.mu.Unlock()
		r.queue.AddAfter(everyNamespace, r.batch())
	}
	changes := toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, initial bool) {
			if !initial {
				enqueue(o)
			}
		},
		UpdateFunc: func(_, o any) { enqueue(o) },
		DeleteFunc: enqueue,
	}
	// Each termination's verdict, once, as the pod's final status brings it.
	verdicts := toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, initial bool) {
			if !initial {
				r.counted(nil, asSummary(o))
			}
		},
		UpdateFunc: func(old, o any) { r.counted(asSummary(old), asSummary(o)) },
	}
	handlers := []struct {
		obj client.Object
		h   toolscache.ResourceEventHandler
	}{
		{&corev1.Pod{}, changes},
		{&corev1.Pod{}, verdicts},
		{&corev1.Service{}, changes},
		{&corev1.Namespace{}, changes},
		{&corev1.Event{}, changes},
		{&corev1.Node{}, toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(_ any, initial bool) {
				if !initial {
					every()
				}
			},
			DeleteFunc: func(any) { every() },
			UpdateFunc: func(old, o any) {
				a, errA := nodeOf(old)
				b, errB := nodeOf(o)
				if errA != nil || errB != nil || a.Kubelet != b.Kubelet {
					every()
				}
			}}},
	}
	for _, o := range r.FrontKinds {
		handlers = append(handlers, struct {
			obj client.Object
			h   toolscache.ResourceEventHandler
		}{o, changes})
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
	return nil
}

// Recalibrated has every namespace judged again: the calibration changed.
func (r *Reporter) Recalibrated() {
	r.init()
	r.queue.AddAfter(everyNamespace, r.batch())
}

func nodeOf(o any) (kube.Node, error) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return kube.Node{}, fmt.Errorf("not a node: %T", o)
	}
	return kube.NodeOf(n)
}

// report puts a Warning event on each workload of namespace ns whose finding is new or
// has more pods than when it was last reported, and sets the namespace's gauges.
func (r *Reporter) report(ns string, st *nsState) {
	unprotected.DeletePartialMatch(prometheus.Labels{"namespace": ns})
	hookFailures.DeletePartialMatch(prometheus.Labels{"namespace": ns})
	seen := map[findingKey]bool{}
	for _, f := range st.found {
		k := findingKey{workload: f.Workload, reason: f.Reason, cause: f.Cause}
		seen[k] = true
		if f.Reason == FailedPreStopHook {
			hookFailures.WithLabelValues(f.Workload.Namespace, f.Workload.Kind+"/"+f.Workload.Name, f.Cause).Set(float64(len(f.Pods)))
		} else {
			unprotected.WithLabelValues(f.Workload.Namespace, string(f.Reason)).Add(float64(len(f.Pods)))
		}
		if len(f.Pods) <= st.reported[k] {
			continue
		}
		st.reported[k] = len(f.Pods)
		msg := fmt.Sprintf("%d pod(s) (%s): %s", len(f.Pods), strings.Join(firstN(f.Pods, 5), ", "), f.Message)
		r.Log.Info("unprotected", "workload", f.Workload.String(), "reason", f.Reason, "pods", len(f.Pods), "message", f.Message)
		if r.Recorder != nil {
			r.Recorder.Event(objectOf(f.Workload), corev1.EventTypeWarning, eventReasons[f.Reason], msg)
		}
	}
	for k := range st.reported {
		if !seen[k] {
			delete(st.reported, k) // gone: the workload was rolled, or the events expired
		}
	}
}

// rollEvery evicts a not-injected pod every RollInterval, until ctx ends.
func (r *Reporter) rollEvery(ctx context.Context) {
	every := r.RollInterval
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(min(every, 10*time.Second))
	defer t.Stop()
	for {
		if err := r.RollOne(ctx); err != nil && ctx.Err() == nil {
			r.Log.Error(err, "rolling a pod the webhook missed")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RollOne evicts one not-injected pod, unless one was evicted less than RollInterval ago.
func (r *Reporter) RollOne(ctx context.Context) error {
	every := r.RollInterval
	if every <= 0 {
		every = time.Minute
	}
	if time.Since(r.lastRoll) < every {
		return nil
	}
	for _, p := range r.NotInjected() {
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
