package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/nap-k8s/nap/kube"
)

// report puts a Warning event on each workload of namespace ns whose finding is new or
// has more pods than when it was last reported, and sets the namespace's gauges. The
// events keep the Reporter's pace (budget.go): the workloads' own findings first, and
// those past the pace booked for later, the namespace synced again when they are due;
// then a path's findings (reasons: its change gives every workload it reaches one at
// once), each told only if a token is spare now and otherwise left for a later sync of
// the namespace, never booked: a raised route does not become an event per workload
// of the fleet, written for half an hour.
func (r *Reporter) report(ns string, st *nsState) {
	unprotected.DeletePartialMatch(prometheus.Labels{"namespace": ns})
	hookFailures.DeletePartialMatch(prometheus.Labels{"namespace": ns})
	now := r.events.now()
	waiting := 0
	seen := map[findingKey]bool{}
	for _, f := range st.found {
		k := findingKey{workload: f.Workload, reason: f.Reason, cause: f.Cause}
		seen[k] = true
		if f.Reason == FailedPreStopHook {
			hookFailures.WithLabelValues(f.Workload.Namespace, f.Workload.Kind+"/"+f.Workload.Name, f.Cause).Set(float64(len(f.Pods)))
		} else {
			unprotected.WithLabelValues(f.Workload.Namespace, string(f.Reason)).Add(float64(len(f.Pods)))
		}
	}
	for _, path := range []bool{false, true} {
		for _, f := range st.found {
			k := findingKey{workload: f.Workload, reason: f.Reason, cause: f.Cause}
			if _, ok := rollRemedy[f.Reason]; ok != path || len(f.Pods) <= st.reported[k] {
				continue
			}
			if r.Recorder != nil {
				switch {
				case !path && st.prepaid > 0 && !now.Before(st.due):
					st.prepaid--
					eventsDelayed.Inc()
				case !r.events.take():
					if !path {
						waiting++ // told when its turn comes
					}
					continue
				}
			}
			st.reported[k] = len(f.Pods)
			msg := fmt.Sprintf("%d pod(s) (%s): %s", len(f.Pods), strings.Join(firstN(f.Pods, 5), ", "), f.Message)
			r.Log.Info("unprotected", "workload", f.Workload.String(), "reason", f.Reason, "pods", len(f.Pods), "message", f.Message)
			if r.Recorder != nil {
				r.Recorder.Event(objectOf(f.Workload), corev1.EventTypeWarning, eventReasons[f.Reason], msg)
			}
		}
	}
	for k := range st.reported {
		if !seen[k] {
			delete(st.reported, k) // gone: the workload was rolled, or the events expired
		}
	}
	if !now.Before(st.due) {
		st.prepaid = 0 // what was booked and not needed (the findings went) is spent
	}
	eventsWaiting.Add(float64(waiting - st.waiting))
	st.waiting = waiting
	if waiting > 0 && st.prepaid == 0 {
		st.prepaid, st.due = r.events.reserve(waiting)
		r.queue.AddAfter(ns, st.due.Sub(now))
	}
}

// objectOf is the workload as an event's involved object.
func objectOf(w kube.Workload) *corev1.ObjectReference {
	ref := w.Reference()
	return &ref
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
}
