package scope

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Index finds the selectors that match a pod's labels without trying every one, so that
// matching every workload of an input against its Services (or PDBs) stays linear: a
// selector that requires key=value is filed under that pair (its first such, in key
// order), and only the pod labels' own pairs are looked up; the rest are tried one by
// one. Selectors are kept per namespace. The zero Index is not usable: NewIndex.
type Index[T any] struct {
	byNamespace map[string]*indexBucket[T]
}

type indexBucket[T any] struct {
	byPair map[string][]indexed[T] // "key=value"
	others []indexed[T]
	n      int // insertion order, so that matches come out in the order added
}

type indexed[T any] struct {
	n   int
	sel labels.Selector
	v   T
}

// NewIndex is an empty Index.
func NewIndex[T any]() *Index[T] { return &Index[T]{byNamespace: map[string]*indexBucket[T]{}} }

// Add files v under its selector in namespace ns.
func (x *Index[T]) Add(ns string, sel labels.Selector, v T) {
	b := x.byNamespace[ns]
	if b == nil {
		b = &indexBucket[T]{byPair: map[string][]indexed[T]{}}
		x.byNamespace[ns] = b
	}
	s := indexed[T]{n: b.n, sel: sel, v: v}
	b.n++
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		if vals := r.Values(); (r.Operator() == selection.Equals || r.Operator() == selection.DoubleEquals ||
			r.Operator() == selection.In) && vals.Len() == 1 {
			k := r.Key() + "=" + vals.UnsortedList()[0]
			b.byPair[k] = append(b.byPair[k], s)
			return
		}
	}
	b.others = append(b.others, s)
}

// Matches are the values whose selectors in namespace ns match podLabels, in the order
// they were added.
func (x *Index[T]) Matches(ns string, podLabels map[string]string) []T {
	b := x.byNamespace[ns]
	if b == nil {
		return nil
	}
	set := labels.Set(podLabels)
	var hits []indexed[T]
	for k, v := range podLabels {
		for _, s := range b.byPair[k+"="+v] {
			if s.sel.Matches(set) {
				hits = append(hits, s)
			}
		}
	}
	for _, s := range b.others {
		if s.sel.Matches(set) {
			hits = append(hits, s)
		}
	}
	slices.SortFunc(hits, func(a, b indexed[T]) int { return a.n - b.n })
	out := make([]T, len(hits))
	for i, h := range hits {
		out[i] = h.v
	}
	return out
}

// AddService files svc under its spec.selector in its namespace ("" as given: the
// caller says which namespace an object without one is applied to), as Selects reads
// it: a Service with no selector selects no pod and is not filed.
func (x *Index[T]) AddService(ns string, selector map[string]string, v T) {
	if len(selector) > 0 {
		x.Add(ns, labels.SelectorFromSet(selector), v)
	}
}
