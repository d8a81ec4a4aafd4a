package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestWatchNodes: the NodeSet the webhook reads follows the nodes of a real
// kube-apiserver: a kubelet's version as it is now, a node added, a node deleted, and
// it is not made again while no node changed.
func TestWatchNodes(t *testing.T) {
	_, mgr := envtestManager(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go mgr.Start(ctx)
	w, err := client.New(mgr.GetConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	must(w.Create(ctx, node))
	node.Status.NodeInfo.KubeletVersion = "v1.34.1"
	must(w.Status().Update(ctx, node))
	nodes, err := WatchNodes(ctx, mgr.GetCache())
	must(err)
	must(w.Get(ctx, client.ObjectKey{Name: "node-a"}, node))
	node.Status.NodeInfo.KubeletVersion = "v1.29.4"
	must(w.Status().Update(ctx, node))
	// The kubelet as it is now, then a second node.
	names := func() string {
		ns, err := nodes.Nodes(ctx)
		must(err)
		var s []string
		for _, n := range ns {
			s = append(s, n.Name+" "+n.Kubelet.String())
		}
		return strings.Join(s, ",")
	}
	for deadline := time.Now().Add(10 * time.Second); names() != "node-a 1.29" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
	}
	if got := names(); got != "node-a 1.29" {
		t.Errorf("the webhook's nodes: %q, want node-a 1.29", got)
	}
	b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
	must(w.Create(ctx, b))
	b.Status.NodeInfo.KubeletVersion = "v1.36.0"
	must(w.Status().Update(ctx, b))
	for deadline := time.Now().Add(10 * time.Second); names() != "node-a 1.29,node-b 1.36" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
	}
	if got := names(); got != "node-a 1.29,node-b 1.36" {
		t.Errorf("the webhook's nodes: %q, want node-a 1.29,node-b 1.36", got)
	}
	first, _ := nodes.Nodes(ctx)
	again, _ := nodes.Nodes(ctx)
	if &first[0] != &again[0] {
		t.Error("the webhook's nodes were made again with no node changed")
	}
	must(w.Delete(ctx, b))
	for deadline := time.Now().Add(10 * time.Second); names() != "node-a 1.29" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
	}
	if got := names(); got != "node-a 1.29" {
		t.Errorf("the webhook's nodes after a delete: %q, want node-a 1.29", got)
	}
}
