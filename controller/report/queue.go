package report

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
	if r.events == nil {
		r.events = newEventBudget(r.EventRate, r.EventBurst, r.clock)
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
