package controller

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nap-k8s/nap/configmap"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/kube"
)

// envtestManager is a manager with the controller's caches on a fresh real
// kube-apiserver (envtest), not started.
func envtestManager(t *testing.T) (*rest.Config, ctrl.Manager) {
	t.Helper()
	cfg := kubeenv.APIServer(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: CacheOptions(kube.ConfigMapName), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, mgr
}

// startedManager is a manager on envtest (with OpenReports' CRD installed, if reports),
// started until the test ends, and a client that reads past its cache.
func startedManager(t *testing.T, reports bool) (context.Context, ctrl.Manager, client.Client) {
	t.Helper()
	cfg, mgr := envtestManager(t)
	if reports {
		crd := kubeenv.ModuleFile(t, "github.com/openreports/reports-api", "config/crd/openreports.io_reports.yaml")
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{crd}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go mgr.Start(ctx)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, mgr, c
}

// TestPublisher runs the Publisher in a manager against a real kube-apiserver (envtest)
// and checks what it does to namespaces and copies.
func TestPublisher(t *testing.T) {
	cfg, mgr := envtestManager(t)
	p, err := NewPublisher(mgr.GetClient(), mgr.GetEventRecorderFor("nap-controller"), kube.ConfigMapName, "v9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	p.Selector = labels.SelectorFromSet(labels.Set{"team": "shop"})
	p.Exclude = map[string]bool{"excluded": true}
	if err := p.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go mgr.Start(ctx)

	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mkns := func(name string, lbl map[string]string) {
		t.Helper()
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(ns string) (*corev1.ConfigMap, error) {
		var cm corev1.ConfigMap
		err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: kube.ConfigMapName}, &cm)
		return &cm, err
	}
	eventually := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("after 20s: %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	exact := func(ns string) bool {
		cm, err := get(ns)
		return err == nil && p.matches(cm) && bytes.Equal(cm.BinaryData["nap-amd64"], p.Want.BinaryData["nap-amd64"])
	}
	consistently := func(what string, ok func() bool) {
		t.Helper()
		for range 20 {
			if !ok() {
				t.Fatalf("not so: %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	mkns("shop-a", map[string]string{"team": "shop"})
	mkns("other", nil)
	mkns("excluded", map[string]string{"team": "shop"})
	eventually("a copy in the selected namespace", func() bool { return exact("shop-a") })
	consistently("no copy in unselected or excluded namespaces", func() bool {
		_, e1 := get("other")
		_, e2 := get("excluded")
		return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2)
	})

	t.Run("published: every selected namespace has its copy", func(t *testing.T) {
		// The unselected and excluded namespaces have none and do not count.
		if err := p.Published(ctx, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		// A Publisher that does not exclude one waits for a copy that never comes.
		all, err := NewPublisher(p.Client, p.Recorder, kube.ConfigMapName, "v9.9.9")
		if err != nil {
			t.Fatal(err)
		}
		all.Selector = p.Selector
		err = all.Published(ctx, 1500*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "1 namespace(s) still lack") {
			t.Fatalf("want 1 namespace lacking the copy (excluded), got %v", err)
		}
	})

	t.Run("deleted copy is recreated", func(t *testing.T) {
		cm, _ := get("shop-a")
		if err := c.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		eventually("recreated", func() bool { cm2, err := get("shop-a"); return err == nil && cm2.UID != cm.UID && exact("shop-a") })
	})

	t.Run("edited copy is put back byte for byte", func(t *testing.T) {
		before := testutil.ToFloat64(repaired)
		cm, _ := get("shop-a")
		cm.BinaryData["nap-amd64"] = append([]byte{}, cm.BinaryData["nap-amd64"]...)
		cm.BinaryData["nap-amd64"][100] ^= 0xff // a tampered binary
		cm.Data = map[string]string{"extra": "x"}
		cm.Annotations[configmap.SHA256AnnotationPrefix+"nap-amd64"] = "0000"
		if err := c.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		eventually("repaired", func() bool { return exact("shop-a") })
		// The counter moves just after the write that the test saw.
		eventually("the repair counted", func() bool { return testutil.ToFloat64(repaired)-before == 1 })
		consistently("counted once", func() bool { return testutil.ToFloat64(repaired)-before == 1 })
	})

	t.Run("a namespace created later and one that comes to match", func(t *testing.T) {
		mkns("shop-b", map[string]string{"team": "shop"})
		eventually("a copy in the new namespace", func() bool { return exact("shop-b") })
		var ns corev1.Namespace
		c.Get(ctx, types.NamespacedName{Name: "other"}, &ns)
		ns.Labels = map[string]string{"team": "shop"}
		if err := c.Update(ctx, &ns); err != nil {
			t.Fatal(err)
		}
		eventually("a copy once the label is set", func() bool { return exact("other") })
	})

	t.Run("a namespace that stops matching loses its copy", func(t *testing.T) {
		var ns corev1.Namespace
		c.Get(ctx, types.NamespacedName{Name: "shop-b"}, &ns)
		ns.Labels = nil
		if err := c.Update(ctx, &ns); err != nil {
			t.Fatal(err)
		}
		eventually("deleted", func() bool { _, err := get("shop-b"); return apierrors.IsNotFound(err) })
	})

	t.Run("mountable: this build's copy in a namespace it publishes into", func(t *testing.T) {
		for _, c := range []struct {
			ns   string
			want string // in why; "" for mountable
		}{
			{"shop-a", ""},
			{"shop-b", "does not publish its ConfigMap nap into namespace shop-b"},
			{"excluded", "does not publish"},
		} {
			why, err := p.Mountable(ctx, c.ns)
			if err != nil || (c.want == "") != (why == "") || !strings.Contains(why, c.want) {
				t.Errorf("%s: %q, %v; want %q", c.ns, why, err, c.want)
			}
		}
		// A copy of other bytes than the build's (here: a build whose binary differs by
		// one byte) may not be mounted.
		other, err := NewPublisher(p.Client, p.Recorder, kube.ConfigMapName, "v9.9.8")
		if err != nil {
			t.Fatal(err)
		}
		other.Selector = p.Selector
		other.Want.BinaryData["nap-amd64"] = append([]byte{}, other.Want.BinaryData["nap-amd64"]...)
		other.Want.BinaryData["nap-amd64"][100] ^= 0xff
		if why, err := other.Mountable(ctx, "shop-a"); err != nil || !strings.Contains(why, "holds other bytes than nap v9.9.8's binaries") {
			t.Errorf("another build's bytes: %q, %v", why, err)
		}
		if _, err := p.Mountable(ctx, "no-such-namespace"); !apierrors.IsNotFound(err) {
			t.Errorf("a namespace that is not there: %v", err)
		}
	})

	// The ways in of a namespace that may write ConfigMaps (the installation's
	// ValidatingAdmissionPolicy stops them first; TestConfigMapGuard): none leaves a
	// binary that is not nap's, whatever the labels say.
	warned := func(ns, reason string) bool {
		var evs corev1.EventList
		c.List(ctx, &evs, client.InNamespace(ns))
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == reason {
				return true
			}
		}
		return false
	}
	tamper := func(cm *corev1.ConfigMap) {
		cm.BinaryData["nap-amd64"] = append([]byte{}, cm.BinaryData["nap-amd64"]...)
		cm.BinaryData["nap-amd64"][100] ^= 0xff
	}
	t.Run("a tampered binary without nap's label is put back, and counted as tampering", func(t *testing.T) {
		before := testutil.ToFloat64(tampered)
		cm, _ := get("shop-a")
		tamper(cm)
		delete(cm.Labels, configmap.ManagedByLabel)
		if err := c.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		eventually("put back", func() bool { return exact("shop-a") })
		eventually("counted as tampering", func() bool { return testutil.ToFloat64(tampered)-before == 1 })
		eventually("a Warning event", func() bool { return warned("shop-a", "Tampered") })
	})
	t.Run("an immutable tampered copy is replaced", func(t *testing.T) {
		cm, _ := get("shop-a")
		tamper(cm)
		cm.Immutable = ptr.To(true)
		cm.Labels = nil
		if err := c.Update(ctx, cm); err != nil {
			t.Fatal(err)
		}
		eventually("replaced", func() bool { cm2, err := get("shop-a"); return err == nil && cm2.UID != cm.UID && exact("shop-a") })
	})
	t.Run("deleted, then created again without nap's label", func(t *testing.T) {
		// The race a namespace can win against the Publisher's create: it is put back
		// after it.
		cm, _ := get("shop-a")
		if err := c.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ConfigMapName, Namespace: "shop-a"}, BinaryData: map[string][]byte{"nap-amd64": []byte("#!/bin/sh\n")}}
		if err := c.Create(ctx, theirs); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		eventually("put back", func() bool { return exact("shop-a") })
	})
	t.Run("a ConfigMap of the name in a namespace it comes to select is taken over", func(t *testing.T) {
		mkns("mine", nil)
		theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.ConfigMapName, Namespace: "mine"}, Data: map[string]string{"a": "b"}}
		if err := c.Create(ctx, theirs); err != nil {
			t.Fatal(err)
		}
		consistently("left alone while the namespace is not selected", func() bool {
			cm, err := get("mine")
			return err == nil && cm.ResourceVersion == theirs.ResourceVersion
		})
		before := testutil.ToFloat64(tampered)
		var ns corev1.Namespace
		c.Get(ctx, types.NamespacedName{Name: "mine"}, &ns)
		ns.Labels = map[string]string{"team": "shop"}
		if err := c.Update(ctx, &ns); err != nil {
			t.Fatal(err)
		}
		eventually("nap's content", func() bool { return exact("mine") })
		// At first sight a wrong copy may be an older nap's: repaired, not tampering.
		if n := testutil.ToFloat64(tampered) - before; n != 0 {
			t.Errorf("a copy seen wrong at first sight counted %v tamperings", n)
		}
	})

	t.Run("steady state writes nothing", func(t *testing.T) {
		rvs := map[string]string{}
		for _, ns := range []string{"shop-a", "other"} {
			cm, err := get(ns)
			if err != nil {
				t.Fatal(err)
			}
			rvs[ns] = cm.ResourceVersion
		}
		// Touch the namespaces (a label that the selector ignores) to force reconciles.
		for ns := range rvs {
			var n corev1.Namespace
			c.Get(ctx, types.NamespacedName{Name: ns}, &n)
			n.Labels["touched"] = "yes"
			if err := c.Update(ctx, &n); err != nil {
				t.Fatal(err)
			}
		}
		consistently("no write", func() bool {
			for ns, rv := range rvs {
				if cm, err := get(ns); err != nil || cm.ResourceVersion != rv {
					return false
				}
			}
			return true
		})
	})

	t.Run("a terminating namespace is skipped", func(t *testing.T) {
		// envtest runs no namespace controller: a deleted namespace stays Terminating.
		if err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop-a"}}); err != nil {
			t.Fatal(err)
		}
		cm, _ := get("shop-a")
		if err := c.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		consistently("no copy recreated in a terminating namespace", func() bool { _, err := get("shop-a"); return apierrors.IsNotFound(err) })
	})
}

