package bench_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/controller"
	"github.com/nap-k8s/nap/controller/report"
	"github.com/nap-k8s/nap/internal/testutil/controllerproc"
	"github.com/nap-k8s/nap/kube"
)

// The verdicts that flow in a step: one pod ends in every verdictEvery-th namespace (at
// 10,000 namespaces, 1,000 terminations), one in lateEvery of those late.
const (
	verdictEvery = 10
	lateEvery    = 50
)

// The lines the fleet's pods end with, as nap writes them in the termination message:
// dense traffic (5 M connections since the pod started), quiet with a 1.2 s tail, or
// late.
const (
	quietLine = "nap/v1 quiet end=5000ms last=1200ms conns=40 total=5000000\n"
	lateLine  = "nap/v1 late end=5000ms last=4900ms conns=3000 total=5000000\n"
)

// verdictFigures are what a step's flow of verdicts cost the controller (with --learn).
type verdictFigures struct {
	ended, late int
	// counted: from the first final status written until nap_terminations_total counted
	// every one.
	counted time.Duration
	// writes: the API writes meanwhile and for a minute after (report.TerminationsEvery,
	// the Reporter's hold-back), the fleet's own status updates not counted.
	writes map[string]int
	// evented: the workloads given a NapTerminationLate event; learned: the learned
	// ConfigMap's routes.
	evented, learned int
	// toldBy: from the first final status until no finding waited for its event (the
	// events' pace, report.DefaultEventRate); atRest: the writes over steady after that.
	toldBy time.Duration
	atRest map[string]int
	cpu    float64 // percent of a core while they flowed
}

// verdictNamespace: namespace i has a pod that ends in the flow (never a planted one's
// namespace, whose pods the Reporter's findings count).
func verdictNamespace(i int) bool {
	return i%verdictEvery == verdictEvery/2 && !plantedNotInjected(i) && !plantedFailedHook(i)
}

// measureVerdicts ends the last pod of every verdictNamespace as a kubelet would, with
// nap's line in its final status (late in every lateEvery-th), while ctl runs with
// --learn: how long until every one is counted, what was written, and that nothing is
// written at rest after. The pods are then put back as they were (Running), for the
// phases after.
func measureVerdicts(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, f *fleet, ctl *controllerproc.Replica, steady time.Duration) verdictFigures {
	t.Helper()
	var fig verdictFigures
	var ended []int
	for i := range f.namespaces {
		if verdictNamespace(i) {
			ended = append(ended, i)
		}
	}
	isLate := func(k int) bool { return k%lateEvery == lateEvery/2 }
	last := f.perNS - 1
	before0 := terminationsCounted(t, ctl)
	w0 := writesByResource(t, cs)
	cpu0 := cpuOf(t, ctl.Cmd.Process.Pid)
	began := time.Now()
	if err := doOn(8, 0, len(ended), func(k int) error {
		line := quietLine
		if isLate(k) {
			line = lateLine
		}
		return f.end(ctx, ended[k], last, line)
	}); err != nil {
		t.Fatal(err)
	}
	for k := range ended {
		if isLate(k) {
			fig.late++
		}
	}
	fig.ended = len(ended)
	for deadline := time.Now().Add(5 * time.Minute); terminationsCounted(t, ctl)-before0 < float64(fig.ended); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v of %d terminations counted 5 minutes after their final status", terminationsCounted(t, ctl)-before0, fig.ended)
		}
	}
	fig.counted = time.Since(began)
	fig.cpu = 100 * (cpuOf(t, ctl.Cmd.Process.Pid) - cpu0).Seconds() / fig.counted.Seconds()
	// The Reporter writes a quiet tally at most every report.TerminationsEvery: a margin
	// past it, then nothing more may come.
	time.Sleep(report.TerminationsEvery + 5*time.Second)
	fig.writes = diff(writesByResource(t, cs), w0)
	fig.writes["pods PUT"] -= fig.ended // the final statuses themselves
	if fig.writes["pods PUT"] == 0 {
		delete(fig.writes, "pods PUT")
	}
	l, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + report.EventTerminationLate})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range l.Items {
		if !e.LastTimestamp.Time.Before(began.Truncate(time.Second)) {
			seen[e.Namespace+"/"+e.InvolvedObject.Name] = true
		}
	}
	fig.evented = len(seen)
	cm, err := cs.CoreV1().ConfigMaps(controller.DefaultNamespace).Get(ctx, kube.LearnedConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the learned ConfigMap after %d terminations, %d late: %v", fig.ended, fig.late, err)
	}
	learned, err := controller.ReadLearnedConfigMap(cm)
	if err != nil {
		t.Fatal(err)
	}
	fig.learned = len(learned.Routes)

	// The workloads' own findings past the events' pace wait for their turn
	// (report.DefaultEventRate); a path's (those a raise put below their route) never
	// wait: at rest is once none waits.
	for deadline := time.Now().Add(10 * time.Minute); metricSum(t, ctl, "nap_reporter_events_waiting") > 0; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("%v events still waiting for their turn 10 minutes on", metricSum(t, ctl, "nap_reporter_events_waiting"))
		}
	}
	fig.toldBy = time.Since(began)
	rest0 := writes(t, cs, "")
	time.Sleep(steady)
	fig.atRest = diff(writes(t, cs, ""), rest0)
	t.Logf("verdicts: %d pods ended (%d late), counted within %v at %.0f%% of a core; writes %s; %d workloads evented late, %d routes learned; at rest over %v after: writes %s",
		fig.ended, fig.late, fig.counted.Round(100*time.Millisecond), fig.cpu, format(fig.writes), fig.evented, fig.learned, steady, format(fig.atRest))
	if fig.evented != fig.late {
		t.Errorf("%d workloads given %s, want the %d late terminations' own", fig.evented, report.EventTerminationLate, fig.late)
	}
	if fig.learned == 0 {
		t.Errorf("no route learned from %d terminations, %d late", fig.ended, fig.late)
	}
	if len(fig.atRest) != 0 {
		t.Errorf("writes at rest after the verdicts: %s, want none", format(fig.atRest))
	}

	// Back as they were: the ended pods deleted and made anew, Running.
	if err := doOn(8, 0, len(ended), func(k int) error {
		ns, name := nsName(ended[k]), "web-"+rsHash+"-"+podSuffix(last)
		if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			return err
		}
		return f.pod(ctx, ended[k], last)
	}); err != nil {
		t.Fatal(err)
	}
	return fig
}

