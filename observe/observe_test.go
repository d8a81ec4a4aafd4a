package observe

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/probe"
)

// TestWatcher drives one pod through its life on a real API server (no kubelet: the
// test writes what the kubelet and the EndpointSlice controller would) and requires
// exactly the events of the target's pod, in order: nothing for what existed before
// the watch, for another workload's pod, or for another pod's endpoint.
func TestWatcher(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(kubeenv.APIServer(t))
	ctx := context.Background()
	ns := "shop"
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}))
	web := map[string]string{"app": "web"}
	must(cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: web},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: web}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}},
	}}, metav1.CreateOptions{}))
	pod := func(name string, labels map[string]string) *corev1.Pod {
		t.Helper()
		p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	setStatus := func(p *corev1.Pod, ready bool, exited bool) *corev1.Pod {
		t.Helper()
		p, err := cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		if exited {
			state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error"}}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "app", State: state}}
		p, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	yes, no := true, false
	type ep struct {
		pod, addr          string
		ready, terminating bool
	}
	slice := func(name, svc string, eps ...ep) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{}}
		for _, e := range eps {
			r, term := &no, &no
			if e.ready {
				r = &yes
			}
			if e.terminating {
				term = &yes
			}
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.addr}, Conditions: discoveryv1.EndpointConditions{Ready: r, Terminating: term},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: e.pod}})
		}
		return s
	}
	writeSlice := func(s *discoveryv1.EndpointSlice) {
		t.Helper()
		cur, err := cs.DiscoveryV1().EndpointSlices(ns).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			must(cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, s, metav1.CreateOptions{}))
			return
		}
		s.ResourceVersion = cur.ResourceVersion
		must(cs.DiscoveryV1().EndpointSlices(ns).Update(ctx, s, metav1.UpdateOptions{}))
	}

	// Before the watch: a ready pod of web in its Service's slice.
	old := setStatus(pod("web-old", web), true, false)
	writeSlice(slice("web-abc", "web", ep{"web-old", "10.0.0.1", true, false}))

	target, err := Resolve(ctx, cs, ns, "deploy/web")
	if err != nil {
		t.Fatal(err)
	}
	if target.Name != "deployment/web" || target.Selector.String() != "app=web" {
		t.Fatalf("target %s, selector %s", target.Name, target.Selector)
	}
	w, err := Start(ctx, cs, target)
	if err != nil {
		t.Fatal(err)
	}
	// Each write is seen before the next, so that the two watches' events are in the
	// order written (TestWatcherSliceFirst takes a slice seen before its pod).
	await := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); len(w.Events()) < n; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d events after 20s, want %d: %v", len(w.Events()), n, w.Events())
			}
		}
	}
	// Another workload's pod, and its endpoint in a slice of another Service.
	other := pod("db-0", map[string]string{"app": "db"})
	writeSlice(slice("db-xyz", "db", ep{"db-0", "10.0.0.9", true, false}))
	// A new pod of web: created, endpoint not ready, ready, endpoint ready.
	p := pod("web-new", web)
	await(1)
	writeSlice(slice("web-abc", "web", ep{"web-old", "10.0.0.1", true, false}, ep{"web-new", "10.0.0.2", false, false}))
	await(2)
	setStatus(p, true, false)
	await(3)
	writeSlice(slice("web-abc", "web", ep{"web-old", "10.0.0.1", true, false}, ep{"web-new", "10.0.0.2", true, false}))
	await(4)
	// The old pod terminates as a rollout ends it.
	must(nil, cs.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{}))
	await(5)
	writeSlice(slice("web-abc", "web", ep{"web-old", "10.0.0.1", false, true}, ep{"web-new", "10.0.0.2", true, false}))
	await(6)
	setStatus(old, false, true)
	await(8)
	writeSlice(slice("web-abc", "web", ep{"web-new", "10.0.0.2", true, false}))
	await(9)
	zero := int64(0)
	must(nil, cs.CoreV1().Pods(ns).Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))
	must(nil, cs.CoreV1().Pods(ns).Delete(ctx, other.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}))

	want := []string{
		"pod-created web-new",
		"endpoint-added web-new web 10.0.0.2",
		"pod-ready web-new",
		"endpoint-ready web-new web 10.0.0.2",
		"pod-deleting web-old grace 30s",
		"endpoint-terminating web-old web 10.0.0.1",
		"pod-not-ready web-old",
		"container-exited web-old container app exited 143",
		"endpoint-removed web-old web 10.0.0.1",
		"pod-deleted web-old",
	}
	var got []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		got = got[:0]
		for _, e := range w.Events() {
			got = append(got, strings.TrimSpace(strings.Join(slices.DeleteFunc([]string{string(e.Kind), e.Pod, e.Service, e.Detail}, func(s string) bool { return s == "" }), " ")))
			if e.Node != "node-1" {
				t.Errorf("%s of %s on node %q, want node-1", e.Kind, e.Pod, e.Node)
			}
		}
		if len(got) >= len(want) {
			break
		}
	}
	events := w.Stop()
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := 1; i < len(events); i++ {
		if events[i].Time.Before(events[i-1].Time) {
			t.Errorf("events out of time order at %d", i)
		}
	}
	if n := len(w.Stop()); n != len(events) {
		t.Errorf("a second Stop returned %d events, want %d", n, len(events))
	}
}

