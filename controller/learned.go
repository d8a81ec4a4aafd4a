package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/traffic"
)

// LearnEvery is how often at most the Learner writes what quiet terminations taught; a
// late one, which raises a wait, is written at once. At rest nothing is written.
const LearnEvery = time.Minute

// Learner keeps the waits learned from production (traffic.Learned): the leader's
// Reporter hands it every termination it counts (Observe), and it keeps the document in
// the ConfigMap kube.LearnedConfigMap of its namespace, where every replica's webhook
// reads it (LearnedSource). It takes up what that ConfigMap held when it starts.
type Learner struct {
	Client    kubernetes.Interface
	Namespace string
	Log       logr.Logger
	// Every is how often at most quiet terminations are written (default LearnEvery).
	Every time.Duration

	mu     sync.Mutex
	doc    *traffic.Learned
	early  []traffic.Observation // counted before the document was read back
	dirty  bool
	urgent chan struct{}
}

// NeedLeaderElection: only the leader counts terminations.
func (l *Learner) NeedLeaderElection() bool { return true }

// Observe applies the learning rule to one termination (traffic.Learned.Observe); a
// change to what a route needs is written at once.
func (l *Learner) Observe(o traffic.Observation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.doc == nil {
		l.early = append(l.early, o)
		return
	}
	l.observeLocked(o)
}

func (l *Learner) observeLocked(o traffic.Observation) {
	kept, changed := l.doc.Observe(o)
	l.dirty = l.dirty || kept
	if changed {
		l.Log.Info("learned", "paths", traffic.RouteKey(o.Paths), "pod", o.Pod, "verdict", o.Kind)
		select {
		case l.urgentChan() <- struct{}{}:
		default:
		}
	}
}

func (l *Learner) urgentChan() chan struct{} {
	if l.urgent == nil {
		l.urgent = make(chan struct{}, 1)
	}
	return l.urgent
}

// Start reads back the document, then writes it whenever it changed: at once after a
// raise, at most every Every otherwise.
func (l *Learner) Start(ctx context.Context) error {
	doc, err := l.read(ctx)
	if err != nil {
		l.Log.Error(err, "the waits learned before are not taken up: learning starts again")
		doc = traffic.NewLearned()
	}
	l.mu.Lock()
	l.doc = doc
	for _, o := range l.early {
		l.observeLocked(o)
	}
	l.early = nil
	urgent := l.urgentChan()
	l.mu.Unlock()
	every := l.Every
	if every <= 0 {
		every = LearnEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-urgent:
		case <-tick.C:
		}
		if err := l.write(ctx); err != nil {
			l.Log.Error(err, "the waits learned from production were not written; again later")
		}
	}
}

// read is the document the ConfigMap holds; a new one where there is none.
func (l *Learner) read(ctx context.Context) (*traffic.Learned, error) {
	cm, err := l.Client.CoreV1().ConfigMaps(l.Namespace).Get(ctx, kube.LearnedConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return traffic.NewLearned(), nil
	}
	if err != nil {
		return nil, err
	}
	return ReadLearnedConfigMap(cm)
}

// write keeps the document in the ConfigMap, if it changed since.
func (l *Learner) write(ctx context.Context) error {
	l.mu.Lock()
	if !l.dirty {
		l.mu.Unlock()
		return nil
	}
	doc, err := json.MarshalIndent(l.doc, "", "  ")
	l.dirty = false
	l.mu.Unlock()
	if err != nil {
		return err
	}
	want := LearnedConfigMap(l.Namespace, append(doc, '\n'))
	err = keepConfigMap(ctx, l.Client, want)
	if err != nil {
		l.mu.Lock()
		l.dirty = true
		l.mu.Unlock()
		return fmt.Errorf("keeping the waits learned in ConfigMap %s/%s: %w", l.Namespace, want.Name, err)
	}
	return nil
}

// LearnedConfigMap is the ConfigMap that keeps the learned document doc in namespace ns.
func LearnedConfigMap(ns string, doc []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: kube.LearnedConfigMap, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/managed-by": "nap-controller"}},
		Data:       map[string]string{kube.LearnedKey: string(doc)},
	}
}

