package report

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nap-k8s/nap/kube"
)

// rollEvery evicts a not-injected pod every RollInterval, until ctx ends.
func (r *Reporter) rollEvery(ctx context.Context) {
	every := r.RollInterval
	if every <= 0 {
		every = time.Minute
	}
	t := time.NewTicker(min(every, 10*time.Second))
	defer t.Stop()
	for {
		if err := r.RollOne(ctx); err != nil && ctx.Err() == nil {
			r.Log.Error(err, "rolling a pod the webhook missed")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RollOne evicts one not-injected pod, unless one was evicted less than RollInterval ago.
func (r *Reporter) RollOne(ctx context.Context) error {
	every := r.RollInterval
	if every <= 0 {
		every = time.Minute
	}
	if time.Since(r.lastRoll) < every {
		return nil
	}
	for _, p := range r.NotInjected() {
		if len(p.OwnerReferences) == 0 {
			continue // nothing would recreate it
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		err := r.Client.SubResource("eviction").Create(ctx, &p, ev)
		switch {
		case err == nil:
			r.lastRoll = time.Now()
			rolled.WithLabelValues(p.Namespace).Inc()
			w := kube.WorkloadOf(&p)
			r.Log.Info("evicted a pod the webhook missed, to be recreated through it", "pod", p.Namespace+"/"+p.Name, "workload", w.String())
			if r.Recorder != nil {
				r.Recorder.Event(objectOf(w), corev1.EventTypeNormal, "NapRolled", "evicted pod "+p.Name+", which nap's webhook missed, so that it is recreated with a preStop delay")
			}
			return nil
		case apierrors.IsTooManyRequests(err): // a PodDisruptionBudget says not now
			continue
		case apierrors.IsNotFound(err):
			continue
		default:
			return fmt.Errorf("evicting %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}
