package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// terminations records, for each pod of the demo service in a namespace, how long it
// took from its deletion to its app container's exit: the preStop hook's hold and the
// app's own shutdown (the plain app exits at once on SIGTERM). The deletion began at
// deletionTimestamp less the grace period (the timestamp is the deadline).
type terminations struct {
	mu     sync.Mutex
	lives  map[string]*podLife // every pod seen, by name: the record of a failure
	took   map[string]time.Duration
	began  map[string]time.Time // first seen: the kubelet deletes a stopped pod with grace 0
	cancel context.CancelFunc
	done   chan struct{}
}

// watchTerminations starts recording in ns until stop.
func watchTerminations(t *testing.T, cs *kubernetes.Clientset, ns string) *terminations {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := metav1.ListOptions{LabelSelector: "app=app"}
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &terminations{lives: map[string]*podLife{}, took: map[string]time.Duration{}, began: map[string]time.Time{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer func() { w.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					// The client's timeout ends a watch: go on from the last version seen.
					if w, err = cs.CoreV1().Pods(ns).Watch(ctx, opts); err != nil {
						return
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
				began, seen := r.began[p.Name]
				if !seen {
					began = p.DeletionTimestamp.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
					r.began[p.Name] = began
				}
				for _, s := range p.Status.ContainerStatuses {
					if s.Name == "app" && s.State.Terminated != nil {
						r.took[p.Name] = s.State.Terminated.FinishedAt.Sub(began)
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
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "app" && s.State.Terminated != nil {
			l.exited = s.State.Terminated.FinishedAt.Time
		}
	}
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
