package e2e

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nap-k8s/nap/controller/evicted"
	"github.com/nap-k8s/nap/inject"
)

// TestKubeletTerminations measures the terminations a kubelet starts itself, with no
// deletion (#48), at 200 req/s, each once:
//   - an exceeded activeDeadlineSeconds, one pod on each node (kubelets 1.37 and 1.34),
//     seen through the application load balancer with pod targets (lbPods), which
//     sends to a pod until 10 s after its endpoint left: without a preStop requests
//     fail, by construction; the kubelet marks the pod not ready at once, its endpoint
//     leaves before the preStop ends, and nap's delay past that lag (napPastLag) loses
//     nothing over new connections. (Through the ingress the control's loss was a race
//     with Traefik, which let both pods go before they exited in 1 run of 10: the
//     experiment's row, make e2e-downtime.)
//   - a soft node-pressure eviction on node 2 (1.34), and a graceful shutdown of node 2
//     (its kubelet's own shutdown manager, told by the lab's logind), at the ClusterIP
//     from node 1: the endpoint stays in service until the app has exited, so a preStop
//     delay only moves the loss later. nap's row must still show the leak (it is the
//     negative control of the next rows): the day a kubelet takes such a pod out of its
//     routes first, this fails and the protection nap builds for it can be
//     reconsidered;
//   - the same two with nap's controller installed: its webhook gives the pods their
//     hook, its Router deletes each pod at its kubelet's Evicted Event, or once its
//     node says it shuts down, and nothing is lost over new connections.
//
// For each pod stopped it logs when its endpoint went out of service and when its app
// exited, from when the stop was first seen (docs/downtime.md, "Terminations the
// kubelet starts"). Without a preStop in an eviction or a shutdown the loss is the
// experiment's (make e2e-downtime).
func TestKubeletTerminations(t *testing.T) {
	cs := client(t)
	runs := []scenario{
		{path: lbPods, disruption: deadlineExceeded, variant: noDelay, expect: fails},
		{path: lbPods, disruption: deadlineExceeded, variant: napPastLag, expect: newClean},
		{path: clusterIPNode1, disruption: nodePressure, variant: napBinary, expect: fails},
		{path: clusterIPNode1, disruption: nodeShutdown, variant: napBinary, expect: fails},
	}
	if os.Getenv("NAP_E2E_MECHANISMS") != "" {
		// The three mechanisms the router chose between, done by the test itself,
		// before nap's controller runs: its Router would delete the pods first. A closed
		// readiness gate does not take the pod out (napGated fails).
		runs = append(runs, scenario{path: clusterIPNode1, disruption: nodePressure, variant: napDeleted, expect: newClean},
			scenario{path: clusterIPNode1, disruption: nodePressure, variant: napUnlabelled, expect: newClean},
			scenario{path: clusterIPNode1, disruption: nodePressure, variant: napGated, expect: fails})
	}
	// nap's controller installed, last: once it runs, its policy keeps the other rows'
	// own ConfigMaps out, and its Router takes out every pod a kubelet stops.
	runs = append(runs, scenario{path: clusterIPNode1, disruption: nodePressure, variant: viaWebhook, expect: newClean},
		scenario{path: clusterIPNode1, disruption: nodeShutdown, variant: viaWebhook, expect: newClean})
	for _, sc := range runs {
		sc.rounds = 1
		d, v := sc.disruption, sc.variant
		leaks := d == nodePressure || d == nodeShutdown
		if v.webhook {
			installController(t, cs)
		}
		m := prove(t, cs, sc, 200)
		if v.outOfRoutes != 0 || v.webhook {
			// Taken out of the routes during the preStop (an unlabelled pod leaves the
			// demo pods' watch at once).
			if v.webhook {
				routedOut(t, cs, m)
			}
			continue
		}
		served := servedStops(m.kubelet)
		if len(served) != 2 {
			t.Errorf("%s: %d pods that served stopped by a kubelet, want 2: %v", sc, len(served), m.kubelet)
		}
		for _, k := range served {
			switch {
			case !k.leftSeen:
				t.Errorf("%s: %s", sc, k)
			case v.control || !k.exitedSeen:
			case !leaks && k.left >= k.exited:
				t.Errorf("%s: %s: the endpoint left after the app exited", sc, k)
			case leaks && k.left < k.exited-time.Second:
				t.Errorf("%s: %s: the endpoint left before the app exited: the leak this test records is gone", sc, k)
			}
		}
		if leaks && m.failedNew() == 0 {
			t.Errorf("%s: no request lost over new connections with a preStop alone: the leak this test records is gone", sc)
		}
	}
	if _, err := os.Stat("/etc/systemd/logind.conf.d/99-kubelet.conf"); err == nil {
		t.Errorf("a kubelet wrote the machine's logind configuration (/etc/systemd/logind.conf.d/99-kubelet.conf)")
	}
}

