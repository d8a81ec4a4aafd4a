package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nap-k8s/nap/controller/report"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/test/forensic"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// terminations records, for each pod of the demo service in a namespace, how long it
// took from its deletion to its app container's exit: the preStop hook's hold and the
// app's own shutdown (the plain app exits at once on SIGTERM). The deletion began at
// deletionTimestamp less the grace period (the timestamp is the deadline).
type terminations struct {
	mu    sync.Mutex
	lives map[string]*podLife // every pod seen, by name: the record of a failure
	took  map[string]time.Duration
	began map[string]time.Time // first seen: the kubelet deletes a stopped pod with grace 0
	// before are the pods already being deleted when the record began: an earlier
	// disruption's, not measured.
	before map[string]bool
	cancel context.CancelFunc
	done   chan struct{}
}

// watchTerminations starts recording in ns until stop.
func watchTerminations(t *testing.T, cs *kubernetes.Clientset, ns string) *terminations {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := metav1.ListOptions{LabelSelector: "app=app"}
	r := &terminations{lives: map[string]*podLife{}, took: map[string]time.Duration{}, began: map[string]time.Time{}, before: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	// The pods as the record begins, then their changes from there (as an informer
	// lists, then watches): a pod already being deleted is an earlier disruption's (a
	// rollout before the measurement, its pods still stopping, or stopped and not yet
	// gone); once its deletion's grace ends, the kubelet deletes it again with grace 0,
	// which would read as a 0 s hold.
	list, err := cs.CoreV1().Pods(ns).List(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		r.life(p)
		if p.DeletionTimestamp != nil {
			r.before[p.Name] = true
		}
	}
	opts.ResourceVersion = list.ResourceVersion
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer close(r.done)
		defer func() {
			if w != nil {
				w.Stop()
			}
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					// The client's timeout ends a watch: go on from the last version seen.
					// The API server may refuse it a moment (its watch cache behind:
					// "Too large resource version"): again, every 200 ms, until stopped.
					for w, err = cs.CoreV1().Pods(ns).Watch(ctx, opts); err != nil; w, err = cs.CoreV1().Pods(ns).Watch(ctx, opts) {
						if ctx.Err() != nil {
							w = nil
							return
						}
						time.Sleep(200 * time.Millisecond)
					}
					continue
				}
				if p, ok := ev.Object.(*corev1.Pod); ok {
					opts.ResourceVersion = p.ResourceVersion
					r.mu.Lock()
					r.life(p)
					r.mu.Unlock()
				}
				if ev.Type != watch.Modified && ev.Type != watch.Deleted {
					continue
				}
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil {
					continue
				}
				r.mu.Lock()
				if r.before[p.Name] {
					r.mu.Unlock()
					continue
				}
				began, seen := r.began[p.Name]
				if !seen {
					began = p.DeletionTimestamp.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
					r.began[p.Name] = began
				}
				for _, s := range p.Status.ContainerStatuses {
					// An exit before the deletion began is a pod whose first deletion
					// the record did not see (first seen when the kubelet deleted it
					// with grace 0; the pods stopping when it began are in before): no
					// time to measure. A pod measured has d ≥ 0, the whole seconds of
					// both times included.
					if d := s.State.Terminated; s.Name == "app" && d != nil && !d.FinishedAt.Time.Before(began) {
						r.took[p.Name] = d.FinishedAt.Sub(began)
					}
				}
				r.mu.Unlock()
			}
		}
	}()
	return r
}

