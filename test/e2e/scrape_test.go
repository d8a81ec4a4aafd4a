package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// scrapeEvery is how often scraper opens a connection to each pod: Prometheus's
// usual interval in the adaptive wait's proof (docs/adaptive.md).
const scrapeEvery = 5 * time.Second

// scraper is a metrics scrape of the demo service's pods as Prometheus does it by pod
// (role pod): every scrapeEvery, a new connection to each pod that has an IP, from node
// 1, terminating pods included until they are gone. It is background traffic the adaptive
// wait's --allow does not count (only probes are). Bounded: it stops with the
// measurement, and makes at most one request per pod per interval.
type scraper struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	n      int
}

func startScraper(t *testing.T, cs *kubernetes.Clientset, ns string) *scraper {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &scraper{cancel: cancel, done: make(chan struct{})}
	t.Cleanup(cancel) // a measurement that fails midway stops it too
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(scrapeEvery)
		defer tick.Stop()
		for {
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=app"})
			if err == nil {
				for _, p := range pods.Items {
					if p.Status.PodIP == "" {
						continue
					}
					if resp, err := client.Get(fmt.Sprintf("http://%s:8080/metrics", p.Status.PodIP)); err == nil {
						resp.Body.Close()
					}
					s.mu.Lock()
					s.n++
					s.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the scrapes and returns how many were made.
func (s *scraper) stop() int {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}