// end writes namespace i's pod j's final status as its kubelet does when nap's hook
// wrote line and the container exited: Succeeded, the line its termination message.
func (f *fleet) end(ctx context.Context, i, j int, line string) error {
	p, err := f.cs.CoreV1().Pods(nsName(i)).Get(ctx, "web-"+rsHash+"-"+podSuffix(j), metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	p.Status.Phase = corev1.PodSucceeded
	for k := range p.Status.Conditions {
		if c := &p.Status.Conditions[k]; c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
			c.Status, c.LastTransitionTime = corev1.ConditionFalse, now
		}
	}
	for k := range p.Status.ContainerStatuses {
		st := &p.Status.ContainerStatuses[k]
		started := now
		if st.State.Running != nil {
			started = st.State.Running.StartedAt
		}
		st.Ready = false
		st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: line,
			StartedAt: started, FinishedAt: now, ContainerID: st.ContainerID}}
	}
	_, err = f.cs.CoreV1().Pods(nsName(i)).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	f.writes.Add(1)
	return err
}

// terminationsCounted is the sum of ctl's nap_terminations_total over its verdicts.
func terminationsCounted(t *testing.T, ctl *controllerproc.Replica) float64 {
	t.Helper()
	return metricSum(t, ctl, "nap_terminations_total")
}

// metricSum is the sum of the controller's series of metric name, as it serves them now.
func metricSum(t *testing.T, ctl *controllerproc.Replica, name string) float64 {
	t.Helper()
	code, body := ctl.Get("/metrics", ctl.Metrics)
	if code != 200 {
		t.Fatalf("the controller's metrics: %d %s", code, body)
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `(?:\{[^}]*\})? (\S+)$`)
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			sum += v
		}
	}
	return sum
}

// verdictsRow is the report's line of a step's verdicts.
func verdictsRow(v verdictFigures) string {
	return fmt.Sprintf("%d ended (%d late): counted in %.1f s (%.0f%% of a core); writes %s; %d late events, %d routes learned; none waiting for its turn after %.0f s; at rest after: %s",
		v.ended, v.late, v.counted.Seconds(), v.cpu, format(v.writes), v.evented, v.learned, v.toldBy.Seconds(), format(v.atRest))
}
