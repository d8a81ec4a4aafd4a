package calibrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/probe"
	"github.com/nap-k8s/nap/serve"
)

// answers records, per path and pod, the last answer's time since the pod's termination
// began, and whether the pod answered at all.
type answers struct {
	mu        sync.Mutex
	tail      map[string]map[string]float64 // path → pod → longest terminating-for
	answered  map[string]map[string]bool    // path → pod → answered at all
	lastSeen  map[string]time.Time          // pod → when it last answered on any path
	failed    map[string]map[probe.Kind]int
	total     map[string]int
	start     time.Time
	firstFail map[string]float64 // path → seconds from start of its first failure
}

func (a *answers) add(path string, r probe.Result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.total[path]++
	if r.Kind != probe.OK {
		if a.failed[path] == nil {
			a.failed[path] = map[probe.Kind]int{}
			a.firstFail[path] = r.Due.Sub(a.start).Seconds()
		}
		a.failed[path][r.Kind]++
		return
	}
	pod, term := r.Headers[0], r.Headers[1]
	if pod == "" {
		return
	}
	a.lastSeen[pod] = time.Now()
	if a.answered[path] == nil {
		a.answered[path] = map[string]bool{}
	}
	a.answered[path][pod] = true
	if term == "" {
		return
	}
	if s, err := strconv.ParseFloat(term, 64); err == nil {
		if a.tail[path] == nil {
			a.tail[path] = map[string]float64{}
		}
		a.tail[path][pod] = max(a.tail[path][pod], s)
	}
}

func measure(ctx context.Context, cs kubernetes.Interface, opts Options, paths []Path) (*Report, error) {
	a := &answers{tail: map[string]map[string]float64{}, answered: map[string]map[string]bool{}, lastSeen: map[string]time.Time{},
		failed: map[string]map[probe.Kind]int{}, total: map[string]int{}, start: time.Now(), firstFail: map[string]float64{}}
	for _, p := range paths {
		limit := time.Minute
		if provisioned(p.Name) {
			// A load balancer sends to a node once its checks passed, a cloud's after
			// it provisioned it.
			limit = cmp.Or(opts.Paths.LBWait, DefaultLBWait)
		}
		if err := waitAnswers(ctx, p, opts.Paths.DNS, limit); err != nil {
			return nil, err
		}
	}
	probing, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make([]error, len(paths))
	for i, p := range paths {
		wg.Go(func() {
			// New connections only: what reaches a deleted pod over them is what routes
			// still send it; a kept connection would reach it until it is closed.
			po := probe.Options{URL: p.URL, Rate: opts.Rate, Modes: []probe.Mode{probe.New}, DNS: opts.Paths.DNS,
				RecordHeaders: []string{serve.PodHeader, serve.TerminatingHeader}}
			errs[i] = probe.Run(probing, po, func(r probe.Result) { a.add(p.Name, r) })
		})
	}
	defer func() { stop(); wg.Wait() }()
	rep := &Report{Namespace: opts.Namespace}
	for round := range opts.Rounds {
		if err := waitReady(ctx, cs, opts); err != nil {
			return nil, err
		}
		if err := waitReached(ctx, cs, opts, a, paths, reachLimit); err != nil {
			return nil, err
		}
		rs, err := restart(ctx, cs, opts, a, round)
		if err != nil {
			return nil, err
		}
		if scaleDowns(opts) {
			if err := waitReady(ctx, cs, opts); err != nil {
				return nil, err
			}
			if err := waitReached(ctx, cs, opts, a, paths, reachLimit); err != nil {
				return nil, err
			}
			more, err := scaleDown(ctx, cs, opts, a, round)
			if err != nil {
				return nil, err
			}
			rs = append(rs, more...)
		}
		a.mu.Lock()
		for _, r := range rs {
			for _, p := range paths {
				// Nothing after its termination began, where the path did send it
				// requests before: a tail of 0 (routes forgot it first).
				if t, ok := a.tail[p.Name][r.Pod]; ok {
					r.Tails[p.Name] = t
				} else if a.answered[p.Name][r.Pod] {
					r.Tails[p.Name] = 0
				}
			}
		}
		a.mu.Unlock()
		for _, r := range rs {
			opts.Log("round %d of %d (%.1fs): pod %s (%s), tails %v", round+1, opts.Rounds, time.Since(a.start).Seconds(), r.Pod, r.Disruption, r.Tails)
		}
		rep.Rounds = append(rep.Rounds, rs...)
	}
	stop()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rep.Paths = tails(paths, rep.Rounds)
	for i := range rep.Paths {
		s := &rep.Paths[i]
		s.FailedKinds, s.Requests = a.failed[s.Path.Name], a.total[s.Path.Name]
		for _, n := range s.FailedKinds {
			s.Failed += n
		}
		if s.Failed > 0 {
			opts.Log("path %s: %d requests failed %v, the first %.1fs into the calibration", s.Path.Name, s.Failed, s.FailedKinds, a.firstFail[s.Path.Name])
		}
	}
	recommend(rep, opts)
	return rep, nil
}

// reachLimit bounds waitReached: a route that has not sent a ready pod a request a
// minute after it was ready is not one a round can wait for.
const reachLimit = time.Minute

