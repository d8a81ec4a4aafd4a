package controller

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/scope"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/traffic"
	"github.com/nap-k8s/nap/wait"
)

// TestLearnedWaits has the real kube-apiserver call the webhook while a Learner learns
// from terminations (as the Reporter hands them on): a pod first gets the fleet's 5 s;
// a late termination of a pod its route reached raises that route's wait at once, in
// the ConfigMap nap-learned that every replica reads, and the next pod holds 13 s and
// says which termination taught it; another route's pods keep the fleet's. A Learner
// started again takes the document up (a restart forgets nothing); 20 quiet
// terminations lower the route's wait to what the late one proved (its 5 s end plus the
// margin), and 64 (the route's memory) to their tail plus the margin, below the fleet's;
// a document that is not one is no learning: the fleet's wait again.
func TestLearnedWaits(t *testing.T) {
	cfg, wopts := kubeenv.APIServerWithWebhooks(t, WebhookConfiguration("nap", "nap-system", "nap", nil, scope.OptIn))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	create := func(o client.Object) {
		t.Helper()
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nap-system"}})
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{InjectLabel: "enabled"}}})
	cal := &CalibrationSource{Client: cs, Namespace: "nap-system", Log: logr.Discard()}
	go cal.Start(ctx)
	var changes atomic.Int32
	src := &LearnedSource{Client: cs, Namespace: "nap-system", Log: logr.Discard(), OnChange: func() { changes.Add(1) }}
	go src.Start(ctx)
	v := kube.Version{Major: 1, Minor: 34}
	i := &Injector{Options: inject.Options{Kube: &v}, Waits: waits5s, Calibration: Calibrations(cal.Load, src.Load), Services: ServicesFrom(c)}
	serveWebhooks(t, wopts, map[string]http.Handler{WebhookPath: i.Handler()})
	for _, s := range []struct {
		name string
		typ  corev1.ServiceType
	}{{"web", corev1.ServiceTypeLoadBalancer}, {"cart", corev1.ServiceTypeClusterIP}} {
		create(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: "shop"},
			Spec: corev1.ServiceSpec{Type: s.typ, Selector: map[string]string{"app": s.name}, Ports: []corev1.ServicePort{{Port: 80}}}})
	}
	webRoute := []string{"clusterip", "nodeport", "lb-cluster"}

	n := 0
	admit := func(app string) (string, string) {
		t.Helper()
		n++
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, n), Namespace: "shop", Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
		create(p)
		got := "none"
		if lc := p.Spec.Containers[0].Lifecycle; lc != nil && lc.PreStop != nil && lc.PreStop.Sleep != nil {
			got = fmt.Sprintf("sleep %ds", lc.PreStop.Sleep.Seconds)
		}
		return got, p.Annotations[wait.ReasonAnnotation]
	}
	learned := func(route string, want time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); src.Load().Needs()[route] != want; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: learned %v, want %v", route, src.Load().Needs(), want)
			}
		}
	}
	start := func() (*Learner, context.CancelFunc) {
		lctx, stop := context.WithCancel(ctx)
		l := &Learner{Client: cs, Namespace: "nap-system", Log: logr.Discard(), Every: 200 * time.Millisecond}
		go l.Start(lctx)
		return l, stop
	}

	if got, why := admit("web"); got != "sleep 5s" || why != "" {
		t.Fatalf("before any termination: %q (%q), want the fleet's sleep 5s", got, why)
	}
	l, stop := start()
	// Counted before the Learner read back its document: kept, then applied.
	l.Observe(traffic.Observation{Paths: webRoute, Kind: nap.Late, End: 5 * time.Second, Last: 4900 * time.Millisecond, Pod: "shop/web-0", At: time.Now()})
	learned("clusterip+nodeport+lb-cluster", 13*time.Second)
	if got, why := admit("web"); got != "sleep 13s" || !strings.Contains(why, "holds 13s: learned from production: pod shop/web-0's wait ended at 5.0 s with traffic still arriving") {
		t.Errorf("after a late termination: %q (%q), want sleep 13s, learned", got, why)
	}
	if got, why := admit("cart"); got != "sleep 5s" || strings.Contains(why, "learned") {
		t.Errorf("another route: %q (%q), want the fleet's", got, why)
	}
	if g := gauge(t, "nap_learned_delay_seconds", map[string]string{"route": "clusterip+nodeport+lb-cluster"}); g != 13 {
		t.Errorf("nap_learned_delay_seconds = %v, want 13", g)
	}
	if changes.Load() != 1 {
		t.Errorf("OnChange called %d times, want 1", changes.Load())
	}

	// A restart forgets nothing: the new Learner reads the document back, and quiet
	// terminations lower the wait only once there are enough of them.
	stop()
	l, stop = start()
	defer stop()
	for k := range traffic.LearnSettle {
		l.Observe(traffic.Observation{Paths: webRoute, Kind: nap.Quiet, End: 12 * time.Second, Last: 900 * time.Millisecond, Pod: fmt.Sprintf("shop/web-q%d", k), At: time.Now()})
		if k == traffic.LearnSettle-2 {
			time.Sleep(time.Second) // written (Every), and read by every replica
			if got, _ := admit("web"); got != "sleep 13s" {
				t.Errorf("after %d quiet terminations: %q, want the raise's 13s still", k+1, got)
			}
		}
	}
	learned("clusterip+nodeport+lb-cluster", 8*time.Second)
	if got, why := admit("web"); got != "sleep 8s" || !strings.Contains(why, "learned from production: 20 quiet terminations of pods reached by clusterip, nodeport, lb-cluster, their traffic's tail at most 0.9 s, but pod shop/web-0's wait ended at 5.0 s with traffic still arriving") {
		t.Errorf("after %d quiet terminations: %q (%q), want sleep 8s, what the late one proved", traffic.LearnSettle, got, why)
	}
	for k := traffic.LearnSettle; k < traffic.LearnKeep; k++ {
		l.Observe(traffic.Observation{Paths: webRoute, Kind: nap.Quiet, End: 12 * time.Second, Last: 900 * time.Millisecond, Pod: fmt.Sprintf("shop/web-q%d", k), At: time.Now()})
	}
	learned("clusterip+nodeport+lb-cluster", 4*time.Second)
	if got, why := admit("web"); got != "sleep 4s" || !strings.Contains(why, "learned from production: 64 quiet terminations of pods reached by clusterip, nodeport, lb-cluster, their traffic's tail at most 0.9 s") {
		t.Errorf("after %d quiet terminations: %q (%q), want sleep 4s, learned", traffic.LearnKeep, got, why)
	}

	// Not a learned document: no learning, the fleet's wait.
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKey{Namespace: "nap-system", Name: kube.LearnedConfigMap}, &cm); err != nil {
		t.Fatal(err)
	}
	stop()
	cm.Data[kube.LearnedKey] = `{"apiVersion": "v1"}`
	if err := c.Update(ctx, &cm); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); src.Load() != nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("an invalid document was read as learned")
		}
	}
	if got, why := admit("web"); got != "sleep 5s" || why != "" {
		t.Errorf("with an invalid document: %q (%q), want the fleet's", got, why)
	}
}
