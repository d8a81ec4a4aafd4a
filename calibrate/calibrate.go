package calibrate

import (
	"context"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/kube"
)

// Name is the calibration workload's name: its Deployment, Service and Ingress.
const Name = "nap-calibrate"

// ManagedLabel marks the namespace calibrate created, the only kind it deletes.
const ManagedLabel = kube.ManagedByLabel

// managedBy is ManagedLabel's value.
const managedBy = "napctl-calibrate"

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

// pause waits d, or less when ctx ends first (its error then).
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