// waitReached waits, at most limit, until every path has sent every calibration pod
// there is a request it answered, so that no pod goes before each route reached it (a
// pod a route never reached gives that route no sample). A kube-proxy that syncs late,
// or a load balancer whose checks pass late, reaches a new pod seconds after it is
// ready. Past limit the round goes on, and the log names the routes and pods not
// reached.
func waitReached(ctx context.Context, cs kubernetes.Interface, opts Options, a *answers, paths []Path, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		pods, err := podNames(ctx, cs, opts.Namespace)
		if err != nil {
			return fmt.Errorf("listing the calibration pods: %w", err)
		}
		missing := a.unreached(paths, pods)
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			opts.Log("after %v, not every path reached every pod: %s; their rounds may have no sample there", limit, strings.Join(missing, ", "))
			return nil
		}
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// unreached are the "path→pod" pairs, sorted, where the path has not had an answer
// from the pod.
func (a *answers) unreached(paths []Path, pods map[string]bool) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var missing []string
	for _, p := range paths {
		for pod := range pods {
			if !a.answered[p.Name][pod] {
				missing = append(missing, p.Name+"→"+pod)
			}
		}
	}
	slices.Sort(missing)
	return missing
}

// scaleDowns tells whether the rounds include a scale-down: when a path is a load
// balancer's.
func scaleDowns(opts Options) bool {
	for _, p := range Enabled(opts.Paths) {
		if p.NodeChecked {
			return true
		}
	}
	return false
}

// waitAnswers waits (at most limit), one request at a time, names resolved at dns
// (probe.Options.DNS), until the path answers 200 three times in a row: a new
// Service's rules reach every proxy a moment after it exists, and no load starts
// before its target answers.
func waitAnswers(ctx context.Context, p Path, dns string, limit time.Duration) error {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil, DialContext: probe.Dialer(time.Second, dns).DialContext}}
	deadline := time.Now().Add(limit)
	var err error
	for ok := 0; ok < 3; {
		var resp *http.Response
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
		if resp, err = c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ok++
				continue
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		ok = 0
		if time.Now().After(deadline) {
			return fmt.Errorf("path %s (%s) does not answer after %v: %w", p.Name, p.URL, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// restart is a round's rolling restart of the calibration Deployment, as `kubectl
// rollout restart` makes one (maxSurge 1, maxUnavailable 0: an old pod goes the moment
// a new one is ready). Each old pod is a sample. A rollout, not a lone deletion:
// kube-proxy applies changes at most once per minSyncPeriod, so the first change after
// a quiet spell reaches the rules at once and the ones that follow it wait, and a
// rollout is a train of changes. A lone deletion in a quiet cluster understates the tail.
//
// Each deleted pod is removed at once when no EndpointSlice has it ready and no request
// has reached it for opts.Quiet (or its hold ended).
func restart(ctx context.Context, cs kubernetes.Interface, opts Options, a *answers, round int) ([]Round, error) {
	ns := opts.Namespace
	old, err := podNames(ctx, cs, ns)
	if err != nil {
		return nil, err
	}
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, RoundAnnotation, strconv.Itoa(round+1))
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return nil, fmt.Errorf("restarting the calibration Deployment: %w", err)
	}
	return follow(ctx, cs, opts, a, round, RollingRestart, old, len(old))
}

// scaleDown is a round's scale-down: the Deployment scaled to one replica (every other
// pod deleted, and with them every node but one left without a pod) and, once those
// pods are gone, back to opts.Replicas. Each deleted pod is a sample.
func scaleDown(ctx context.Context, cs kubernetes.Interface, opts Options, a *answers, round int) ([]Round, error) {
	ns := opts.Namespace
	old, err := podNames(ctx, cs, ns)
	if err != nil {
		return nil, err
	}
	scale := func(n int32) error {
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
		if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("scaling the calibration Deployment to %d: %w", n, err)
		}
		return nil
	}
	if err := scale(1); err != nil {
		return nil, err
	}
	out, err := follow(ctx, cs, opts, a, round, ScaleDown, old, len(old)-1)
	if err != nil {
		return out, err
	}
	return out, scale(opts.Replicas)
}

// follow waits until want of the pods in old have been deleted and their tails taken,
// each removed at once when no EndpointSlice has it ready and no request has reached it
// for opts.Quiet (or its hold ended).
func follow(ctx context.Context, cs kubernetes.Interface, opts Options, a *answers, round int, disruption string, old map[string]bool, want int) ([]Round, error) {
	ns := opts.Namespace
	deleted := map[string]time.Time{} // old pod → when its deletion was seen
	var out []Round
	deadline := time.Now().Add(opts.Hold + 3*time.Minute)
	for len(out) < want {
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return out, fmt.Errorf("the %s of round %d has not replaced every pod after %v", disruption, round+1, opts.Hold+3*time.Minute)
		}
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + Name})
		if err != nil {
			return out, err
		}
		present := map[string]bool{}
		for _, p := range l.Items {
			present[p.Name] = true
			if _, seen := deleted[p.Name]; old[p.Name] && p.DeletionTimestamp != nil && !seen {
				deleted[p.Name] = time.Now()
			}
		}
		for name := range old {
			if _, seen := deleted[name]; !seen && !present[name] {
				deleted[name] = time.Now() // gone between two looks
			}
		}
		for name, at := range deleted {
			if at.IsZero() {
				continue // done
			}
			r := Round{Round: round + 1, Pod: name, Disruption: disruption, Tails: map[string]float64{}}
			if time.Since(at) > opts.Hold {
				r.Censored = true
			} else {
				in, err := readyInSlices(ctx, cs, ns, name)
				if err != nil {
					return out, err
				}
				a.mu.Lock()
				last := a.lastSeen[name]
				a.mu.Unlock()
				if last.Before(at) {
					last = at
				}
				if in || time.Since(last) < opts.Quiet {
					continue
				}
			}
			zero := int64(0)
			if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
				return out, fmt.Errorf("removing pod %s: %w", name, err)
			}
			deleted[name] = time.Time{}
			out = append(out, r)
		}
	}
	return out, nil
}

// RoundAnnotation on the calibration pods' template is the round that rolled them out.
const RoundAnnotation = "nap.dev/calibrate-round"