// TestPublisherOwner: with an owner (the installation's ClusterRole), every copy names
// it, so that deleting it has the garbage collector remove them all; a copy published
// without it is adopted, not counted as repaired.
func TestPublisherOwner(t *testing.T) {
	cfg := kubeenv.APIServer(t)
	// A second Publisher in this test binary: its controller's name again.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Cache: CacheOptions(kube.ConfigMapName), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	owner := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: Name}}
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	p, err := NewPublisher(mgr.GetClient(), mgr.GetEventRecorderFor("nap-controller"), kube.ConfigMapName, "v9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	// A copy from before owners: the same content, no owner.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "old"}}); err != nil {
		t.Fatal(err)
	}
	old := p.Want.DeepCopy()
	old.Namespace = "old"
	if err := c.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	p.OwnedBy(metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: owner.Name, UID: owner.UID})
	if err := p.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(repaired)
	go mgr.Start(ctx)
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new"}}); err != nil {
		t.Fatal(err)
	}
	ownedBy := func(ns string) bool {
		var cm corev1.ConfigMap
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: kube.ConfigMapName}, &cm); err != nil {
			return false
		}
		return len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == owner.UID && cm.OwnerReferences[0].Kind == "ClusterRole" && p.matches(&cm)
	}
	for deadline := time.Now().Add(20 * time.Second); !ownedBy("new") || !ownedBy("old"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 20s: copies owned by the ClusterRole: new %v, old %v", ownedBy("new"), ownedBy("old"))
		}
	}
	if n := testutil.ToFloat64(repaired) - before; n != 0 {
		t.Errorf("adopting a copy counted %v repairs", n)
	}
}
