package report

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/hook"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// MaxLiveBytes is what a namespace's live waits may take: a ConfigMap's keys and values
// (the API server refuses more than 1 MiB).
const MaxLiveBytes = 1 << 20

// liveWait is the wait a running pod p whose hook h reads the live wait should have
// now: the webhook's rule (traffic.PodWait) on the routes that reach it today, from the
// fleet's wait of the kind its hook is (which the pod chose at admission). A pod that
// sets its own delay has none (podSummary.ownDelay): its hook's arguments are its
// wait, as the webhook leaves them.
func (r *Reporter) liveWait(v *nsView, cal *traffic.Calibration, p *corev1.Pod, h hook.Hook) (wait.Wait, error) {
	fleet := r.Waits.Wait(h.Wait.Kind)
	svcs, fronts, err := v.reaching(p)
	if err != nil {
		return wait.Wait{}, err
	}
	got, _, err := traffic.PodWait(cal, fleet, svcs, fronts)
	if err != nil { // a hold no wait may have: the fleet's, as the webhook gives
		return fleet, nil
	}
	return got, nil
}

// addLive raises workload w's live wait in s to what pod p should wait (all its pods'
// at once: a rollout's two templates, annotations that differ).
func (s *nsScan) addLive(w kube.Workload, got wait.Wait) {
	if s.live == nil {
		s.live = map[string]nap.Request{}
	}
	k := kube.LiveKey(w)
	if have, ok := s.live[k]; ok {
		s.live[k] = have.Raise(got.Request())
		return
	}
	s.live[k] = got.Request()
}

// LiveWaitsData is the data of a namespace's live waits (kube.LiveWaitsName), from each
// workload's wait by key (kube.LiveKey): its line (nap.LiveLine), key by key in order
// while keys and lines fit in MaxLiveBytes; those that do not are dropped, and named
// (kube.LiveKeyMax makes 10,000 workloads fit). A wait with no line (a value too long)
// is dropped too: its pods wait their arguments.
func LiveWaitsData(live map[string]nap.Request) (data map[string]string, dropped []string) {
	data = make(map[string]string, len(live))
	size := 0
	for _, k := range slices.Sorted(maps.Keys(live)) {
		line, ok := nap.LiveLine(live[k])
		if !ok || size+len(k)+len(line) > MaxLiveBytes {
			dropped = append(dropped, k)
			continue
		}
		data[k] = line
		size += len(k) + len(line)
	}
	return data, dropped
}

// liveState is what the Reporter knows of a namespace's live waits ConfigMap: its data
// as last read or written (known), and the object, for the next update.
type liveState struct {
	known bool
	cm    *corev1.ConfigMap // nil: none
}

// syncLive keeps namespace ns's live waits ConfigMap at s's: written only where it
// differs from what the Reporter last read or wrote (read once per namespace through
// LiveReader: the cache holds nap's ConfigMap alone), deleted when no pod reads it any
// more. A namespace with no such pod, and none written, costs no call.
func (r *Reporter) syncLive(ctx context.Context, ns string, s *nsScan) error {
	r.mu.Lock()
	st := r.live[ns]
	r.mu.Unlock()
	if len(s.live) == 0 && (st == nil || st.known && st.cm == nil) {
		return nil
	}
	if st == nil {
		st = &liveState{}
	}
	if !st.known {
		reader := r.LiveReader
		if reader == nil {
			reader = r.Client
		}
		var cm corev1.ConfigMap
		switch err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: kube.LiveWaitsName}, &cm); {
		case apierrors.IsNotFound(err):
			st.cm = nil
		case err != nil:
			return fmt.Errorf("live waits: %w", err)
		default:
			st.cm = &cm
		}
		st.known = true
	}
	data, dropped := LiveWaitsData(s.live)
	if len(dropped) > 0 {
		r.Log.Info("live waits left out: a namespace's live waits are bounded by a ConfigMap's size; their pods wait their hooks' arguments", "namespace", ns, "workloads", dropped)
	}
	var err error
	switch {
	case len(data) == 0 && st.cm != nil:
		err = r.Client.Delete(ctx, st.cm)
		if err == nil || apierrors.IsNotFound(err) {
			st.cm, err = nil, nil
		}
	case len(data) == 0, st.cm != nil && maps.Equal(st.cm.Data, data):
	case st.cm == nil:
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kube.LiveWaitsName, OwnerReferences: r.Owner,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "nap"}}, Data: data}
		if err = r.Client.Create(ctx, cm); err == nil {
			st.cm = cm
		}
	default:
		cm := st.cm.DeepCopy()
		cm.Data = data
		if err = r.Client.Update(ctx, cm); err == nil {
			st.cm = cm
		}
	}
	if err != nil {
		st.known = false // read again at the next sync: it changed, or is not what was thought
	}
	r.mu.Lock()
	if r.live == nil {
		r.live = map[string]*liveState{}
	}
	r.live[ns] = st
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("live waits: %w", err)
	}
	return nil
}
