package calibrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/probe"
	"github.com/nap-k8s/nap/serve"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// Name is the calibration workload's name: its Deployment, Service and Ingress.
const Name = "nap-calibrate"

// ManagedLabel marks the namespace calibrate created, the only kind it deletes.
const ManagedLabel = kube.ManagedByLabel

// managedBy is ManagedLabel's value.
const managedBy = "napctl-calibrate"

// Options configure Run.
type Options struct {
	Namespace string // default nap-calibrate
	// UseExisting lets Run work in a namespace it did not create; it then deletes only
	// its own objects there, not the namespace.
	UseExisting bool
	Image       string        // the napctl image, which runs napctl serve
	Replicas    int32         // default 3
	Rounds      int           // rolling restarts, one after another, each replacing every pod; default 5
	Rate        float64       // requests per second on each path; default 50
	Hold        time.Duration // the preStop hold that keeps a deleted pod serving; default 60s
	// Quiet is how long no request may reach a deleted pod, once no EndpointSlice has
	// it ready, before its tail is taken as final; default 10s.
	Quiet time.Duration
	// Paths says which traffic paths to measure (traffic.Enabled) and how to reach them:
	// the ClusterIP always, the NodePort unless NodeAddress is "-", the ingress with a
	// class and URL (its controller answers for /nap-calibrate).
	Paths  traffic.Config
	Margin time.Duration // added to the longest tail; default 2s
	Drain  time.Duration // the grace period beyond the delay; default 30s
	// AcceptGrace is the longest grace period the user would accept: a recommendation
	// beyond it comes with what to do about the path whose tail decided; default 60s.
	AcceptGrace time.Duration
	Log         func(format string, args ...any)
}

// The defaults of Options, which napctl calibrate's flags show.
const (
	DefaultNamespace = Name
	DefaultReplicas  = 3
	DefaultRounds    = 5
	DefaultRate      = 50.0
	DefaultHold      = 60 * time.Second
	DefaultQuiet     = 10 * time.Second
	DefaultMargin    = 2 * time.Second
	DefaultDrain     = 30 * time.Second
	DefaultAccept    = 60 * time.Second
)

func (o *Options) defaults() {
	o.Namespace = cmp.Or(o.Namespace, DefaultNamespace)
	o.Replicas = cmp.Or(o.Replicas, DefaultReplicas)
	o.Rounds = cmp.Or(o.Rounds, DefaultRounds)
	o.Rate = cmp.Or(o.Rate, DefaultRate)
	o.Hold = cmp.Or(o.Hold, DefaultHold)
	o.Quiet = cmp.Or(o.Quiet, DefaultQuiet)
	o.Margin = cmp.Or(o.Margin, DefaultMargin)
	o.Drain = cmp.Or(o.Drain, DefaultDrain)
	o.AcceptGrace = cmp.Or(o.AcceptGrace, DefaultAccept)
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
}

// Validate names the option that is off.
func (o Options) Validate() error {
	switch {
	case o.Image == "":
		return errors.New("the napctl image is required (it runs napctl serve)")
	case o.Paths.Validate() != nil:
		return o.Paths.Validate()
	case o.Rounds < 0 || o.Replicas < 0 || o.Rate < 0 || o.Hold < 0 || o.Quiet < 0 || o.Margin < 0 || o.Drain < 0 || o.AcceptGrace < 0:
		return errors.New("rounds, replicas, rate and durations must not be negative")
	case o.Replicas == 1:
		return errors.New("replicas 1: a deleted pod would leave nothing to serve")
	}
	return nil
}

// Path is one way traffic reaches the pods.
type Path struct {
	Name string `json:"name"` // the traffic path's (traffic.All)
	URL  string `json:"url"`
}

