package controller

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/nap-k8s/nap/kube"
)

// NodeSet is the cluster's nodes as the webhook reads them (kube.Node: name, labels,
// kubelet and runtime versions), kept from the node informer's events. The webhook
// reads them at every admission; listing them from the cache each time copied every
// Node, which at 5,000 nodes cost more than the rest of the admission. The list is
// made again only after a node was added or removed or changed what the webhook reads.
type NodeSet struct {
	mu     sync.Mutex
	byName map[string]kube.Node
	list   []kube.Node // nil: to be made again from byName
	synced func() bool
}

// WatchNodes starts keeping a NodeSet from the informers' nodes (the manager's cache).
func WatchNodes(ctx context.Context, informers cache.Informers) (*NodeSet, error) {
	inf, err := informers.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return nil, err
	}
	s := &NodeSet{byName: map[string]kube.Node{}}
	set := func(o any) {
		p, ok := o.(*corev1.Node)
		if !ok {
			return
		}
		n, err := kube.NodeOf(p)
		if err != nil { // no kubelet version yet: as if it were not there
			s.remove(p.Name)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if old, ok := s.byName[n.Name]; ok && sameNode(old, n) {
			return
		}
		s.byName[n.Name], s.list = n, nil
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, o any) { set(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if p, ok := o.(*corev1.Node); ok {
				s.remove(p.Name)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	s.synced = reg.HasSynced
	return s, nil
}

func (s *NodeSet) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[name]; ok {
		delete(s.byName, name)
		s.list = nil
	}
}

func sameNode(a, b kube.Node) bool {
	return a.Name == b.Name && a.Kubelet == b.Kubelet && a.Runtime == b.Runtime && maps.Equal(a.Labels, b.Labels)
}

// Nodes returns the nodes, sorted by name, for Injector.Nodes; the caller must not
// change them. Until the informer has told every node it waits, as long as ctx lets it.
func (s *NodeSet) Nodes(ctx context.Context) ([]kube.Node, error) {
	if !s.synced() && !toolscache.WaitForCacheSync(ctx.Done(), s.synced) {
		return nil, errors.New("the nodes are not in the cache yet")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.list == nil {
		s.list = slices.SortedFunc(maps.Values(s.byName), func(a, b kube.Node) int { return strings.Compare(a.Name, b.Name) })
	}
	return s.list, nil
}
