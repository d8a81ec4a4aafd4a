package evicted

import (
	"context"
	"errors"
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

// ShutdownMessage is what a kubelet's graceful node shutdown manager puts in its node's
// Ready condition (status False) once it is told that the node shuts down, before it
// stops the node's pods (kubelets 1.21 to 1.37).
const ShutdownMessage = "node is shutting down"

// RoutedOutShutdown is the reason of the Event the Router leaves on a pod it deleted
// because its node shuts down.
const RoutedOutShutdown = "NapShutdownRoutedOut"

// ShuttingDown tells whether n's kubelet says that n is shutting down.
func ShuttingDown(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionFalse && strings.Contains(c.Message, ShutdownMessage)
		}
	}
	return false
}

// nodePrefix begins the queue's key of a node (a pod's key begins with its namespace,
// which holds no colon).
const nodePrefix = "node:"

// Router deletes the pods a kubelet evicts, and those on a node that shuts down, as
// the package says. Run it on the leader.
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
	inf, nodes := r.Informer(), r.NodeInformer()
	go inf.RunWithContext(ctx)
	go nodes.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced, nodes.HasSynced) {
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

// NodeInformer is the informer of the Nodes, each kept as its name and Ready condition
// only; its handler enqueues a node that shuts down (ShuttingDown).
func (r *Router) NodeInformer() toolscache.SharedIndexInformer {
	lw := toolscache.NewListWatchFromClient(r.Client.CoreV1().RESTClient(), "nodes", metav1.NamespaceAll, fields.Everything())
	inf := toolscache.NewSharedIndexInformer(lw, &corev1.Node{}, 0, toolscache.Indexers{})
	_ = inf.SetTransform(slimNode)
	_, _ = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.EnqueueNode(o) },
		UpdateFunc: func(_, o any) { r.EnqueueNode(o) },
	})
	return inf
}

// slimNode keeps of a Node what the Router reads: its name and its Ready condition.
func slimNode(o any) (any, error) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return o, nil
	}
	slim := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion}}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			slim.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}}
		}
	}
	return slim, nil
}

// EnqueueNode queues a node that shuts down.
func (r *Router) EnqueueNode(o any) {
	if n, ok := o.(*corev1.Node); ok && ShuttingDown(n) && r.queue != nil {
		r.queue.Add(nodePrefix + n.Name)
	}
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

// Sync does one key: a pod a kubelet evicted (a Key), or a node that shuts down.
func (r *Router) Sync(ctx context.Context, key string) error {
	if node, ok := strings.CutPrefix(key, nodePrefix); ok {
		return r.syncNode(ctx, node)
	}
	parts := strings.SplitN(key, "/", 3)
	if len(parts) != 3 {
		return nil
	}
	ns, name, uid := parts[0], parts[1], types.UID(parts[2])
	if r.Exclude[ns] {
		routed.WithLabelValues("excluded").Inc()
		return nil
	}
	p, err := r.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		routed.WithLabelValues("gone").Inc()
		return nil
	case err != nil:
		routed.WithLabelValues("error").Inc()
		return err
	case uid != "" && p.UID != uid:
		routed.WithLabelValues("gone").Inc()
		return nil
	}
	return r.routeOut(ctx, p, RoutedOut, "evicted by its kubelet")
}

// syncNode does a node that shuts down: each of its pods, as an evicted one. The node is
// read again first: a node whose shutdown was cancelled, or that is gone, is left alone.
func (r *Router) syncNode(ctx context.Context, name string) error {
	n, err := r.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case !ShuttingDown(n):
		return nil
	}
	pods, err := r.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", name).String()})
	if err != nil {
		return err
	}
	var errs []error
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != name {
			continue // the selector's work, in case a server ignored it
		}
		if r.Exclude[p.Namespace] {
			routed.WithLabelValues("excluded").Inc()
			continue
		}
		if err := r.routeOut(ctx, p, RoutedOutShutdown, "its node "+name+" is shutting down"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// routeOut deletes p, unless it is deleting or stopped or no preStop holds it, with its
// own grace period, on the condition that it is still the pod read; an Event of reason
// says why (what the kubelet does to it).
func (r *Router) routeOut(ctx context.Context, p *corev1.Pod, reason, why string) error {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
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
	err := r.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		routed.WithLabelValues("gone").Inc()
		return nil
	case err != nil:
		routed.WithLabelValues("error").Inc()
		return fmt.Errorf("deleting pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	routed.WithLabelValues("deleted").Inc()
	msg := fmt.Sprintf("%s, and its kubelet keeps it ready until it has stopped: deleted (grace %ds), so that its Services stop sending to it while its preStop holds it (%v)", why, grace, hold)
	r.Log.Info("a pod its kubelet stops, out of its Services", "pod", p.Namespace+"/"+p.Name, "why", why, "hold", hold.String())
	if r.Recorder != nil {
		r.Recorder.Event(p, corev1.EventTypeNormal, reason, msg)
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