// ReadLearnedConfigMap reads the learned document a ConfigMap keeps.
func ReadLearnedConfigMap(cm *corev1.ConfigMap) (*traffic.Learned, error) {
	name := fmt.Sprintf("ConfigMap %s/%s", cm.Namespace, cm.Name)
	doc, ok := cm.Data[kube.LearnedKey]
	if !ok {
		return nil, fmt.Errorf("%s: no key %s", name, kube.LearnedKey)
	}
	return traffic.ReadLearned(strings.NewReader(doc), name+" key "+kube.LearnedKey)
}

// LearnedSource holds the waits learned from production as every replica reads them: the
// ConfigMap kube.LearnedConfigMap in the controller's namespace, through an informer of
// its own (one object). The webhook reads it at every admission (Load), beside the
// stored calibration (Calibrations).
type LearnedSource struct {
	Client    kubernetes.Interface
	Namespace string
	Log       logr.Logger
	// OnChange, when set, is called after a change to what some route needs (not after
	// each tail: the Reporter judges every namespace again).
	OnChange func()

	cur      atomic.Pointer[traffic.Learned]
	informer toolscache.SharedIndexInformer
}

// Load is the document as last read; nil while there is none (or none valid).
func (s *LearnedSource) Load() *traffic.Learned { return s.cur.Load() }

// NeedLeaderElection: every replica's webhook reads it.
func (s *LearnedSource) NeedLeaderElection() bool { return false }

// Informer makes the informer (once).
func (s *LearnedSource) Informer() toolscache.SharedIndexInformer {
	if s.informer == nil {
		s.informer = configMapInformer(s.Client, s.Namespace, kube.LearnedConfigMap, s.set, func() { s.store(nil) })
	}
	return s.informer
}

// Start runs the informer until ctx ends.
func (s *LearnedSource) Start(ctx context.Context) error {
	s.Informer().RunWithContext(ctx)
	return nil
}

func (s *LearnedSource) set(cm *corev1.ConfigMap) {
	l, err := ReadLearnedConfigMap(cm)
	if err != nil {
		s.Log.Error(err, "the waits learned from production are not read: pods get what the calibration and the fleet say")
	}
	s.store(l)
}

func (s *LearnedSource) store(l *traffic.Learned) {
	before := s.cur.Swap(l).Needs()
	after := l.Needs()
	learnedDelay.Reset()
	for route, d := range after {
		learnedDelay.WithLabelValues(route).Set(d.Seconds())
	}
	if !maps.Equal(before, after) && s.OnChange != nil {
		s.OnChange()
	}
}

// Calibrations is what the webhook and the Reporter judge a pod's paths by: the stored
// calibration (cal, nil: none) with the waits learned from production beside it
// (learned, nil: not learning; traffic.WithLearned), made anew only when either
// changed.
func Calibrations(cal func() *traffic.Calibration, learned func() *traffic.Learned) func() *traffic.Calibration {
	if learned == nil {
		return cal
	}
	type made struct {
		c   *traffic.Calibration
		l   *traffic.Learned
		out *traffic.Calibration
	}
	var last atomic.Pointer[made]
	return func() *traffic.Calibration {
		var c *traffic.Calibration
		if cal != nil {
			c = cal()
		}
		l := learned()
		if m := last.Load(); m != nil && m.c == c && m.l == l {
			return m.out
		}
		m := &made{c: c, l: l, out: traffic.WithLearned(c, l)}
		last.Store(m)
		return m.out
	}
}

// configMapInformer watches the one ConfigMap name in namespace ns: set with each
// version of it, gone when it is deleted.
func configMapInformer(cs kubernetes.Interface, ns, name string, set func(*corev1.ConfigMap), gone func()) toolscache.SharedIndexInformer {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := toolscache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", ns,
		func(o *metav1.ListOptions) { o.FieldSelector = sel })
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	on := func(o any) {
		if cm, ok := o.(*corev1.ConfigMap); ok {
			set(cm)
		}
	}
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    on,
		UpdateFunc: func(_, o any) { on(o) },
		DeleteFunc: func(any) { gone() },
	})
	return inf
}
