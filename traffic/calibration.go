package traffic

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/wait"
)

// The stored calibration's shape: a JSON document that names its version, so that what
// an older napctl stored is read as it was written, or refused by name.
const (
	CalibrationAPIVersion = "calibrate.nap.dev/v1"
	CalibrationKind       = "Calibration"
)

// Calibration is what napctl calibrate measured, per path: the document it stores
// (--save) and that napctl lint --calibration reads, to tell each workload the delay its
// own paths need. docs/calibrate.md describes its fields.
type Calibration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Measured is when the calibration ended.
	Measured time.Time `json:"measured"`
	// Namespace is where it ran; Rounds how many rounds it made.
	Namespace string `json:"namespace,omitempty"`
	Rounds    int    `json:"rounds"`
	// MarginS is what a path's delay adds to its longest tail (then rounded up to whole
	// seconds).
	MarginS float64 `json:"margin_seconds"`
	// Paths are the measured paths, in All's order.
	Paths []PathTail `json:"paths"`
	// Learned, when set, is what production taught (WithLearned): never stored with
	// the calibration.
	Learned *Learned `json:"-"`
}

// PathTail is one path's tails: how long after a pod's termination began that path still
// sent it requests, over the calibration's samples.
type PathTail struct {
	Name    string  `json:"name"` // Path.Name
	Samples int     `json:"samples"`
	P50     float64 `json:"p50_seconds"`
	P99     float64 `json:"p99_seconds"`
	Max     float64 `json:"max_seconds"`
	// DelayS is the delay the path needs: Max plus the margin, rounded up to whole
	// seconds (DelayFor).
	DelayS float64 `json:"delay_seconds"`
	// Parameters are what the path's tail depends on, as calibrate set them (a load
	// balancer's annotations: its health checks).
	Parameters map[string]string `json:"parameters,omitempty"`
}

// DelayFor is the delay a path with this longest tail needs: the tail plus margin,
// rounded up to whole seconds. napctl calibrate's recommendation is DelayFor its
// slowest path.
func DelayFor(tail, margin time.Duration) time.Duration {
	return time.Duration(math.Ceil((tail + margin).Seconds())) * time.Second
}

// Needs is the delay that the slowest of paths needs by c, and that path's name; ok is
// false when c measured none of them (the fleet's delay then holds).
func (c *Calibration) Needs(paths []Path) (delay time.Duration, path string, ok bool) {
	for _, p := range paths {
		t, found := c.Tail(p.Name)
		if !found || t.Samples == 0 {
			continue
		}
		if d := seconds(t.DelayS); !ok || d > delay {
			delay, path, ok = d, p.Name, true
		}
	}
	return delay, path, ok
}

// Need is what the paths that reach a pod need, by a calibration.
type Need struct {
	// Delay is what the slowest measured path needs (PathTail.DelayS); Path names it,
	// Service is the Service it reaches the pod through, Tail its figures. Path "": no
	// measured path reaches the pod.
	Delay   time.Duration
	Path    string
	Service string
	Tail    PathTail
	// Calibrated is when the calibration ended.
	Calibrated time.Time
	// Reached are the names of every path that reaches the pod; Learned, when set,
	// says that the wait its route learned from production decides Delay
	// (LearnedRoute.Need), and why.
	Reached []string
	Learned string
	// Unmeasured are the paths that reach the pod with no measurement that holds for
	// them, each as "PATH via Service NAME (why)": the fleet's wait holds for them.
	Unmeasured []string
	// cannot are the names of those that napctl calibrate cannot measure
	// (Path.Unmeasurable), once each; can tells whether it can measure any of them.
	cannot []string
	can    bool
	// Pooled are the paths that reach the pod through clients that pool their
	// connections (Path.Pools), each as "PATH via Service NAME", measured or not: an
	// adaptive wait watches requests for them.
	Pooled []string
}

// Measured tells whether a measured path reaches the pod.
func (n Need) Measured() bool { return n.Path != "" }

// Why says, for people, which path the need is of and what was measured of it.
func (n Need) Why() string {
	if !n.Measured() {
		return ""
	}
	if n.Learned != "" {
		return n.Learned
	}
	p, _ := Lookup(n.Path)
	return fmt.Sprintf("Service %s reaches the pod through the %s, whose tail napctl calibrate measured at %.1f s (the longest of %d samples, %s)",
		n.Service, p.Title, n.Tail.Max, n.Tail.Samples, n.Calibrated.Format("2006-01-02"))
}

