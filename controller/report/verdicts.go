package report

import (
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/wait"
)

// Verdicts are the kinds a termination is counted as: nap's own (nap.Verdict), and
// sparse, a quiet one the pod's traffic was too thin to trust (nap.Verdict.Sparse).
var Verdicts = verdictKinds[:]

// containerVerdict is one container's verdict, as its pod's final status gives it.
type containerVerdict struct {
	container string
	kind      string // one of Verdicts
	last      time.Duration
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
		out = append(out, containerVerdict{container: intern(cs.Name), kind: intern(kind), last: v.Last})
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

// tailSamples is how many recent observed tails (Verdict.Last of quiet terminations) a
// workload keeps for its quantiles, in milliseconds: 256 bytes a workload that
// terminated, tens of thousands of them in a fleet.
const tailSamples = 64

// Tally is what one workload's terminations said.
type Tally struct {
	counts   [len(verdictKinds)]int // by kind, as Verdicts orders them
	LastLate time.Time              // the last late or cut one, zero: none
	LastPod  string                 // its pod
	tails    []uint32               // milliseconds
}

// verdictKinds are Verdicts' places in Tally's counts.
var verdictKinds = [...]string{nap.Quiet, nap.Sparse, nap.Late, nap.Blind, nap.Cut}

// Count is how many of the workload's terminations were of kind (one of Verdicts).
func (t Tally) Count(kind string) int {
	if i := slices.Index(verdictKinds[:], kind); i >= 0 {
		return t.counts[i]
	}
	return 0
}

// Tail is the q-quantile (0 to 1) of the observed tails of the workload's recent quiet
// terminations, and how many there are.
func (t Tally) Tail(q float64) (time.Duration, int) {
	if len(t.tails) == 0 {
		return 0, 0
	}
	s := slices.Sorted(slices.Values(t.tails))
	i := min(len(s)-1, int(q*float64(len(s))))
	return time.Duration(s[i]) * time.Millisecond, len(s)
}

// Total is how many terminations the workload had.
func (t Tally) Total() int {
	n := 0
	for _, c := range t.counts {
		n += c
	}
	return n
}

// tallies are the Reporter's counts, by workload, from the pod watch.
type tallies struct {
	mu sync.Mutex
	by map[WorkloadRef]*Tally
}

// add counts one container's termination of pod's workload.
func (ts *tallies) add(w WorkloadRef, pod string, v containerVerdict, at time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.by == nil {
		ts.by = map[WorkloadRef]*Tally{}
	}
	t := ts.by[w]
	if t == nil {
		t = &Tally{}
		ts.by[w] = t
	}
	if i := slices.Index(verdictKinds[:], v.kind); i >= 0 {
		t.counts[i]++
	}
	switch v.kind {
	case nap.Quiet:
		if len(t.tails) == tailSamples {
			t.tails = append(t.tails[:0], t.tails[1:]...)
		}
		t.tails = append(t.tails, uint32(min(v.last/time.Millisecond, 1<<32-1)))
	case nap.Late, nap.Cut:
		t.LastLate, t.LastPod = at, pod
	}
}

// get is a copy of w's tally.
func (ts *tallies) get(w WorkloadRef) (Tally, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.by[w]
	if !ok {
		return Tally{}, false
	}
	c := *t
	c.tails = slices.Clone(t.tails)
	return c, true
}

// forget drops the tallies of namespace ns's workloads: it is gone.
func (ts *tallies) forget(ns string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for w := range ts.by {
		if w.Namespace == ns {
			delete(ts.by, w)
		}
	}
}

// Terminations is what the terminations of workload w said since the Reporter started.
func (r *Reporter) Terminations(w WorkloadRef) (Tally, bool) { return r.tallies.get(w) }

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
	for _, v := range *cur.verdicts {
		if old != nil && old.verdicts != nil && slices.ContainsFunc(*old.verdicts, func(o containerVerdict) bool { return o.container == v.container }) {
			continue
		}
		terminations.WithLabelValues(v.kind).Inc()
		r.tallies.add(w, cur.Name, v, time.Now())
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

// workload is the summarised pod's workload (hook.WorkloadOf).
func (s *podSummary) workload() WorkloadRef {
	var p corev1.Pod
	s.fill(&p)
	return hook.WorkloadOf(&p)
}