// TestWatcherSliceFirst: the slices' watch may tell of a new pod's endpoint before the
// pods' watch tells of the pod; its endpoint events then follow its creation, and an
// endpoint of a pod never seen, or gone before its pod was seen, gives none.
func TestWatcherSliceFirst(t *testing.T) {
	w := &Watcher{pods: map[string]string{}, endpoints: map[string]map[string]map[string]endpoint{}}
	yes, no := true, false
	slice := func(eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}, Endpoints: eps}
	}
	ep := func(pod, addr string, ready bool) discoveryv1.Endpoint {
		r := &no
		if ready {
			r = &yes
		}
		return discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: r},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}}
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: "node-1"}}
	}
	w.slice(slice(ep("web-new", "10.0.0.2", false), ep("db-0", "10.0.0.9", true), ep("web-gone", "10.0.0.3", true)), false)
	w.slice(slice(ep("web-new", "10.0.0.2", false), ep("db-0", "10.0.0.9", true)), false)
	if got := w.Events(); len(got) != 0 {
		t.Fatalf("events before any pod of the target: %v", got)
	}
	w.pod(nil, pod("web-new"), false)
	w.slice(slice(ep("web-new", "10.0.0.2", true), ep("db-0", "10.0.0.9", true)), false)
	w.slice(slice(ep("db-0", "10.0.0.9", true)), false)
	var got []string
	for _, e := range w.Events() {
		got = append(got, strings.Join([]string{string(e.Kind), e.Pod, e.Node, e.Service, e.Detail}, " "))
	}
	want := []string{
		"pod-created web-new node-1  ",
		"endpoint-added web-new node-1 web 10.0.0.2",
		"endpoint-ready web-new node-1 web 10.0.0.2",
		"endpoint-removed web-new node-1 web 10.0.0.2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestResolve(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(kubeenv.APIServer(t))
	ctx := context.Background()
	for _, tc := range []struct{ in, name, sel, err string }{
		{in: "app=web,tier in (a,b)", name: "app=web,tier in (a,b)", sel: "app=web,tier in (a,b)"},
		{in: "deploy/missing", err: `--watch deploy/missing in namespace default: deployments.apps "missing" not found`},
		{in: "cronjob/x", err: "want deployment/NAME"},
		{in: "deploy/", err: "want deployment/NAME"},
		{in: "app in (", err: "neither KIND/NAME nor a label selector"},
		{in: "", err: "an empty selector"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			tg, err := Resolve(ctx, cs, "default", tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || tg.Name != tc.name || tg.Selector.String() != tc.sel {
				t.Fatalf("got %s %v %v", tg.Name, tg.Selector, err)
			}
		})
	}
}

// Each kind is said in words and marked for the plot.
func TestWords(t *testing.T) {
	for _, tc := range []struct {
		e           Event
		words, mark string
	}{
		{Event{Kind: PodCreated}, "created", probe.MarkServing},
		{Event{Kind: PodDeleting, Detail: "grace 30s"}, "termination began (grace 30s)", probe.MarkLeaving},
		{Event{Kind: ContainerExited, Detail: "container app exited 143"}, "container app exited 143", probe.MarkLeaving},
		{Event{Kind: EndpointRemoved, Service: "web", Detail: "10.0.0.1"}, "left Service web's EndpointSlice", probe.MarkChange},
		{Event{Kind: EndpointAdded, Service: "web"}, "added to Service web's EndpointSlice, not ready", probe.MarkChange},
		{Event{Kind: PodDeleted}, "deleted", probe.MarkLeaving},
	} {
		if w, m := tc.e.Words(), tc.e.Kind.Mark(); w != tc.words || m != tc.mark {
			t.Errorf("%s: %q %s, want %q %s", tc.e.Kind, w, m, tc.words, tc.mark)
		}
	}
	for _, k := range Kinds {
		if _, ok := words[k]; !ok {
			t.Errorf("kind %s has no words", k)
		}
	}
}

// TestProbeEvents: the watcher's events on the probe's timeline, in observe's words.
func TestProbeEvents(t *testing.T) {
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	in := []Event{{Time: start.Add(1500 * time.Millisecond), Kind: PodDeleted, Pod: "web-1", Node: "n2"}}
	got := ProbeEvents(in, start)
	if len(got) != 1 || got[0].Seconds != 1.5 || got[0].Pod != "web-1" || got[0].Kind != string(PodDeleted) ||
		got[0].Words != in[0].Words() || got[0].Mark != PodDeleted.Mark() {
		t.Errorf("ProbeEvents = %+v", got)
	}
}
