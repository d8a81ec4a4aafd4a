package evicted

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/nap-k8s/nap/hook"
)

// Reason is the reason of the kubelet's Event on a pod it evicts.
const Reason = "Evicted"

// RoutedOut is the reason of the Event the Router leaves on a pod it deleted.
const RoutedOut = "NapEvictedRoutedOut"

// Selector selects the Events the Router reads: a kubelet's, on a Pod, reason Evicted.
var Selector = fields.Set{"reason": Reason, "involvedObject.kind": "Pod", "source": "kubelet"}.AsSelector()

// Router deletes the pods a kubelet evicts, as the package says. Run it on the leader.
type Router struct {
	Client   kubernetes.Interface
	Recorder record.EventRecorder // may be nil
	Log      logr.Logger
	// Exclude are namespaces whose pods it leaves alone (nap's own, kube-system).
	Exclude map[string]bool

	queue workqueue.TypedRateLimitingInterface[string]
}

// NeedLeaderElection: one replica deletes.
func (r *Router) NeedLeaderElection() bool { return true }

// Start runs the informer and one worker until ctx ends.
func (r *Router) Start(ctx context.Context) error {
	r.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "nap-evicted"})
	defer r.queue.ShutDown()
	inf := r.Informer()
	go inf.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil
	}
	go func() {
		for r.next(ctx) {
		}
	}()
	<-ctx.Done()
	return nil
}

// Informer is the informer of the Events the Router reads; its handler enqueues the
// pod each names (namespace/name/uid).
func (r *Router) Informer() toolscache.SharedIndexInformer {
	lw := toolscache.NewFilteredListWatchFromClient(r.Client.CoreV1().RESTClient(), "events", metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.FieldSelector = Selector.String() })
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Event{}, 0, toolscache.Indexers{})
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.Enqueue(o) },
		UpdateFunc: func(_, o any) { r.Enqueue(o) },
	})
	return inf
}

// Enqueue queues the pod an Event names, when it is one the Router reads.
func (r *Router) Enqueue(o any) {
	if k, ok := Key(o); ok && r.queue != nil {
		r.queue.Add(k)
	}
}

// Key is the queue's key of the pod an Event names: namespace/name/uid; ok false when
// the Event is not a kubelet's eviction of a pod (the informer's selector keeps those
// out; a fake clientset does not).
func Key(o any) (string, bool) {
	ev, ok := o.(*corev1.Event)
	if !ok || ev.Reason != Reason || ev.InvolvedObject.Kind != "Pod" || ev.Source.Component != "kubelet" || ev.InvolvedObject.Name == "" {
		return "", false
	}
	return ev.InvolvedObject.Namespace + "/" + ev.InvolvedObject.Name + "/" + string(ev.InvolvedObject.UID), true
}

func (r *Router) next(ctx context.Context) bool {
	k, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(k)
	if err := r.Sync(ctx, k); err != nil {
		if ctx.Err() == nil {
			r.Log.Error(err, "an evicted pod", "pod", k)
		}
		r.queue.AddRateLimited(k)
		return true
	}
	r.queue.Forget(k)
	return true
}

// Sync does one pod (a Key): unless it is gone, stopped, in an excluded namespace or
// without a preStop that holds it, it deletes it with its own grace period, on the
// condition that it is still the pod the Event named.
func (r *Router) Sync(ctx context.Context, key string) error {
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return nil
	}
	ns, name, uid := parts[0], parts[1], types.UID(parts[2])
	if r.Exclude[ns] {
		routed.WithLabelValues("excluded").Inc()
		return nil
	}
	pods := r.Client.CoreV1().Pods(ns)
	p, err := pods.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		routed.WithLabelValues("gone").Inc()
		return nil
	case err != nil:
		routed.WithLabelValues("error").Inc()
		return err
	case uid != "" && p.UID != uid, p.DeletionTimestamp != nil, p.Status.Phase == corev1.PodFailed, p.Status.Phase == corev1.PodSucceeded:
		routed.WithLabelValues("gone").Inc()
		return nil
	}
	hold := holds(p.Spec)
	if hold == 0 {
		routed.WithLabelValues("no-hold").Inc()
		return nil
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	err = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		routed.WithLabelValues("gone").Inc()
		return nil
	case err != nil:
		routed.WithLabelValues("error").Inc()
		return fmt.Errorf("deleting pod %s/%s: %w", ns, name, err)
	}
	routed.WithLabelValues("deleted").Inc()
	msg := fmt.Sprintf("evicted by its kubelet, which keeps it ready until it has stopped: deleted (grace %ds), so that its Services stop sending to it while its preStop holds it (%v)", grace, hold)
	r.Log.Info("an evicted pod out of its Services", "pod", ns+"/"+name, "hold", hold.String())
	if r.Recorder != nil {
		r.Recorder.Event(p, corev1.EventTypeNormal, RoutedOut, msg)
	}
	return nil
}

// holds is the longest any container's preStop holds it: a fixed delay, or an adaptive
// wait's MAX (0: none holds, and an early exit from the routes gains nothing; a hook
// that stops the server first holds nothing for the routes either).
func holds(spec corev1.PodSpec) time.Duration {
	var most time.Duration
	for _, c := range spec.Containers {
		if h := hook.Of(c); h.Known && !h.Stops && (h.Holds() > 0 || h.Adaptive()) {
			most = max(most, h.Delay())
		}
	}
	return most
}
