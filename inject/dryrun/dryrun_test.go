package dryrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nap-k8s/nap/configmap"
	. "github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/internal/testenv/kubeenv"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/wait"
)

// TestAPIServer checks nap's output against a real kube-apiserver (envtest, with the
// binaries that `make kube-bins` builds): every injected golden output and the
// ConfigMap pass a server-side dry-run create, and an invalid native sleep is refused
// the way the API says.
func TestAPIServer(t *testing.T) {
	cfg := kubeenv.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}

	t.Run("injected", func(t *testing.T) {
		goldens, _ := filepath.Glob(filepath.Join("..", "testdata", "inject", "golden", "*.golden"))
		if len(goldens) < 10 {
			t.Fatalf("golden outputs: %v", goldens)
		}
		for _, golden := range goldens {
			data, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := manifest.Read(golden, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				u := &unstructured.Unstructured{}
				if err := o.Decode(&u.Object); err != nil {
					t.Fatal(err)
				}
				if u.GetNamespace() == "" {
					u.SetNamespace("default")
				}
				if err := c.Create(ctx, u, client.DryRunAll); err != nil {
					t.Errorf("%s: %s: dry-run create: %v", golden, o.Ref(), err)
				}
			}
		}
	})

	t.Run("configmap", func(t *testing.T) {
		cm, err := configmap.New(configmap.Options{Namespace: "shop", Version: "v1.2.3+dirty"})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, cm.DeepCopy(), client.DryRunAll); err != nil {
			t.Fatalf("dry-run create: %v", err)
		}
		// And for real: what the API server stores is what was sent.
		if err := c.Create(ctx, cm.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		var got corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil {
			t.Fatal(err)
		}
		for k, v := range cm.BinaryData {
			if string(got.BinaryData[k]) != string(v) {
				t.Errorf("binaryData %s: %d bytes stored, %d sent", k, len(got.BinaryData[k]), len(v))
			}
		}
	})

	t.Run("native sleep longer than the grace period is refused", func(t *testing.T) {
		src := []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  containers:\n  - {name: a, image: a}\n")
		p, err := NewPlan(Options{Mode: ModeNative, Wait: wait.Wait{Kind: wait.Fixed, Delay: 20 * time.Second}, GraceExtra: new(time.Duration)})
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := Inject("p.yaml", src, p)
		if err != nil {
			t.Fatal(err)
		}
		objs, _ := manifest.Read("p.yaml", out)
		u := &unstructured.Unstructured{}
		if err := objs[0].Decode(&u.Object); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, u.DeepCopy(), client.DryRunAll); err != nil {
			t.Fatalf("nap's own output refused: %v", err)
		}
		// What nap never writes: the grace period lowered below the sleep.
		if err := unstructured.SetNestedField(u.Object, int64(10), "spec", "terminationGracePeriodSeconds"); err != nil {
			t.Fatal(err)
		}
		err = c.Create(ctx, u, client.DryRunAll)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "terminationGracePeriodSeconds") {
			t.Fatalf("a 20s sleep with a 10s grace period: %v, want Invalid naming the grace period", err)
		}
	})
}
