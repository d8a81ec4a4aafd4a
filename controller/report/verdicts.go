package report

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/policyreport"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// Verdicts are the kinds a termination is counted as: nap's own (nap.Verdict), and
// sparse, a quiet one the pod's traffic was too thin to trust (nap.Verdict.Sparse).
var Verdicts = nap.Kinds[:]

// containerVerdict is one container's verdict, as its pod's final status gives it.
type containerVerdict struct {
	container string
	kind      string // one of Verdicts
	end, last time.Duration
}

// verdictsOf reads nap's line from each terminated container of p (its termination
// message), with sparse told from quiet by the pod's age when its wait began and its
// hook's QUIET and ALLOW. A container with no line (not nap's hook, a custom
// terminationMessagePath, the native sleep) has none.
func verdictsOf(p *corev1.Pod) []containerVerdict {
	var out []containerVerdict
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil || t.Message == "" {
			continue
		}
		v, ok := nap.ParseVerdict(t.Message)
		if !ok {
			continue
		}
		kind := v.Kind
		if w, ok := waitOf(p, cs.Name); ok && kind == nap.Quiet && v.Sparse(ageAtWait(p), w.BackgroundQuiet(), w.Allow) {
			kind = nap.Sparse
		}
		out = append(out, containerVerdict{container: intern(cs.Name), kind: intern(kind), end: v.End, last: v.Last})
	}
	return out
}

// waitOf is the wait container name's preStop hook runs, when it is nap's.
func waitOf(p *corev1.Pod, name string) (wait.Wait, bool) {
	for _, c := range p.Spec.Containers {
		if c.Name != name {
			continue
		}
		if h := hook.Handler(c); h != nil && h.Exec != nil && len(h.Exec.Command) > 0 {
			return wait.FromArgs(h.Exec.Command[1:])
		}
	}
	return wait.Wait{}, false
}

// ageAtWait is how long p had run when its termination began (its deletion, less the
// grace period it was given); 0 when its start is unknown.
func ageAtWait(p *corev1.Pod) time.Duration {
	if p.Status.StartTime == nil {
		return 0
	}
	began := time.Now()
	if d := p.DeletionTimestamp; d != nil {
		began = d.Time
		if g := p.DeletionGracePeriodSeconds; g != nil {
			began = began.Add(-time.Duration(*g) * time.Second)
		}
	}
	return began.Sub(p.Status.StartTime.Time)
}

// tallies are the Reporter's counts, by namespace and workload, from the pod watch,
// and what each namespace's report last said of them.
type tallies struct {
	mu    sync.Mutex
	ns    map[string]*nsTally
	since time.Time // when this Reporter began counting: a new workload's Since
}

// nsTally is one namespace's: its workloads' counts, what its report says of them, and
// whether they changed since. What it says is kept as counts (about 300 bytes a
// workload), not as results (a map of properties each), and made into results when
// asked.
type nsTally struct {
	by      map[kube.Workload]*policyreport.Terminations
	said    map[kube.Workload]policyreport.Terminations // as last reported
	at      time.Time                                   // when
	changed bool                                        // counted since
	urgent  bool                                        // a late or cut one among them: to be reported at once
}

// TerminationsEvery is how often at most a namespace's report is rewritten for quiet
// terminations alone (a rollout's, one after another), unless Reporter.TerminationsEvery
// says otherwise; a late or cut one is reported at once. At rest nothing is written.
const TerminationsEvery = time.Minute

// nsLocked is namespace ns's tally, made if need be.
func (ts *tallies) nsLocked(ns string) *nsTally {
	if ts.ns == nil {
		ts.ns, ts.since = map[string]*nsTally{}, time.Now()
	}
	n := ts.ns[ns]
	if n == nil {
		n = &nsTally{by: map[kube.Workload]*policyreport.Terminations{}, said: map[kube.Workload]policyreport.Terminations{}}
		ts.ns[ns] = n
	}
	return n
}

// add counts one container's termination of pod's workload; paths reached the pod.
func (ts *tallies) add(w kube.Workload, pod string, v containerVerdict, paths []string, at time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := ts.nsLocked(w.Namespace)
	t := n.by[w]
	if t == nil {
		t = &policyreport.Terminations{Since: ts.since}
		n.by[w] = t
	}
	t.Add(v.kind, v.last, pod, paths, at)
	n.changed = true
	n.urgent = n.urgent || v.kind == nap.Late || v.kind == nap.Cut
}

// seed takes up what the reports of an earlier run counted (policyreport.TerminationsOf),
// before any termination is counted here: the counts outlive the controller.
func (ts *tallies) seed(byNamespace map[string][]policyreport.Result) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for ns, results := range byNamespace {
		for _, r := range results {
			t, ok := policyreport.TerminationsOf(r)
			if !ok {
				continue
			}
			n := ts.nsLocked(ns)
			w := kube.Workload{APIVersion: r.Workload.APIVersion, Kind: r.Workload.Kind, Namespace: ns, Name: r.Workload.Name}
			n.by[w], n.said[w] = &t, clone(t)
		}
	}
}

// results are the terminations results namespace ns's report is to say at now: what
// it said, unless they changed and a late or cut one is new or every has passed; again
// is when to ask again for what is held back (0: nothing).
func (ts *tallies) results(ns string, now time.Time, every time.Duration) (out []policyreport.Result, again time.Duration) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := ts.ns[ns]
	if n == nil {
		return nil, 0
	}
	switch {
	case n.changed && !n.urgent && now.Sub(n.at) < every:
		again = every - now.Sub(n.at)
	case n.changed:
		clear(n.said)
		for w, t := range n.by {
			n.said[w] = clone(*t)
		}
		n.at, n.changed, n.urgent = now, false, false
	}
	for w, t := range n.said {
		out = append(out, t.Result(w.Reference()))
	}
	return out, again
}

