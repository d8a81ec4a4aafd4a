package calibrate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nap-k8s/nap/probe"
)

// TestWaitReached: a round starts once every path has had an answer from every pod
// there is, and past its limit goes on, naming the pairs no route reached.
func TestWaitReached(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "cal", Labels: map[string]string{"app": Name}}}
	}
	paths := []Path{{Name: "cluster-ip"}, {Name: "lb-local"}}
	answer := func(a *answers, path, pod string) {
		a.add(path, probe.Result{Kind: probe.OK, Headers: []string{pod, ""}})
	}
	newAnswers := func() *answers {
		return &answers{tail: map[string]map[string]float64{}, answered: map[string]map[string]bool{}, lastSeen: map[string]time.Time{},
			failed: map[string]map[probe.Kind]int{}, total: map[string]int{}, start: time.Now(), firstFail: map[string]float64{}}
	}

	t.Run("waits for the last pair", func(t *testing.T) {
		cs := fake.NewClientset(pod("a"), pod("b"))
		a := newAnswers()
		for _, p := range paths {
			answer(a, p.Name, "a")
		}
		answer(a, "cluster-ip", "b")
		var logged []string
		opts := Options{Namespace: "cal", Log: func(f string, args ...any) { logged = append(logged, fmt.Sprintf(f, args...)) }}
		done := make(chan error, 1)
		go func() { done <- waitReached(context.Background(), cs, opts, a, paths, time.Minute) }()
		select {
		case err := <-done:
			t.Fatalf("returned (%v) before lb-local reached pod b", err)
		case <-time.After(600 * time.Millisecond):
		}
		answer(a, "lb-local", "b")
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("still waiting 5 s after every path reached every pod")
		}
		if len(logged) != 0 {
			t.Errorf("logged %q, want nothing", logged)
		}
	})

	t.Run("goes on past the limit, naming what is missing", func(t *testing.T) {
		cs := fake.NewClientset(pod("a"), pod("b"), pod("c"))
		a := newAnswers()
		answer(a, "cluster-ip", "a")
		answer(a, "cluster-ip", "b")
		answer(a, "cluster-ip", "c")
		answer(a, "lb-local", "a")
		answer(a, "lb-local", "gone") // a pod of an earlier round counts for nothing
		var logged []string
		opts := Options{Namespace: "cal", Log: func(f string, args ...any) { logged = append(logged, fmt.Sprintf(f, args...)) }}
		if err := waitReached(context.Background(), cs, opts, a, paths, 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if len(logged) != 1 || !strings.Contains(logged[0], "lb-local→b, lb-local→c;") {
			t.Errorf("logged %q, want one line naming lb-local→b, lb-local→c", logged)
		}
	})

	t.Run("ends with its context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := waitReached(ctx, fake.NewClientset(pod("a")), Options{Namespace: "cal", Log: func(string, ...any) {}}, newAnswers(), paths, time.Minute)
		if err == nil {
			t.Fatal("no error with its context ended")
		}
	})
}