// napPastLag: nap's binary at a fixed delay past lbPods' deregistration lag (10 s).
var napPastLag = variant{name: "nap preStop 15s (binary)", mode: "plain", inject: &inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("15s")}}

// expire gives one demo pod on each node an activeDeadlineSeconds that ends 2 s from
// now (the field may be set on a running pod, or shortened), and waits until both
// have ended.
func expire(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	ctx := context.Background()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
	if err != nil {
		t.Fatal(err)
	}
	picked := map[string]string{} // node → pod
	for _, p := range pods.Items {
		if _, ok := picked[p.Spec.NodeName]; !ok && !terminal(p) && p.DeletionTimestamp == nil && p.Status.StartTime != nil {
			picked[p.Spec.NodeName] = p.Name
			secs := int64(math.Ceil(time.Since(p.Status.StartTime.Time).Seconds())) + 2
			patch := fmt.Sprintf(`{"spec":{"activeDeadlineSeconds":%d}}`, secs)
			if _, err := cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if picked[node1] == "" || picked[node2] == "" {
		t.Fatalf("no demo pod on each node: %v", picked)
	}
	for _, name := range picked {
		waitTerminal(t, cs, ns, name, time.Minute)
	}
}

// waitTerminal waits until pod ns/name has ended (or is gone: deleted once stopped).
func waitTerminal(t *testing.T, cs *kubernetes.Clientset, ns, name string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(200 * time.Millisecond) {
		p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if terminal(*p) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not ended after %v: %s %s", name, within, p.Status.Phase, p.Status.Reason)
		}
	}
}

// evictableClassName is the priority of the demo pods in an eviction: below every other
// pod's (the default is 0), so that the kubelet evicts them first and nothing of the
// lab's.
const evictableClassName = "nap-e2e-evictable"

// evictable makes the demo pods of spec the first a disk-pressure eviction takes: the
// kubelet ranks first the pods that use more of the file system than they request,
// then the lowest priority. They get the PriorityClass evictableClassName (made when
// it is not there) and write 1 MiB into an emptyDir of their own (fill), more than
// their request of none: what the kubelet reads of their logs alone may still be 0.
func evictable(t *testing.T, cs *kubernetes.Clientset, spec *corev1.PodSpec) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: evictableClassName}, Value: -1000,
		PreemptionPolicy: ptr.To(corev1.PreemptNever), Description: "nap's end-to-end tests: the pods a node-pressure eviction takes first"}
	if _, err := cs.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	spec.PriorityClassName = evictableClassName
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	c := &spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: "APP_FILL", Value: "/scratch/data:1"})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: "/scratch"})
}

// runningOn returns the demo pods on node that run and are not deleting, the ones a
// disruption there will stop; none fails the test (what: the disruption's verb).
func runningOn(t *testing.T, cs *kubernetes.Clientset, ns, node, what string) []string {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=app", FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if !terminal(p) && p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		t.Fatalf("no demo pod on %s to %s", node, what)
	}
	return names
}