// The disruptions a round is made of.
const (
	// RollingRestart: a rolling restart (maxSurge 1, maxUnavailable 0), every round.
	RollingRestart = "rolling restart"
	// ScaleDown: the Deployment scaled to one replica and back, in every round when a
	// load balancer path is measured: a rollout's new pods keep each node served (the
	// ReplicaSet deletes first where more of its pods run), so only pods that leave a
	// node without one (a scale-down, a drain) show how long a load balancer that
	// checks nodes keeps sending to them.
	ScaleDown = "scale-down"
)

// Round is one pod replaced in a round.
type Round struct {
	Round int    `json:"round"`
	Pod   string `json:"pod"`
	// Disruption is how the pod went: RollingRestart or ScaleDown.
	Disruption string `json:"disruption"`
	// Tails are, by path, how long after its termination began the pod's last answer on
	// that path was: 0 when it answered there only before; absent when the path never
	// sent it anything.
	Tails map[string]float64 `json:"tails_seconds"`
	// Censored: the pod was still answering when its hold ended; its tails are at least
	// these.
	Censored bool `json:"censored,omitempty"`
}

// Stats are one path's tails over the rounds.
type Stats struct {
	Path    Path    `json:"path"`
	Samples int     `json:"samples"`
	P50     float64 `json:"p50_seconds"`
	P99     float64 `json:"p99_seconds"`
	Max     float64 `json:"max_seconds"`
	// Failed are requests on the path that failed during the calibration: none is
	// expected, every deleted pod keeps serving through its hold.
	Failed      int                `json:"failed"`
	FailedKinds map[probe.Kind]int `json:"failed_by_kind,omitempty"`
	Requests    int                `json:"requests"`
}

// Report is a calibration's outcome.
type Report struct {
	Namespace string  `json:"namespace"`
	Rounds    []Round `json:"rounds"` // a sample for each replaced pod
	Paths     []Stats `json:"paths"`
	// Delay is the recommended preStop delay: the longest tail plus the margin, rounded
	// up to whole seconds; Grace the grace period it needs: Delay plus the drain time.
	Delay  time.Duration `json:"-"`
	Grace  time.Duration `json:"-"`
	DelayS float64       `json:"recommended_delay_seconds"`
	GraceS float64       `json:"recommended_grace_period_seconds"`
	// Longest names the path whose tail decided.
	Longest string `json:"longest_path"`
	// Advice, when Grace exceeds what the user would accept (Options.AcceptGrace): what
	// shortens the deciding path's tail.
	Advice string `json:"advice,omitempty"`
	// Adaptive is the recommended adaptive wait, beside the fixed Delay.
	Adaptive AdaptiveWait `json:"adaptive_wait"`
	// Stored is what napctl calibrate --save keeps: each measured path's tails and the
	// delay it needs.
	Stored traffic.Calibration `json:"-"`
}

// AdaptiveWait is a recommended adaptive wait (napctl inject --wait adaptive; see
// docs/adaptive.md): Wait holds at least its Min, until the pod's new connections have
// stopped for its Quiet, at most its Delay (MAX); Grace is MAX plus the drain time.
//
// MIN is the fixed delay: every measured path's tail is covered whatever the traffic
// is like. Where a pod gets fewer new connections than one per Quiet, the wait cannot
// tell a route that forgot it from one that has not sent yet, and ends after QUIET (on
// the lab at 2 req/s over 4 pods, behind a load balancer with NLB timings: 12 of 128
// requests lost with no MIN; docs/adaptive.md). QUIET is nap's default. MAX is twice
// the fixed delay, at least nap's default MAX: room for a path slower than any measured
// (a load balancer added later), which a pod whose traffic goes on waits out.
type AdaptiveWait struct {
	Wait   wait.Wait     `json:"-"`
	Grace  time.Duration `json:"-"`
	MinS   float64       `json:"min_seconds"`
	QuietS float64       `json:"quiet_seconds"`
	MaxS   float64       `json:"max_seconds"`
	GraceS float64       `json:"grace_period_seconds"`
}