// Route is what the paths of svcs, the Services that select a pod, need by c: the
// paths each Service reaches the pod through (Reaching; fronts tells which front doors
// name a Service), the slowest that c measured, and those it did not. A
// measurement holds for a Service only as it was made: a path calibrated with
// parameters (a load balancer's annotations, its health checks) holds for a Service
// that carries the same.
func (c *Calibration) Route(svcs []*corev1.Service, fronts func(service string) kube.Fronts) Need {
	if c == nil { // no calibration: every path unmeasured
		c = &Calibration{}
	}
	n := Need{Calibrated: c.Measured}
	seen := map[string]bool{} // PATH via SERVICE, said once
	for _, svc := range svcs {
		for _, p := range Reaching(svc, fronts(svc.Name)) {
			if seen[p.Name+"/"+svc.Name] {
				continue
			}
			seen[p.Name+"/"+svc.Name] = true
			if !slices.Contains(n.Reached, p.Name) {
				n.Reached = append(n.Reached, p.Name)
			}
			if p.Pools != nil && p.Pools(svc, fronts(svc.Name)) {
				n.Pooled = append(n.Pooled, fmt.Sprintf("%s via Service %s", p.Name, svc.Name))
			}
			t, found := c.Tail(p.Name)
			switch {
			case !found || t.Samples == 0:
				n.Unmeasured = append(n.Unmeasured, fmt.Sprintf("%s via Service %s (not calibrated)", p.Name, svc.Name))
			case !sameParameters(t.Parameters, svc.Annotations):
				n.Unmeasured = append(n.Unmeasured, fmt.Sprintf("%s via Service %s (its annotations are not those calibrated)", p.Name, svc.Name))
			default:
				if d := seconds(t.DelayS); !n.Measured() || d > n.Delay {
					n.Delay, n.Path, n.Service, n.Tail = d, p.Name, svc.Name, t
				}
				continue
			}
			switch {
			case !p.Unmeasurable:
				n.can = true
			case !slices.Contains(n.cannot, p.Name):
				n.cannot = append(n.cannot, p.Name)
			}
		}
	}
	return n.learn(c.Learned)
}

// PodWait is the wait of a pod that svcs select (fronts: the front doors that name
// each), from the fleet's wait of the kind it chose, with c (nil: none stored): the wait
// its routes need (Need.Wait), and why, for its ReasonAnnotation ("" where the routes
// change nothing). Without a calibration only the request signal can change, for an
// adaptive wait without one. One rule for the webhook at admission and for the live
// wait the controller keeps for running pods. An error is a hold no wait may have; the
// fleet's wait stands.
func PodWait(c *Calibration, fleet wait.Wait, svcs []*corev1.Service, fronts func(service string) kube.Fronts) (wait.Wait, string, error) {
	if c == nil && (!fleet.IsAdaptive() || fleet.Requests > 0) { // nothing the routes change
		return fleet, "", nil
	}
	n := c.Route(svcs, fronts)
	got := n.Wait(fleet)
	if err := got.Check(); err != nil { // a calibrated hold no wait may have
		return fleet, "", fmt.Errorf("the wait for %s: %w", n.Path, err)
	}
	if c == nil { // only a pooling client's request signal
		return got, n.RequestsReason(got), nil
	}
	return got, n.Reason(got), nil
}

// learn is n with what the pod's route learned from production (l): its wait where it
// is more than the measured paths need (never less), and, once the route's tails
// settled, no path left unmeasured, so that it may hold less than the fleet's wait.
func (n Need) learn(l *Learned) Need {
	r, ok := l.Lookup(n.Reached)
	if !ok {
		return n
	}
	d, why, _ := r.Need()
	if r.settled() {
		n.Unmeasured, n.cannot, n.can = nil, nil, false
	}
	if !n.Measured() || d > n.Delay {
		slowest := r.Paths[strings.LastIndex(r.Paths, "+")+1:]
		n.Delay, n.Path, n.Service, n.Tail, n.Learned = d, slowest, "", PathTail{}, why
	}
	return n
}