// fillMiB is what the filler writes on node 2's file system (hack/cluster.sh node2fs:
// 1024 MiB, soft eviction below 50% free): past the threshold by about 200 MiB.
const fillMiB = 700

// fillerResources: the filler requests what it writes and a little more: within its
// request, it is evicted after every demo pod, which exceed theirs (evictable). Where
// node 2 cannot allocate that much (a hard threshold is taken off its allocatable:
// NAP_NODE2_EVICTION=hard, hack/cluster.sh), it requests nothing: the demo pods'
// priority, below its own, still ranks them first.
func fillerResources(t *testing.T, cs *kubernetes.Clientset) corev1.ResourceRequirements {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), node2, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := resource.MustParse(fmt.Sprintf("%dMi", fillMiB+20))
	if have := n.Status.Allocatable[corev1.ResourceEphemeralStorage]; have.Cmp(want) < 0 {
		t.Logf("%s allocates %s of ephemeral storage, less than the filler writes: it requests none", node2, have.String())
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: want}}
}

// pressure runs a filler pod on node 2 (the demo app writing fillMiB into an emptyDir
// before it serves), waits until the kubelet has evicted the demo pods there (ranked
// first: evictable), and until the pressure is over: the filler deleted and node 2
// without DiskPressure, so that later tests can use it.
func pressure(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	ctx := context.Background()
	targets := runningOn(t, cs, ns, node2, "evict")
	filler := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "filler", Labels: map[string]string{"app": "filler"}},
		Spec: corev1.PodSpec{
			NodeName:                      node2,
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
			Containers: []corev1.Container{{Name: "filler", Image: "nap/app:e2e", ImagePullPolicy: corev1.PullNever,
				Env:          []corev1.EnvVar{{Name: "APP_FILL", Value: fmt.Sprintf("/fill/data:%d", fillMiB)}},
				Resources:    fillerResources(t, cs),
				VolumeMounts: []corev1.VolumeMount{{Name: "fill", MountPath: "/fill"}}}},
			Volumes: []corev1.Volume{{Name: "fill", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, filler, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	removed := false
	remove := func() {
		if removed {
			return
		}
		removed = true
		err := cs.CoreV1().Pods(ns).Delete(context.Background(), filler.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	t.Cleanup(remove)
	for _, name := range targets {
		waitTerminal(t, cs, ns, name, 3*time.Minute)
	}
	remove()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		n, err := cs.CoreV1().Nodes().Get(ctx, node2, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pressed := false
		for _, c := range n.Status.Conditions {
			pressed = pressed || c.Type == corev1.NodeDiskPressure && c.Status == corev1.ConditionTrue
		}
		for _, taint := range n.Spec.Taints {
			pressed = pressed || taint.Key == corev1.TaintNodeDiskPressure
		}
		if !pressed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still under disk pressure 2 minutes after the filler went: %v %v", node2, n.Status.Conditions, n.Spec.Taints)
		}
	}
}

// routesOut is how a pod a kubelet stops is taken out of its Service's routes.
type routesOut int

const (
	// byDeletion: the pod is deleted, with its own grace period (the kubelet's stop
	// goes on; the endpoint turns terminating at once, as in any deletion; the pod is
	// gone from the API once it has stopped).
	byDeletion routesOut = iota + 1
	// byLabel: the label its Service (and ReplicaSet) select on, app, is removed: the
	// endpoint goes at once; the ReplicaSet lets the pod go and replaces it.
	byLabel
	// byGate: the pods carry a readiness gate (gateCondition) that a keeper opens once
	// their containers are ready (openGates) and closes at the eviction, meant to turn
	// the pod not ready while it stays in its ReplicaSet. Measured, it does not: the
	// kubelet stopping the pod does not recompute its Ready condition (napGated).
	byGate
)

// gateCondition is the readiness gate byGate gives the demo pods: a pod is Ready only
// once something sets this condition True on it.
const gateCondition = "nap.dev/in-routes"

// setGate sets pod ns/name's gateCondition to status (the pod's status subresource, as
// a controller that owns the gate would).
func setGate(ctx context.Context, cs kubernetes.Interface, ns, name string, status corev1.ConditionStatus) error {
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q,"lastTransitionTime":%q}]}}`,
		gateCondition, status, time.Now().UTC().Format(time.RFC3339))
	_, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	return err
}

// openGates keeps the readiness gate of the demo pods in ns open: every 100 ms, a pod
// whose containers are ready and whose gate is not set yet gets it True (the keeper
// stands in for the controller a gate would need: without it no such pod is ever
// ready). It runs until the test ends, and logs then how long the pods' readiness
// waited for it: from ContainersReady to the gate set.
func openGates(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	opened := map[string]time.Duration{}
	end := every(100*time.Millisecond, func(ctx context.Context) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
		if err != nil {
			return
		}
		for _, p := range pods.Items {
			if _, done := opened[p.Name]; done || p.DeletionTimestamp != nil || terminal(p) {
				continue
			}
			var containersReady *corev1.PodCondition
			gated := false
			for i, c := range p.Status.Conditions {
				switch c.Type {
				case corev1.ContainersReady:
					if c.Status == corev1.ConditionTrue {
						containersReady = &p.Status.Conditions[i]
					}
				case gateCondition:
					gated = true
				}
			}
			if containersReady == nil || gated {
				continue
			}
			if err := setGate(ctx, cs, ns, p.Name, corev1.ConditionTrue); err == nil {
				opened[p.Name] = time.Since(containersReady.LastTransitionTime.Time)
			}
		}
	})
	t.Cleanup(func() {
		end()
		var waits []string
		for name, d := range opened {
			waits = append(waits, fmt.Sprintf("%s %.1fs", name, d.Seconds()))
		}
		slices.Sort(waits)
		t.Logf("readiness gates opened, after ContainersReady (its time in whole seconds): %s", strings.Join(waits, ", "))
	})
}

// takeOutOfRoutes reads, every 100 ms, the Events in ns that say a kubelet evicts a
// demo pod (reason Evicted, which the kubelet records before it stops the pod) and takes
// each such pod out of its routes, by how, as a controller that watched them would. Not
// the pod's DisruptionTarget condition: the kubelet sends that only once the pod's
// containers have stopped (TestKubeletTerminations), too late to help. It returns a
// stop that ends it and says what it did, how long after the Event was read.
func takeOutOfRoutes(t *testing.T, cs *kubernetes.Clientset, ns string, how routesOut) (stop func() []string) {
	t.Helper()
	var did []string
	acted := map[string]bool{}
	end := every(100*time.Millisecond, func(ctx context.Context) {
		events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Evicted,involvedObject.kind=Pod"})
		if err != nil {
			return
		}
		for _, ev := range events.Items {
			name := ev.InvolvedObject.Name
			if acted[name] || ev.Source.Component != "kubelet" {
				continue
			}
			seen := time.Now()
			acted[name] = true
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || p.UID != ev.InvolvedObject.UID || p.DeletionTimestamp != nil || terminal(*p) {
				did = append(did, fmt.Sprintf("pod %s: evicted, left alone (%v)", name, err))
				if err == nil && p.DeletionTimestamp != nil {
					// Something else took it out first (nap's controller, still
					// installed): the row would not measure the mechanism.
					t.Errorf("pod %s in %s: evicted and already deleting when read: the row does not measure %v", name, ns, how)
				}
				continue
			}
			switch how {
			case byDeletion:
				err = cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: p.Spec.TerminationGracePeriodSeconds,
					Preconditions: &metav1.Preconditions{UID: &p.UID}})
			case byLabel:
				patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},{"op":"remove","path":"/metadata/labels/app"}]`, p.UID)
				_, err = cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
			case byGate:
				err = setGate(ctx, cs, ns, p.Name, corev1.ConditionFalse)
			}
			did = append(did, fmt.Sprintf("pod %s taken out of its routes (%v) %.2fs after its eviction was read: %v", name, how, time.Since(seen).Seconds(), err))
		}
	})
	return func() []string {
		end()
		return did
	}
}