// clone is t with tails of its own: Add moves them in place.
func clone(t policyreport.Terminations) policyreport.Terminations {
	t.Tails = slices.Clone(t.Tails)
	return t
}

// get is a copy of w's tally.
func (ts *tallies) get(w kube.Workload) (policyreport.Terminations, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := ts.ns[w.Namespace]
	if n == nil || n.by[w] == nil {
		return policyreport.Terminations{}, false
	}
	return clone(*n.by[w]), true
}

// forget drops the tallies of namespace ns: it is gone.
func (ts *tallies) forget(ns string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	delete(ts.ns, ns)
}

// Terminations is what the terminations of workload w said: since the Reporter
// started, or since the first one its namespace's report counted.
func (r *Reporter) Terminations(w kube.Workload) (policyreport.Terminations, bool) {
	return r.tallies.get(w)
}

// The events a termination gives its workload.
const (
	EventTerminationLate = "NapTerminationLate"
	EventTerminationCut  = "NapTerminationCut"
)

// counted counts the verdicts new in a pod update: each container's once, when its
// final status first carries nap's line (a pod first seen already terminated, at the
// start, is not counted again). A late or cut one is a Warning event on the workload.
func (r *Reporter) counted(old, cur *podSummary) {
	if cur == nil || cur.verdicts == nil {
		return
	}
	w := cur.workload()
	var paths []string
	var pooled bool
	var pod *corev1.Pod // filled once, for the first new verdict
	for _, v := range *cur.verdicts {
		if old != nil && old.verdicts != nil && slices.ContainsFunc(*old.verdicts, func(o containerVerdict) bool { return o.container == v.container }) {
			continue
		}
		if pod == nil {
			pod = &corev1.Pod{}
			cur.fill(pod)
			paths, pooled = r.pathsOf(pod)
		}
		v.kind = CountedAs(v.kind, pooled)
		terminations.WithLabelValues(v.kind).Inc()
		for _, p := range paths {
			pathTerminations.WithLabelValues(p, v.kind).Inc()
			if v.kind == nap.Quiet {
				pathTails.WithLabelValues(p).Observe(v.last.Seconds())
			}
		}
		r.tallies.add(w, cur.Name, v, paths, time.Now())
		if r.Learn != nil {
			o := traffic.Observation{Paths: paths, Kind: v.kind, End: v.end, Last: v.last, Pod: cur.Namespace + "/" + cur.Name, At: time.Now()}
			if pooled {
				wt, _ := waitOf(pod, v.container)
				o.PoolUnread = wt.Requests == 0
			}
			r.Learn(o)
		}
		if v.kind != nap.Late && v.kind != nap.Cut {
			continue
		}
		reason, why := EventTerminationLate, "traffic still reached it at the end of its wait: a route outran the delay"
		if v.kind == nap.Cut {
			reason, why = EventTerminationCut, "its wait never ended: the grace period or a node shutdown's budget ran out first"
		}
		msg := fmt.Sprintf("pod %s, container %s: %s", cur.Name, v.container, why)
		r.Log.Info("termination", "workload", w.String(), "pod", cur.Name, "container", v.container, "verdict", v.kind)
		if r.Recorder != nil {
			r.Recorder.Event(objectOf(w), corev1.EventTypeWarning, reason, msg)
		}
	}
}

// pathsOf are the names of the traffic paths that reach pod p, from the
// caches (its namespace's Services and the front doors that name them): what its
// verdict is counted for; pooled tells whether a client that pools its connections
// reaches it (traffic.Need.Pooled). None where they cannot be read (logged).
func (r *Reporter) pathsOf(p *corev1.Pod) (names []string, pooled bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v := &nsView{r: r, ctx: ctx, ns: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}}}
	svcs, fronts, err := v.reaching(p)
	if err != nil {
		r.Log.Info("the paths that reach a terminated pod could not be read", "pod", p.Namespace+"/"+p.Name, "error", err.Error())
		return nil, false
	}
	for _, path := range traffic.PathsOf(svcs, fronts) {
		names = append(names, path.Name)
	}
	return names, len((*traffic.Calibration)(nil).Route(svcs, fronts).Pooled) > 0
}

// workload is the summarised pod's workload (kube.WorkloadOf).
func (s *podSummary) workload() kube.Workload {
	var p corev1.Pod
	s.fill(&p)
	return kube.WorkloadOf(&p)
}

// CountedAs is what the Reporter counts a termination of kind (VerdictKind) as, where
// a client that pools its connections reached the pod (pooled: traffic.Need.Pooled) or
// not: a held one is late where one did (the pool still sent over its connections at
// the end, and opens new ones once the app closes them: refused), nap's word elsewhere
// (a keep-alive client, which the app's drain ends).
func CountedAs(kind string, pooled bool) string {
	if kind == nap.Held && pooled {
		return nap.Late
	}
	return kind
}

// VerdictKind is what the Reporter counts container name's termination in p as, before
// the paths that reached it (CountedAs): nap's verdict, or sparse (one of Verdicts);
// false where it left no line. The lab's proof holds the same reading against what its
// probe saw.
func VerdictKind(p *corev1.Pod, container string) (string, bool) {
	for _, v := range verdictsOf(p) {
		if v.container == container {
			return v.kind, true
		}
	}
	return "", false
}