// sameParameters tells whether a Service's annotations hold every calibrated parameter.
func sameParameters(params, annotations map[string]string) bool {
	for k, v := range params {
		if got, ok := annotations[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Requires is the least a pod these paths reach must hold (what Wait gives it from
// fleet, the fleet's wait of the pod's kind: a fixed delay, or an adaptive wait's MIN)
// and why, for a pod whose hook may hold less (its routes grew after its admission);
// ok is false when no path reaches the pod.
func (n Need) Requires(fleet wait.Wait) (hold time.Duration, why string, ok bool) {
	if !n.Measured() && len(n.Unmeasured) == 0 {
		return 0, "", false
	}
	hold = n.Wait(fleet).Holds()
	if n.measuredDecides(hold) {
		return hold, n.Why(), true
	}
	if len(n.Unmeasured) == 1 {
		return hold, fmt.Sprintf("%s reaches the pod, and no calibration measured it: at least the fleet's %v", n.Unmeasured[0], hold), true
	}
	return hold, fmt.Sprintf("%s reach the pod, and no calibration measured them: at least the fleet's %v", strings.Join(n.Unmeasured, ", "), hold), true
}

// measuredDecides tells whether the slowest measured path decides hold, what the pod
// must hold, rather than the fleet's wait that unmeasured paths hold it to.
func (n Need) measuredDecides(hold time.Duration) bool { return n.Measured() && n.Delay >= hold }

// Shortfall is what a wait lacks for the paths that reach its pod (Need.Below).
type Shortfall struct {
	// Holds is the least the wait holds (wait.Wait.Holds); Need what the paths need.
	Holds, Need time.Duration
	// Why says, for people, what decides Need: the slowest measured path and its tail,
	// or the unmeasured paths that hold the pod to the fleet's wait.
	Why string
	// Remedy is what else ends the shortfall: what shortens the deciding path's tail,
	// or measuring the unmeasured paths; "" where nothing else does (every unmeasured
	// path one napctl calibrate cannot open).
	Remedy string
}

// Below is the one judgement of a pod's wait w against the paths that reach it: what
// they need (Requires, from fleet, the fleet's wait of w's kind) where w holds less
// (wait.Wait.Holds: an adaptive wait at least its MIN); ok false where w holds enough
// or no path reaches the pod. lint's delay-below-path asks it, on manifests, for
// napctl status, and for the Reporter on live pods.
func (n Need) Below(w, fleet wait.Wait) (s Shortfall, ok bool) {
	need, why, reached := n.Requires(fleet)
	if !reached || w.Holds() >= need {
		return Shortfall{}, false
	}
	s = Shortfall{Holds: w.Holds(), Need: need, Why: why,
		Remedy: "measure the paths that reach it with napctl calibrate (--store keeps the calibration in the cluster)"}
	switch them := map[bool]string{true: "it", false: "them"}[len(n.cannot) == 1]; {
	case len(n.cannot) > 0 && n.can:
		s.Remedy = fmt.Sprintf("measure the paths that reach it with napctl calibrate where it can (%s it cannot open: the fleet's wait holds for %s)",
			strings.Join(n.cannot, ", "), them)
	case len(n.cannot) > 0:
		s.Remedy = ""
	}
	if n.measuredDecides(need) {
		p, _ := Lookup(n.Path)
		s.Remedy = "shorten the path's tail: " + p.Remedy
	}
	return s, true
}

// Reason says why a pod got w (n.Wait of the fleet's), for the pod's
// wait.ReasonAnnotation: the path it holds for and that path's measured tail, the
// unmeasured paths that hold it to the fleet's wait, or that no path reaches it.
func (n Need) Reason(w wait.Wait) string {
	hold := w.DelayArg()
	if w.IsAdaptive() {
		hold = "at least " + wait.Arg(w.Min)
	}
	var s string
	switch {
	case n.Learned != "":
		s = fmt.Sprintf("holds %s: %s", hold, n.Learned)
	case n.Measured():
		s = fmt.Sprintf("holds %s for %s via Service %s: its tail measured at %.1f s (p99 %.1f s, %d samples, calibrated %s)",
			hold, n.Path, n.Service, n.Tail.Max, n.Tail.P99, n.Tail.Samples, n.Calibrated.Format("2006-01-02"))
	case len(n.Unmeasured) == 0:
		return fmt.Sprintf("holds %s, the fleet's: no Service path reaches the pod", hold)
	default:
		s = fmt.Sprintf("holds %s, the fleet's", hold)
	}
	if len(n.Unmeasured) > 0 {
		s += "; not calibrated, so at least the fleet's: " + strings.Join(n.Unmeasured, ", ")
	}
	if r := n.RequestsReason(w); r != "" {
		s += "; " + r
	}
	return s
}

// RequestsReason says why w watches requests, where its pod's routes made it (Wait):
// the pooling paths that reach the pod; "" where they did not.
func (n Need) RequestsReason(w wait.Wait) string {
	if len(n.Pooled) == 0 || !w.IsAdaptive() || w.Requests == 0 {
		return ""
	}
	return fmt.Sprintf("watches requests (--requests %s): %s, whose clients send over connections they keep",
		wait.Arg(w.Requests), strings.Join(n.Pooled, ", "))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Wait is the wait for a pod that these paths reach, from the fleet's (the installed
// default, or what the pod's nap.dev/wait chose): it holds the pod for what its slowest
// measured path needs, and for at least the fleet's where a path is unmeasured. A fixed
// delay becomes that hold; an adaptive wait's MIN does, its MAX at least that. The
// pod's routes decide, not the fleet's slowest: a pod reached only in the cluster holds
// for the cluster's tail. Without a measured path, the fleet's wait as it is. Either
// way an adaptive wait also watches requests where a pooling client reaches the pod
// (Pooled), unless it sets its own WITHIN.
func (n Need) Wait(fleet wait.Wait) wait.Wait {
	w := n.requests(fleet)
	if !n.Measured() {
		return w
	}
	hold := n.Delay
	if len(n.Unmeasured) > 0 {
		hold = max(hold, w.Holds())
	}
	if w.IsAdaptive() {
		w.Min, w.Delay = hold, max(w.Delay, hold)
	} else {
		w.Delay = hold
	}
	if w.Delay != fleet.Delay {
		w.DelayText = "" // the fleet's spelling was of its own delay
	}
	return w
}

// requests is w watching requests (wait.PooledRequests) where it misses a pool
// (MissesPool).
func (n Need) requests(w wait.Wait) wait.Wait {
	if n.MissesPool(w) {
		w.Requests = wait.PooledRequests
	}
	return w
}

// MissesPool tells whether w is an adaptive wait that watches new connections alone
// where a client that pools its connections reaches the pod (Pooled): the wait can end
// while that client still sends, over connections it opened before. The webhook gives
// such a pod the request signal (Wait); lint and the Reporter find the pods that lack
// it.
func (n Need) MissesPool(w wait.Wait) bool {
	return len(n.Pooled) > 0 && w.IsAdaptive() && w.Requests == 0
}

// PoolMessage says, for people, what MissesPool found: what the wait watches, and the
// paths it misses.
func (n Need) PoolMessage() string {
	verb := "reaches"
	if len(n.Pooled) > 1 {
		verb = "reach"
	}
	return fmt.Sprintf("the adaptive wait watches new connections alone, but %s %s the pod through clients that send over connections they keep: the wait can end while they still send",
		strings.Join(n.Pooled, " and "), verb)
}

// Tail is the measured tail of the path named name.
func (c *Calibration) Tail(name string) (PathTail, bool) {
	i := slices.IndexFunc(c.Paths, func(t PathTail) bool { return t.Name == name })
	if i < 0 {
		return PathTail{}, false
	}
	return c.Paths[i], true
}

// ReadCalibration reads a stored calibration; name (a file's) names it in errors.
func ReadCalibration(r io.Reader, name string) (*Calibration, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var c Calibration
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: not a calibration (napctl calibrate --save): %v", name, err)
	}
	if c.APIVersion != CalibrationAPIVersion || c.Kind != CalibrationKind {
		return nil, fmt.Errorf("%s: apiVersion %q, kind %q: want %q, %q (napctl calibrate --save)", name, c.APIVersion, c.Kind, CalibrationAPIVersion, CalibrationKind)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &c, nil
}

func (c *Calibration) validate() error {
	var errs []error
	seen := map[string]bool{}
	for i, t := range c.Paths {
		if _, ok := Lookup(t.Name); !ok {
			errs = append(errs, fmt.Errorf("paths[%d]: path %q: want one of %s", i, t.Name, strings.Join(Names(), ", ")))
		}
		if seen[t.Name] {
			errs = append(errs, fmt.Errorf("paths[%d]: path %q twice", i, t.Name))
		}
		seen[t.Name] = true
		if t.Samples < 0 || t.P50 < 0 || t.P99 < 0 || t.Max < 0 || t.DelayS < 0 || t.DelayS < t.Max {
			errs = append(errs, fmt.Errorf("paths[%d] (%s): negative figures, or a delay below the longest tail", i, t.Name))
		}
	}
	if c.MarginS < 0 {
		errs = append(errs, errors.New("margin_seconds is negative"))
	}
	return errors.Join(errs...)
}
