package evicted

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
)

// TestRouterAPIServer runs the Router against a real API server (envtest): its field
// selector is one the API server accepts for Events, a kubelet's Evicted Event on a
// pod that holds gets that pod deleted with its grace period, and Events it must not
// act on, written before, left their pods alone. (There is no kubelet: a pod bound to
// a node keeps its deletionTimestamp, which is what the routes read.)
func TestRouterAPIServer(t *testing.T) {
	cfg := kubeenv.APIServer(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, hold bool) *corev1.Pod {
		p := pod(func(p *corev1.Pod) {
			p.Name, p.UID, p.Spec.NodeName = name, "", "node-a"
			p.Spec.Containers[0].Image = "app:1"
			if !hold {
				p.Spec.Containers[0].Lifecycle = nil
			}
		})
		p, err := cs.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	evict := func(p *corev1.Pod, component string) {
		ev := event(func(e *corev1.Event) {
			e.Name = p.Name + ".evicted"
			e.InvolvedObject.Name, e.InvolvedObject.UID = p.Name, p.UID
			e.Source.Component = component
		})
		if _, err := cs.CoreV1().Events("shop").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Before the Router starts: its informer lists them.
	other, plain := mk("other", true), mk("plain", false)
	evict(other, "someone")
	evict(plain, "kubelet")
	r := &Router{Client: cs, Log: logr.Discard()}
	go r.Start(ctx)
	// Then one it must act on, seen by its watch.
	evict(mk("held", true), "kubelet")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		p, err := cs.CoreV1().Pods("shop").Get(ctx, "held", metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil {
			if err == nil && (p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 45) {
				t.Errorf("deleted with grace %v, want the pod's 45 s", p.DeletionGracePeriodSeconds)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the evicted pod that holds is not deleted after 30 s")
		}
	}
	// The other two: one never sent (the selector), one queued before and done first by
	// the same worker.
	for _, name := range []string{"other", "plain"} {
		p, err := cs.CoreV1().Pods("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Errorf("pod %s: %v, deleting %v: want it left alone", name, err, p.DeletionTimestamp)
		}
	}

	// A node whose kubelet says it shuts down (its Ready condition, written through the
	// status subresource as a kubelet does): its pod that holds is deleted, found by
	// the API server's field selector on spec.nodeName; a pod on another node is not.
	for _, name := range []string{"node-b", "node-c"} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"b", "c"} {
		p := pod(func(p *corev1.Pod) {
			p.Name, p.UID, p.Spec.NodeName = "on-"+name, "", "node-"+name
			p.Spec.Containers[0].Image = "app:1"
		})
		if _, err := cs.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: shuttingDown, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		p, err := cs.CoreV1().Pods("shop").Get(ctx, "on-b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.DeletionTimestamp != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod that holds, on a node that shuts down, is not deleted after 30 s")
		}
	}
	if p, err := cs.CoreV1().Pods("shop").Get(ctx, "on-c", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("pod on-c, on a node that serves: %v, deleting %v: want it left alone", err, p.DeletionTimestamp)
	}
}