func (h routesOut) String() string {
	return map[routesOut]string{byDeletion: "deleted", byLabel: "unlabelled", byGate: "gate closed"}[h]
}

// routedOut checks that nap's controller deleted the demo pods its kubelet stopped in
// m: each carries the Router's Event, and they are the pods that served of those the
// kubelet evicted (their Evicted Events) or stopped for the node's shutdown.
func routedOut(t *testing.T, cs *kubernetes.Clientset, m downtime) {
	t.Helper()
	events, err := cs.CoreV1().Events(m.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The pods that served: one the kubelet stopped before it ever served has no route
	// to leave (a replacement the Router's deletions made, which the kubelet of a node
	// shutting down refuses at once: NodeShutdown; CI-like run 24, 2026-12-08).
	stopped, routed, neverServed := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, k := range m.kubelet {
		neverServed[k.pod] = !k.served
	}
	reason := evicted.RoutedOut
	if m.scenario.disruption == nodeShutdown {
		reason = evicted.RoutedOutShutdown
		for _, k := range servedStops(m.kubelet) {
			stopped[k.pod] = true
		}
	}
	for _, ev := range events.Items {
		switch ev.Reason {
		case evicted.Reason:
			if m.scenario.disruption == nodePressure && ev.InvolvedObject.Kind == "Pod" && !strings.HasPrefix(ev.InvolvedObject.Name, "filler") && !neverServed[ev.InvolvedObject.Name] {
				stopped[ev.InvolvedObject.Name] = true
			}
		case reason:
			t.Logf("%s: %s", ev.InvolvedObject.Name, ev.Message)
			if !neverServed[ev.InvolvedObject.Name] {
				routed[ev.InvolvedObject.Name] = true
			}
		}
	}
	if len(stopped) == 0 || !maps.Equal(stopped, routed) {
		t.Errorf("%s: stopped by the kubelet %v, routed out by nap's controller %v: want the same pods", m.scenario, slices.Sorted(maps.Keys(stopped)), slices.Sorted(maps.Keys(routed)))
	}
}

// lastShutdown is when the test last told node 2's kubelet that the node shuts down.
var lastShutdown time.Time

// labShutdown runs hack/cluster.sh node2-shutdown start or cancel.
func labShutdown(t *testing.T, what string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "cluster.sh"), "node2-shutdown", what)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/cluster.sh node2-shutdown %s: %v\n%s", what, err, out)
	}
}

// shutdownNode2 has node 2's logind announce a shutdown to its kubelet, waits until the
// kubelet has stopped the demo pods there, then cancels the shutdown and waits until
// node 2 is Ready, untainted, again: the node serves as before, the machine untouched.
func shutdownNode2(t *testing.T, cs *kubernetes.Clientset, ns string) {
	t.Helper()
	targets := runningOn(t, cs, ns, node2, "stop")
	cancelled := false
	cancel := func() {
		if !cancelled {
			cancelled = true
			labShutdown(t, "cancel")
		}
	}
	t.Cleanup(cancel)
	lastShutdown = time.Now()
	labShutdown(t, "start")
	for _, name := range targets {
		waitTerminal(t, cs, ns, name, 2*time.Minute)
	}
	cancel()
	waitNodeServes(t, cs, node2, 2*time.Minute)
}

// waitNodeServes waits until node is Ready and carries none of the taints a node that
// is not ready or unreachable gets.
func waitNodeServes(t *testing.T, cs *kubernetes.Clientset, node string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(time.Second) {
		n, err := cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable
		})
		if ready && !tainted {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not serving %v after its shutdown was cancelled: %v %v", node, within, n.Status.Conditions, n.Spec.Taints)
		}
	}
}
