package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/nap-k8s/nap/inject"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// liveWaits is the ConfigMap of live waits (kube.LiveWaitsName) the pods read: the test
// writes it itself, nap's controller not running.
const liveWaits = kube.LiveWaitsName

// withLiveKey is spec with its nap volume, as napctl inject --live-wait writes it (the
// binary, and the workload's key of the live waits, optional, as /nap/wait), reading key:
// each of the test's pods its own.
func withLiveKey(t *testing.T, spec corev1.PodSpec, key string) corev1.PodSpec {
	t.Helper()
	spec = *spec.DeepCopy()
	for _, v := range spec.Volumes {
		if v.Name == kube.VolumeName && v.Projected != nil && len(v.Projected.Sources) == 2 && v.Projected.Sources[1].ConfigMap != nil {
			v.Projected.Sources[1].ConfigMap.Items[0].Key = key
			return spec
		}
	}
	t.Fatalf("no nap volume projecting the live wait: %+v", spec.Volumes)
	return spec
}

// TestLiveWaitReachesPod: on both of the lab's kubelets, a wait written after a pod
// started reaches it, and its hook waits it. Each node runs two pods whose hook is
// `nap 1s --live` and whose nap volume is napctl inject --live-wait's, each reading a key
// of its own of liveWaits, optional, as /nap/wait: the pod starts while neither the ConfigMap nor the key exists
// (an optional source's missing key is no error). Then the test writes one pod's key, a
// fixed 3 s, and times, through `nap 0 --live` run in the pod, until the kubelet shows
// it (nothing on stderr), and deletes the pods: the pod with the line waits 3 s and
// says wait=live, the other (the negative control: its key never written) waits its
// arguments' 1 s and says wait=args. The probe's own run, once the line shows, waits
// 3 s too and appends its verdict before the hook's (nap appends to the container's
// termination message, whoever runs it): the hook's is the last.
func TestLiveWaitReachesPod(t *testing.T) {
	t.Parallel() // see doc.go: after the tests that change the lab
	cs := client(t)
	ns := namespace(t, cs)
	ctx := context.Background()
	base := demoPodSpec(t, injectApp(t, inject.Options{Mode: inject.ModeBinary, Wait: fixedWait("1s"), Live: true}))
	base.Containers[0].ReadinessProbe = nil
	if got := strings.Join(base.Containers[0].Lifecycle.PreStop.Exec.Command, " "); !strings.HasSuffix(got, " "+nap.FlagLive) {
		t.Fatalf("the injected hook %q does not read the live wait", got)
	}
	base.Containers[0].Lifecycle.PreStop.Exec.Command = []string{kube.MountPath + "/" + kube.BinaryName, "1s", nap.FlagLive} // no --allow: no probe

	type run struct {
		node, key string
		written   bool // the key is written (else the negative control)
		pod       *corev1.Pod
		shown     []time.Duration // how long each write took to show in the pod
	}
	var runs []*run
	for _, node := range []string{node1, node2} {
		for _, written := range []bool{true, false} {
			r := &run{node: node, written: written, key: fmt.Sprintf("pod.live-%s-%v", map[string]string{node1: "n1", node2: "n2"}[node], written)}
			spec := withLiveKey(t, base, r.key)
			spec.NodeName = node
			name := strings.TrimPrefix(r.key, "pod.")
			p, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"live": "e2e"}}, Spec: spec}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			r.pod = p
			runs = append(runs, r)
		}
	}
	for _, r := range runs {
		r.pod = waitRunning(t, cs, ns, r.pod.Name)
	}

	// probe runs `nap 0 --live` in r's pod: its stderr, "" when the live wait is read.
	probe := func(r *run) (string, error) {
		_, stderr, err := execPod(cs, ns, r.pod.Name, base.Containers[0].Name, kube.MountPath+"/"+kube.BinaryName, "0", nap.FlagLive)
		return stderr, err
	}
	for _, r := range runs {
		if got, err := probe(r); err != nil || got != nap.LiveMissing {
			t.Fatalf("%s before any write: nap 0 --live said %q (%v), want %q", r.pod.Name, got, err, nap.LiveMissing)
		}
	}

	// write sets the written pods' keys to line and times, in each pod, until the
	// probe says want (at most 3 minutes: the kubelet refreshes a pod's volumes at its
	// sync, every minute by default).
	write := func(line, want string) {
		t.Helper()
		data := map[string]string{}
		for _, r := range runs {
			if r.written {
				data[r.key] = line
			}
		}
		start := time.Now()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: liveWaits}, Data: data}
		if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
			_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, r := range runs {
			if !r.written {
				continue
			}
			wg.Go(func() {
				var last string
				for deadline := start.Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
					got, err := probe(r)
					if err == nil && got == want {
						r.shown = append(r.shown, time.Since(start))
						return
					}
					last = fmt.Sprintf("%q (%v)", got, err)
				}
				t.Errorf("%s: %q not shown in 3 min: the probe still said %s", r.pod.Name, line, last)
			})
		}
		wg.Wait()
	}
	write("wait/v1 3000 2000 0 1000\n", "") // a fixed 3 s
	if t.Failed() {
		return
	}

	// Each pod's last status before it is gone, from one watch, as nap's controller reads
	// the verdicts.
	final, gone := watchGone(t, cs, ns, "live=e2e", runs[len(runs)-1].pod.ResourceVersion, len(runs))
	for _, r := range runs {
		if err := cs.CoreV1().Pods(ns).Delete(ctx, r.pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	gone()

	versions := nodeVersions(t, cs)
	for _, r := range runs {
		p := final[r.pod.Name]
		if p == nil {
			t.Errorf("%s: never seen by the watch", r.pod.Name)
			continue
		}
		msg, _ := terminatedMessage(p, base.Containers[0].Name)
		v, ok := nap.ParseVerdict(msg)
		wantWait, wantEnd := nap.WaitArgs, time.Second
		if r.written {
			wantWait, wantEnd = nap.WaitLive, 3*time.Second
		}
		t.Logf("%s on %s (kubelet %s): writes shown after %v; message %q", r.pod.Name, r.node, versions[r.node], r.shown, msg)
		if !ok || v.Kind == nap.Cut || v.Wait != wantWait || v.End != wantEnd {
			t.Errorf("%s on %s: verdict %q, want one of a wait of %v, wait=%s", r.pod.Name, r.node, msg, wantEnd, wantWait)
		}
	}
}

// execPod runs cmd in container of pod ns/name, at most 20 s, and returns what it wrote.
func execPod(cs *kubernetes.Clientset, ns, name, container string, cmd ...string) (stdout, stderr string, err error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath())
	if err != nil {
		return "", "", err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
	return out.String(), errOut.String(), err
}
