package scope

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The index answers as trying every selector does: Selecting over the namespace's
// Services, in their order, for random Services and pods (few keys and values, so that
// selectors overlap, share pairs, and select nothing).
func TestIndexMatchesSelecting(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	set := func(n int) map[string]string {
		m := map[string]string{}
		for range n {
			m[fmt.Sprintf("k%d", r.IntN(4))] = fmt.Sprintf("v%d", r.IntN(3))
		}
		return m
	}
	for round := range 200 {
		var svcs []corev1.Service
		x := NewIndex[int]()
		for i := range r.IntN(12) {
			s := corev1.Service{}
			s.Name, s.Namespace = fmt.Sprintf("s%d", i), fmt.Sprintf("ns%d", r.IntN(2))
			s.Spec.Selector = set(r.IntN(3)) // sometimes empty: selects nothing
			svcs = append(svcs, s)
			x.AddService(s.Namespace, s.Spec.Selector, i)
		}
		for range 20 {
			ns, pod := fmt.Sprintf("ns%d", r.IntN(3)), set(r.IntN(5))
			var inNs []corev1.Service
			for _, s := range svcs {
				if s.Namespace == ns {
					inNs = append(inNs, s)
				}
			}
			var want []string
			for _, s := range Selecting(inNs, pod) {
				want = append(want, s.Name)
			}
			var got []string
			for _, i := range x.Matches(ns, pod) {
				got = append(got, svcs[i].Name)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: pod %v in %s: index %v, Selecting %v (Services %+v)", round, pod, ns, got, want, svcs)
			}
		}
	}
}

// Selectors that require no single pair (a set, an absence, a key alone) are tried one
// by one, and still come out in the order added.
func TestIndexSetSelectors(t *testing.T) {
	x := NewIndex[string]()
	for _, s := range []struct{ name, sel string }{
		{"pair", "app=web"},
		{"in", "tier in (front,back)"},
		{"exists", "app"},
		{"notin", "app,tier notin (db)"},
		{"single-in", "app in (web)"},
	} {
		sel, err := labels.Parse(s.sel)
		if err != nil {
			t.Fatal(err)
		}
		x.Add("default", sel, s.name)
	}
	for _, c := range []struct {
		pod  map[string]string
		want []string
	}{
		{map[string]string{"app": "web", "tier": "front"}, []string{"pair", "in", "exists", "notin", "single-in"}},
		{map[string]string{"app": "db", "tier": "db"}, []string{"exists"}},
		{map[string]string{"tier": "back"}, []string{"in"}},
		{nil, nil},
	} {
		if got := x.Matches("default", c.pod); !slices.Equal(got, c.want) {
			t.Errorf("pod %v: %v, want %v", c.pod, got, c.want)
		}
	}
	if got := x.Matches("other", map[string]string{"app": "web"}); got != nil {
		t.Errorf("another namespace: %v, want none", got)
	}
}