// Run calibrates: it creates the workload, restarts it opts.Rounds times while
// probing every path, and returns the report. What it created is deleted before it
// returns, also when ctx ends early.
func Run(ctx context.Context, cs kubernetes.Interface, opts Options) (*Report, error) {
	opts.defaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	created, err := prepareNamespace(ctx, cs, opts)
	if err != nil {
		return nil, err
	}
	defer cleanup(cs, opts, created)
	paths, err := deploy(ctx, cs, opts)
	if err != nil {
		return nil, err
	}
	return measure(ctx, cs, opts, paths)
}

func prepareNamespace(ctx context.Context, cs kubernetes.Interface, opts Options) (created bool, err error) {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, opts.Namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: opts.Namespace,
			Labels: map[string]string{ManagedLabel: managedBy}}}, metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("creating namespace %s: %w", opts.Namespace, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("namespace %s: %w", opts.Namespace, err)
	case ns.Labels[ManagedLabel] == managedBy:
		return true, nil // left by an interrupted run of ours
	case !opts.UseExisting:
		return false, fmt.Errorf("namespace %s exists and calibrate did not create it: name another (-n), or allow it (--use-existing-namespace; then only calibrate's own objects are deleted)", opts.Namespace)
	}
	return false, nil
}

// cleanup deletes what Run made, on its own context: ctx may be what ended. Pods first,
// at once: their preStop holds would keep the namespace terminating for a minute.
func cleanup(cs kubernetes.Interface, opts Options, createdNamespace bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zero := int64(0)
	now := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	bg := metav1.DeletePropagationBackground
	cs.AppsV1().Deployments(opts.Namespace).Delete(ctx, Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	cs.CoreV1().Pods(opts.Namespace).DeleteCollection(ctx, now, metav1.ListOptions{LabelSelector: "app=" + Name})
	cs.CoreV1().Services(opts.Namespace).Delete(ctx, Name, metav1.DeleteOptions{})
	for _, p := range traffic.Enabled(opts.Paths) {
		if err := p.Close(ctx, cs, target(opts)); err != nil {
			opts.Log("removing the %s path: %v", p.Name, err)
		}
	}
	if createdNamespace {
		cs.CoreV1().Namespaces().Delete(ctx, opts.Namespace, metav1.DeleteOptions{})
	}
	opts.Log("cleaned up %s", opts.Namespace)
}

// deploy creates the workload, its Service (ClusterIP and NodePort) and the Ingress,
// waits until every replica is ready, and returns the paths to probe.
func deploy(ctx context.Context, cs kubernetes.Interface, opts Options) ([]Path, error) {
	ns := opts.Namespace
	labels := map[string]string{"app": Name}
	grace := int64((opts.Hold + 30*time.Second).Seconds())
	env := func(name, field string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: field}}}
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: Name}, Spec: appsv1.DeploymentSpec{
		Replicas: &opts.Replicas,
		// What Deployments default to for a few replicas, written out: each round
		// replaces pods as a user's rollout would.
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
				WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
			Containers: []corev1.Container{{
				Name: "serve", Image: opts.Image, Args: []string{"serve", "--addr", ":8080"},
				Env:            []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName")},
				Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
				// The hold keeps the pod serving while every route forgets it: what
				// reaches it meanwhile is the tail.
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: serve.PreStopPath + "?hold=" + opts.Hold.String(), Port: intstr.FromInt32(8080)}}},
			}},
		}},
	}}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the calibration Deployment: %w", err)
	}
	enabled := traffic.Enabled(opts.Paths)
	svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: Name}, Spec: corev1.ServiceSpec{
		Type: traffic.ServiceType(enabled), Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating the calibration Service: %w", err)
	}
	var paths []Path
	for _, p := range enabled {
		url, err := p.Open(ctx, cs, opts.Paths, target(opts), svc)
		if err != nil {
			return nil, fmt.Errorf("the %s path: %w", p.Name, err)
		}
		paths = append(paths, Path{Name: p.Name, URL: url})
	}
	opts.Log("deployed %d replicas of napctl serve in %s; paths: %v", opts.Replicas, ns, paths)
	if err := waitReady(ctx, cs, opts); err != nil {
		return nil, err
	}
	return paths, nil
}

