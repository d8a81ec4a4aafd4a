package report

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/policyreport/writer"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

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
	// none): pods whose hook holds them less than the paths that reach them need
	// (lint's delay-below-path: traffic.Need.Below) are DelayBelowPath. Call
	// Recalibrated when it changes.
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

	// Learn, when set, is handed every termination counted, with the paths that
	// reached its pod (the Learner: napctl controller --learn).
	Learn func(traffic.Observation)

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

	// EventRate and EventBurst pace the Warning events across every namespace
	// (events per second past a burst; 0: DefaultEventRate, DefaultEventBurst): a
	// finding past them is told when its turn comes, not dropped (budget.go).
	EventRate  float64
	EventBurst int
	// clock, when set, is the events' clock (tests); nil: time.Now.
	clock func() time.Time

	queue  workqueue.TypedRateLimitingInterface[string]
	events *eventBudget

	mu       sync.Mutex
	state    map[string]*nsState // each namespace's last sync
	env      *scanEnv            // the nodes' kubelets; nil: to be read again
	pods     toolscache.Indexer  // the pod informer's store, once asked for
	initial  map[string]bool     // namespaces of the start not yet synced
	lastRoll time.Time

	// synced counts namespace syncs begun (tests, benchmarks).
	synced atomic.Int64

	tallies tallies // the terminations' verdicts, by workload

	// Live, when set (with Waits, and Calibration and Fronts where there are), has the
	// Reporter keep each namespace's live waits (kube.LiveWaitsName; syncLive): for each
	// workload whose running pods' hooks read it (nap --live), the wait its routes need
	// now, by the webhook's rule, which those pods' nap reads when their hooks start.
	// LiveReader reads what a namespace holds once (the cache holds nap's ConfigMap
	// alone; nil: Client); Owner owns what it writes (uninstalling nap removes it).
	Live       bool
	LiveReader client.Reader
	Owner      []metav1.OwnerReference
	live       map[string]*liveState // by namespace
}

// everyNamespace is the queue's key for "sync every namespace": a node's kubelet
// changed, or the Reporter starts. No namespace has an empty name.
const everyNamespace = ""

// nsState is what a namespace's last sync found.
type nsState struct {
	found       []Finding          // by workload, reason and cause
	notInjected []corev1.Pod       // to roll
	reported    map[findingKey]int // how many pods each finding had when last evented
	// prepaid events were booked for this namespace's findings that waited for the
	// events' pace (eventBudget.reserve); they may be written from due on.
	prepaid int
	due     time.Time
	waiting int // findings waiting for their turn to be told (nap_reporter_events_waiting)
}

// NeedLeaderElection: one replica reports and rolls.
func (r *Reporter) NeedLeaderElection() bool { return true }

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
	// The live waits after the findings: a namespace whose live waits cannot be written
	// (a ClusterRole older than the controller) is still reported, and synced again.
	var liveErr error
	if r.Live {
		liveErr = r.syncLive(ctx, name, s)
	}
	r.report(name, st)
	if r.Reports != nil {
		said, again := r.tallies.results(name, time.Now(), cmp.Or(r.TerminationsEvery, TerminationsEvery))
		if again > 0 { // quiet terminations held back: report them when they are due
			r.queue.AddAfter(name, again)
		}
		if err := r.Reports.SyncNamespace(ctx, name, append(Results(found)[name], said...)); err != nil {
			return errors.Join(fmt.Errorf("policy report: %w", err), liveErr)
		}
	}
	return liveErr
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
	st, had := r.state[name]
	if had {
		eventsWaiting.Sub(float64(st.waiting))
	}
	delete(r.state, name)
	delete(r.live, name)
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
