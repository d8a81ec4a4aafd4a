package report

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/kube"
)

// Watch has the Reporter told, through Informers, of every change to pods, Services,
// namespaces and FailedPreStopHook events (their namespace is put on the queue, synced
// Batch later) and of nodes' kubelet versions (every namespace is). The objects already
// there when it is called are not told one by one: Start syncs every namespace first.
// It returns once the informers have synced.
func (r *Reporter) Watch(ctx context.Context) error {
	r.init()
	every := func() {
		r.mu.Lock()
		r.env = nil
		r.mu.Unlock()
		r.queue.AddAfter(everyNamespace, r.batch())
	}
	enqueue := func(o any) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		m, err := meta.Accessor(o)
		if err != nil {
			return
		}
		ns := m.GetNamespace()
		if ns == "" {
			if _, isNS := o.(*corev1.Namespace); !isNS { // a cluster's object (an IngressClass): any namespace's
				every()
				return
			}
			ns = m.GetName()
		}
		r.queue.AddAfter(ns, r.batch())
	}
	changes := toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, initial bool) {
			if !initial {
				enqueue(o)
			}
		},
		UpdateFunc: func(_, o any) { enqueue(o) },
		DeleteFunc: enqueue,
	}
	// Each termination's verdict, once, as the pod's final status brings it.
	verdicts := toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(o any, initial bool) {
			if !initial {
				r.counted(nil, asSummary(o))
			}
		},
		UpdateFunc: func(old, o any) { r.counted(asSummary(old), asSummary(o)) },
	}
	handlers := []struct {
		obj client.Object
		h   toolscache.ResourceEventHandler
	}{
		{&corev1.Pod{}, changes},
		{&corev1.Pod{}, verdicts},
		{&corev1.Service{}, changes},
		{&corev1.Namespace{}, changes},
		{&corev1.Event{}, changes},
		{&corev1.Node{}, toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(_ any, initial bool) {
				if !initial {
					every()
				}
			},
			DeleteFunc: func(any) { every() },
			UpdateFunc: func(old, o any) {
				a, errA := nodeOf(old)
				b, errB := nodeOf(o)
				if errA != nil || errB != nil || a.Kubelet != b.Kubelet {
					every()
				}
			}}},
	}
	for _, o := range r.FrontKinds {
		handlers = append(handlers, struct {
			obj client.Object
			h   toolscache.ResourceEventHandler
		}{o, changes})
	}
	var synced []toolscache.InformerSynced
	for _, h := range handlers {
		inf, err := r.Informers.GetInformer(ctx, h.obj)
		if err != nil {
			return err
		}
		reg, err := inf.AddEventHandler(h.h)
		if err != nil {
			return err
		}
		synced = append(synced, reg.HasSynced)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		return ctx.Err()
	}
	return nil
}

// Recalibrated has every namespace judged again: the calibration changed.
func (r *Reporter) Recalibrated() {
	r.init()
	r.queue.AddAfter(everyNamespace, r.batch())
}

func nodeOf(o any) (kube.Node, error) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return kube.Node{}, fmt.Errorf("not a node: %T", o)
	}
	return kube.NodeOf(n)
}