// stop ends the recording and returns the pods' times, sorted.
func (r *terminations) stop() []time.Duration {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for _, d := range r.took {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// podLife is what a failure's record says of a pod: its address, node and times.
type podLife struct {
	ip, node                         string
	created, ready, deleting, exited time.Time
	// stopped is when a kubelet's own termination of it was first seen (the
	// DisruptionTarget condition, a terminal phase), and why.
	stopped time.Time
	reason  string
	// verdict is what nap's line in its final status reads as (report.VerdictKind);
	// "" without one; line is the line.
	verdict, line string
}

// life records what p shows (with r.mu held).
func (r *terminations) life(p *corev1.Pod) {
	l := r.lives[p.Name]
	if l == nil {
		l = &podLife{created: p.CreationTimestamp.Time}
		r.lives[p.Name] = l
	}
	if p.Status.PodIP != "" {
		l.ip = p.Status.PodIP
	}
	if p.Spec.NodeName != "" {
		l.node = p.Spec.NodeName
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && l.ready.IsZero() {
			l.ready = time.Now()
		}
	}
	if p.DeletionTimestamp != nil && l.deleting.IsZero() {
		l.deleting = time.Now()
	}
	// A kubelet's stop shows as the DisruptionTarget condition (eviction), as Ready
	// false for PodFailed (an exceeded deadline: the phase turns Failed only once the
	// containers are gone), or at last as the terminal phase.
	for _, c := range p.Status.Conditions {
		if l.stopped.IsZero() && c.Status != corev1.ConditionUnknown && (c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue ||
			c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && c.Reason == "PodFailed") {
			l.stopped, l.reason = time.Now(), c.Reason
		}
	}
	if terminal(*p) {
		if l.stopped.IsZero() {
			l.stopped = time.Now()
		}
		if p.Status.Reason != "" {
			l.reason = p.Status.Reason
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "app" && s.State.Terminated != nil {
			l.exited = s.State.Terminated.FinishedAt.Time
		}
	}
	if k, ok := report.VerdictKind(p, "app"); ok {
		l.verdict = k
		if msg, ok := terminatedMessage(p, "app"); ok {
			if v, ok := nap.ParseVerdict(msg); ok {
				l.line = v.String()
			}
		}
	}
}

// ends are the pods whose app exited after start with nap's verdict in their final
// status (forensic.End).
func (r *terminations) ends(start time.Time) []forensic.End {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []forensic.End
	for name, l := range r.lives {
		if l.verdict != "" && !l.exited.IsZero() && !l.exited.Before(start.Truncate(time.Second)) && !r.before[name] {
			out = append(out, forensic.End{Pod: name, Verdict: l.verdict, Line: l.line, Exited: l.exited})
		}
	}
	return out
}

// pods says, for a failure's record, every pod seen: its address and node, and when it
// was seen ready and deleting and when its app exited, in seconds from start (the API
// server's own times, created and exited, have whole seconds).
func (r *terminations) pods(start time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return fmt.Sprintf("%.2fs", t.Sub(start).Seconds())
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(r.lives)) {
		l := r.lives[name]
		out = append(out, fmt.Sprintf("%s %s on %s: created %s, ready %s, deleting %s, app exited %s", name, l.ip, l.node, at(l.created), at(l.ready), at(l.deleting), at(l.exited)))
	}
	return out
}

// letGo gives, for each pod deleted that a proxy let go (left: when, by address), the
// time from its deletion as seen to then, and, once its app exited, from then to the
// exit (sinceLetGo; negative: it exited first). The exit has whole seconds, cut (the
// API's timestamps): a time to it is at most the true one. A new pod given a let-go
// pod's address is not deleting.
func (r *terminations) letGo(left map[string]time.Time) (sinceDeletion, sinceLetGo map[string]time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sinceDeletion, sinceLetGo = map[string]time.Duration{}, map[string]time.Duration{}
	for name, l := range r.lives {
		at, ok := left[l.ip]
		if !ok || l.deleting.IsZero() {
			continue
		}
		sinceDeletion[name] = at.Sub(l.deleting).Round(100 * time.Millisecond)
		if !l.exited.IsZero() {
			sinceLetGo[name] = l.exited.Sub(at)
		}
	}
	return sinceDeletion, sinceLetGo
}

// stoppedOn records at as the start of the kubelet's stop of every pod seen on node that
// was neither deleting nor stopped before it (a node's shutdown, which the pods' status
// shows only once they have stopped).
func (r *terminations) stoppedOn(node string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lives {
		if l.node != node || !l.deleting.IsZero() && l.deleting.Before(at) || !l.exited.IsZero() && l.exited.Before(at.Truncate(time.Second)) {
			continue
		}
		if l.stopped.IsZero() || at.Before(l.stopped) {
			l.stopped = at
		}
	}
}

// kubeletStop is one pod a kubelet stopped: when that was first seen, when its endpoint
// went out of service and when its app exited, from then.
type kubeletStop struct {
	pod, node, reason string
	// served: its endpoint was seen ready. A pod that never served has no route to
	// leave: a replacement the kubelet of a node shutting down refuses at once
	// (NodeShutdown) is one.
	served bool
	// left and exited are from the stop's sight (negative: before it), when seen.
	left, exited         time.Duration
	leftSeen, exitedSeen bool
}

func (k kubeletStop) String() string {
	s := fmt.Sprintf("pod %s on %s stopped by its kubelet (%s): ", k.pod, k.node, k.reason)
	switch {
	case k.leftSeen:
		s += fmt.Sprintf("endpoint out of service at %+.1fs", k.left.Seconds())
	case k.served:
		s += "endpoint never out of service"
	default:
		s += "never in service"
	}
	if k.exitedSeen {
		s += fmt.Sprintf(", app exited at %+.0fs (whole seconds)", k.exited.Seconds())
	}
	return s
}

// kubeletStops are the pods a kubelet stopped, by name, with whether their endpoints
// served and when they left (endpointTimes.stop). An eviction's stop is the kubelet's
// Evicted event among events when that came first: the kubelet writes the pod's status
// only once it is killed.
func (r *terminations) kubeletStops(served map[string]bool, left map[string]time.Time, events []corev1.Event) []kubeletStop {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range events {
		l := r.lives[ev.InvolvedObject.Name]
		if ev.Reason != "Evicted" || ev.InvolvedObject.Kind != "Pod" || l == nil {
			continue
		}
		if at := ev.FirstTimestamp.Time; !at.IsZero() && (l.stopped.IsZero() || at.Before(l.stopped)) {
			l.stopped = at
		}
	}
	var out []kubeletStop
	for _, name := range slices.Sorted(maps.Keys(r.lives)) {
		l := r.lives[name]
		if l.stopped.IsZero() || !l.deleting.IsZero() && l.deleting.Before(l.stopped) {
			continue
		}
		k := kubeletStop{pod: name, node: l.node, reason: l.reason, served: served[name]}
		if at, ok := left[name]; ok {
			k.left, k.leftSeen = at.Sub(l.stopped), true
		}
		if !l.exited.IsZero() {
			k.exited, k.exitedSeen = l.exited.Sub(l.stopped.Truncate(time.Second)), true
		}
		out = append(out, k)
	}
	return out
}

// endpointTimes records when each pod's endpoint in the demo Service's EndpointSlices
// first went out of service (ready false, or gone) after it was seen ready. It lists
// them every 100 ms rather than watch: on the lab the API server's watch cache of
// EndpointSlices can lag behind etcd while they are quiet, and a watch begun then
// fails ("Too large resource version") until another slice changes.
type endpointTimes struct {
	mu    sync.Mutex
	ready map[string]bool
	left  map[string]time.Time
	end   func()
}

// watchEndpoints starts recording the EndpointSlices of Service app in ns until stop;
// it returns once it has read them.
func watchEndpoints(t *testing.T, cs *kubernetes.Clientset, ns string) *endpointTimes {
	t.Helper()
	ctx := context.Background()
	e := &endpointTimes{ready: map[string]bool{}, left: map[string]time.Time{}}
	opts := metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=app"}
	read := func(ctx context.Context) error {
		l, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, opts)
		if err != nil {
			return err
		}
		now := time.Now()
		e.mu.Lock()
		defer e.mu.Unlock()
		in := map[string]bool{}
		for _, es := range l.Items {
			for _, ep := range es.Endpoints {
				if ep.TargetRef != nil {
					in[ep.TargetRef.Name] = in[ep.TargetRef.Name] || ep.Conditions.Ready == nil || *ep.Conditions.Ready
				}
			}
		}
		for pod := range e.ready {
			if !in[pod] {
				if _, gone := e.left[pod]; !gone {
					e.left[pod] = now
				}
			}
		}
		for pod, ready := range in {
			if ready {
				e.ready[pod] = true
			}
		}
		return nil
	}
	if err := read(ctx); err != nil {
		t.Fatal(err)
	}
	e.end = every(100*time.Millisecond, func(ctx context.Context) { read(ctx) }) // a failed read is a missed sample
	return e
}

// stop ends the recording and returns the pods whose endpoints were seen ready and
// when each left.
func (e *endpointTimes) stop() (served map[string]bool, left map[string]time.Time) {
	e.end()
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.ready), maps.Clone(e.left)
}