// target is the calibration workload as the traffic paths reach it.
func target(opts Options) traffic.Target {
	return traffic.Target{Namespace: opts.Namespace, Service: Name, Prefix: "/" + Name}
}

// ImagePullError is calibrate's pods failing to pull their image: said as soon as the
// kubelet says so, not at the readiness deadline.
type ImagePullError struct {
	Image, Reason, Message string
}

func (e *ImagePullError) Error() string {
	return fmt.Sprintf("the calibration pods cannot pull their image %s (%s: %s)", e.Image, e.Reason, e.Message)
}

// waitReady waits until the Deployment has every replica ready and no other pod; it
// ends early with an ImagePullError.
func waitReady(ctx context.Context, cs kubernetes.Interface, opts Options) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		d, err := cs.AppsV1().Deployments(opts.Namespace).Get(ctx, Name, metav1.GetOptions{})
		pods, perr := cs.CoreV1().Pods(opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + Name})
		if perr == nil {
			if image, reason, msg := kube.ImagePullFailure(pods.Items); reason != "" {
				return &ImagePullError{Image: image, Reason: reason, Message: msg}
			}
		}
		if err == nil && d.Status.ObservedGeneration >= d.Generation && d.Status.ReadyReplicas == opts.Replicas && d.Status.Replicas == opts.Replicas {
			if perr == nil && len(pods.Items) == int(opts.Replicas) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the calibration workload in %s has not got %d ready replicas after 3 minutes (image %s)", opts.Namespace, opts.Replicas, opts.Image)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

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
		wait := time.Minute
		for _, tp := range traffic.All() {
			if tp.Name == p.Name && tp.Annotations != nil {
				// A load balancer sends to a node once its checks passed, a cloud's
				// after it provisioned it.
				wait = cmp.Or(opts.Paths.LBWait, traffic.DefaultLBWait)
			}
		}
		if err := waitAnswers(ctx, p, wait); err != nil {
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
			po := probe.Options{URL: p.URL, Rate: opts.Rate, Modes: []probe.Mode{probe.New},
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
		time.Sleep(2 * time.Second) // every path sends to every pod before one goes
		rs, err := restart(ctx, cs, opts, a, round)
		if err != nil {
			return nil, err
		}
		if scaleDowns(opts) {
			if err := waitReady(ctx, cs, opts); err != nil {
				return nil, err
			}
			time.Sleep(2 * time.Second)
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
	for _, p := range paths {
		var tails []float64
		for _, r := range rep.Rounds {
			if t, ok := r.Tails[p.Name]; ok {
				tails = append(tails, t)
			}
		}
		s := Stats{Path: p, Samples: len(tails), FailedKinds: a.failed[p.Name], Requests: a.total[p.Name]}
		for _, n := range s.FailedKinds {
			s.Failed += n
		}
		if s.Failed > 0 {
			opts.Log("path %s: %d requests failed %v, the first %.1fs into the calibration", p.Name, s.Failed, s.FailedKinds, a.firstFail[p.Name])
		}
		if len(tails) > 0 {
			slices.Sort(tails)
			s.P50, s.P99, s.Max = quantile(tails, 0.5), quantile(tails, 0.99), tails[len(tails)-1]
		}
		rep.Paths = append(rep.Paths, s)
	}
	recommend(rep, opts)
	return rep, nil
}

// recommend fills in rep's recommendations from its paths' tails: the fixed delay and
// its grace period (with advice past Options.AcceptGrace), and the adaptive wait.
func recommend(rep *Report, opts Options) {
	seconds := func(tail float64) time.Duration {
		return traffic.DelayFor(time.Duration(tail*float64(time.Second)), opts.Margin)
	}
	longest := 0.0
	for _, s := range rep.Paths {
		if s.Samples > 0 && s.Max >= longest {
			longest, rep.Longest = s.Max, s.Path.Name
		}
	}
	rep.Delay = seconds(longest)
	rep.Grace = rep.Delay + opts.Drain
	rep.DelayS, rep.GraceS = rep.Delay.Seconds(), rep.Grace.Seconds()
	if rep.Grace > opts.AcceptGrace {
		rep.Advice = advice(rep, opts)
	}
	w := wait.DefaultAdaptive()
	w.Min, w.Delay = rep.Delay, max(w.Delay, 2*rep.Delay)
	a := AdaptiveWait{Wait: w, Grace: w.Delay + opts.Drain}
	a.MinS, a.QuietS, a.MaxS, a.GraceS = w.Min.Seconds(), w.Quiet.Seconds(), w.Delay.Seconds(), a.Grace.Seconds()
	rep.Adaptive = a
	rep.Stored = traffic.Calibration{APIVersion: traffic.CalibrationAPIVersion, Kind: traffic.CalibrationKind,
		Measured: time.Now().UTC().Truncate(time.Second), Namespace: rep.Namespace, Rounds: opts.Rounds, MarginS: opts.Margin.Seconds()}
	for _, s := range rep.Paths {
		if s.Samples == 0 {
			continue
		}
		t := traffic.PathTail{Name: s.Path.Name, Samples: s.Samples, P50: s.P50, P99: s.P99, Max: s.Max, DelayS: seconds(s.Max).Seconds()}
		if p, ok := traffic.Lookup(s.Path.Name); ok && p.Annotations != nil {
			if a := p.Annotations(opts.Paths); len(a) > 0 {
				t.Parameters = a
			}
		}
		rep.Stored.Paths = append(rep.Stored.Paths, t)
	}
}

// scaleDowns tells whether the rounds include a scale-down: when a path is a load
// balancer's.
func scaleDowns(opts Options) bool {
	for _, p := range traffic.Enabled(opts.Paths) {
		if p.NodeChecked {
			return true
		}
	}
	return false
}

// advice says why the recommended grace period is long and what shortens it: the
// deciding path's remedy, with the other paths' tails for comparison.
func advice(rep *Report, opts Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "the recommended grace period %v is longer than %v: the %s path's tail decides it", rep.Grace, opts.AcceptGrace, rep.Longest)
	if p, ok := traffic.Lookup(rep.Longest); ok && p.Remedy != "" {
		fmt.Fprintf(&b, ". %s", p.Remedy)
	}
	var others []string
	for _, s := range rep.Paths {
		if s.Path.Name != rep.Longest && s.Samples > 0 {
			others = append(others, fmt.Sprintf("%s max %.1fs", s.Path.Name, s.Max))
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, " Measured here on the other paths: %s.", strings.Join(others, ", "))
	}
	return b.String()
}

// waitAnswers waits (at most wait), one request at a time, until the path answers 200
// three times in a row: a new Service's rules reach every proxy a moment after it exists, and no load
// starts before its target answers.
func waitAnswers(ctx context.Context, p Path, wait time.Duration) error {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(wait)
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
			return fmt.Errorf("path %s (%s) does not answer after %v: %w", p.Name, p.URL, wait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// quantile of sorted values, the nearest rank.
func quantile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(len(sorted)-1, i))]
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

// podNames are the calibration pods there are now.
func podNames(ctx context.Context, cs kubernetes.Interface, ns string) (map[string]bool, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + Name})
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, p := range pods.Items {
		names[p.Name] = true
	}
	return names, nil
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

// readyInSlices tells whether pod is a ready endpoint in any EndpointSlice of the
// Service. A terminating pod stays in them, serving but not ready, until it is gone:
// routes leave it when it is no longer ready.
func readyInSlices(ctx context.Context, cs kubernetes.Interface, ns, pod string) (bool, error) {
	l, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + Name})
	if err != nil {
		return false, err
	}
	for _, s := range l.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil && e.TargetRef.Name == pod && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				return true, nil
			}
		}
	}
	return false, nil
}