// servedStops are the stops in ks of pods that served (kubeletStop.served).
func servedStops(ks []kubeletStop) []kubeletStop {
	return slices.DeleteFunc(slices.Clone(ks), func(k kubeletStop) bool { return !k.served })
}

// every calls fn every interval, in a goroutine of its own, until the returned end is
// called; end returns once fn has returned for the last time.
func every(interval time.Duration, fn func(context.Context)) (end func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				fn(ctx)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// TestTerminationsBefore: a measurement's record of terminations leaves out the pods
// an earlier disruption was still stopping when it began. After a rolling restart of
// pods with nap's 5 s preStop, a record started as soon as the Deployment counts the
// new pods available and no other (the old ones deleted: in their preStop, or stopped
// and not yet gone), and kept until the old ones are gone, holds no time. Before, such
// a pod, first seen when the kubelet deleted it again with grace 0, read as a 0 s
// hold: TestPathAwareDowntime failed on one in a CI-like run (2026-11-29).
func TestTerminationsBefore(t *testing.T) {
	cs := client(t)
	ctx := context.Background()
	tr := prepare(t, cs, scenario{path: clusterIPNode1, disruption: rollingRestart, variant: napBinary, expect: newClean, rounds: 1})
	restart(t, cs, tr.ns, 0)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		d, err := cs.AppsV1().Deployments(tr.ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := *d.Spec.Replicas; d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == n && d.Status.AvailableReplicas == n && d.Status.Replicas == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rolling restart of %s did not end in 2 minutes: %+v", tr.ns, d.Status)
		}
	}
	r := watchTerminations(t, cs, tr.ns)
	stopping := func() int {
		pods, err := cs.CoreV1().Pods(tr.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
		if err != nil {
			t.Fatal(err)
		}
		return len(slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp == nil }))
	}
	if n := stopping(); n == 0 {
		t.Fatal("no old pod was still stopping when the record began: the test shows nothing")
	}
	for deadline := time.Now().Add(time.Minute); stopping() > 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the old pods were still there a minute after the rollout")
		}
	}
	time.Sleep(time.Second) // the watch's last events
	if took := r.stop(); len(took) > 0 {
		t.Errorf("the record holds %v, the times of pods stopping before it began; want none", took)
	}
}
