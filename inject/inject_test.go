package inject

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nap-k8s/nap/internal/testutil/golden"
	"github.com/nap-k8s/nap/internal/testutil/kept"
	"github.com/nap-k8s/nap/kube"
	"github.com/nap-k8s/nap/manifest"
	"github.com/nap-k8s/nap/sleeper/nap"
	"github.com/nap-k8s/nap/wait"
)

// injectCases are the golden cases: testdata/inject/<input> injected with opts gives
// testdata/inject/golden/<name>.golden (and .notes, what goes to stderr).
var injectCases = []struct {
	name, input string
	opts        Options
}{
	{"deployment-binary", "deployment.yaml", Options{}},
	{"deployment-native", "deployment.yaml", Options{Mode: ModeAuto, Kube: &kube.Version{Major: 1, Minor: 33}, Wait: delay("15s")}},
	// 1.31's kubelets may be 1.28, without the sleep action: the binary.
	{"deployment-auto-skew", "deployment.yaml", Options{Mode: ModeAuto, Kube: &kube.Version{Major: 1, Minor: 31}, Wait: delay("15s")}},
	{"deployment-auto-old-cluster", "deployment.yaml", Options{Kube: &kube.Version{Major: 1, Minor: 29}}},
	{"deployment-auto-subsecond", "deployment.yaml", Options{Kube: &kube.Version{Major: 1, Minor: 34}, Wait: delay("2500ms")}},
	{"flow", "flow.yaml", Options{}},
	{"flow-native", "flow.yaml", Options{Mode: ModeNative}},
	{"json", "deployment.json", Options{}},
	{"json-native", "deployment.json", Options{Mode: ModeNative, Wait: delay("5")}},
	{"list", "list.yaml", Options{Wait: delay("20s"), GraceExtra: ptr.To(15 * time.Second)}},
	{"helm", "helm.yaml", Options{}},
	{"existing-prestop", "existing.yaml", Options{}},
	{"sidecar-default", "sidecar.yaml", Options{}},
	{"sidecar-named", "sidecar.yaml", Options{Containers: []string{"proxy", "main", "missing"}}},
	{"arch", "arch.yaml", Options{}},
	{"arch-native", "arch.yaml", Options{Mode: ModeNative}},
	{"grace", "grace.yaml", Options{Wait: delay("30s")}},
	{"crlf", "crlf.yaml", Options{}},
	{"no-newline", "no-newline.yaml", Options{}},
	{"helm-nulls", "helm-nulls.yaml", Options{}},
	{"helm-nulls-native", "helm-nulls.yaml", Options{Mode: ModeNative, Wait: delay("40s")}},
	{"block-scalar-eof", "block-scalar-eof.yaml", Options{}},
	{"keep-chomp", "keep-chomp.yaml", Options{Mode: ModeNative}},
	{"json-stream", "stream.json", Options{}},
	{"deployment-image", "deployment.yaml", Options{Delivery: DeliveryImage, Image: "registry.example/nap:1"}},
	{"arch-image", "arch.yaml", Options{Delivery: DeliveryImage, Image: "registry.example/nap:1"}},
	{"json-image", "deployment.json", Options{Delivery: DeliveryImage, Image: "registry.example/nap:1", Wait: delay("2.5")}},
	// auto with nodes that mount image volumes: the image; a node that cannot: the
	// ConfigMap (DeliveryWhy says why; TestDelivery).
	// The adaptive wait: ALLOW from each template's probes (api: HTTP every 1 s, TCP
	// every 10 s; mesh: gRPC every 2 s, counted with its sidecar; worker's exec probe
	// opens no connection): 3+1+2 = 6 per 2 s.
	{"probes-adaptive", "probes.yaml", Options{Wait: adaptive(wait.Input{})}},
	{"deployment-adaptive", "deployment.yaml", Options{Wait: adaptive(wait.Input{Max: "45s", Min: "2s", Quiet: "1.5s"}), Kube: &kube.Version{Major: 1, Minor: 36}}},
	// Windows pods: the native sleep where it can be, else skipped with a note.
	{"windows", "windows.yaml", Options{}},
	{"windows-subsecond", "windows.yaml", Options{Wait: delay("2500ms")}},
	{"windows-adaptive", "windows.yaml", Options{Wait: adaptive(wait.Input{})}},
	{"windows-old-cluster", "windows.yaml", Options{Kube: &kube.Version{Major: 1, Minor: 29}}},
	// The live wait: each workload's key of nap-waits, projected beside the binary.
	{"live", "live.yaml", Options{Live: true, Mode: ModeBinary}},
	{"live-adaptive", "probes.yaml", Options{Live: true, Wait: adaptive(wait.Input{})}},
	{"live-image", "deployment.yaml", Options{Live: true, Mode: ModeBinary, Delivery: DeliveryImage, Image: "registry.example/nap:1"}},
	{"helm-image-auto", "helm.yaml", Options{Delivery: DeliveryAuto, Image: "registry.example/nap:1", Kube: &kube.Version{Major: 1, Minor: 36},
		Nodes: []kube.Node{{Name: "a", Kubelet: kube.Version{Major: 1, Minor: 35}, Runtime: "containerd://2.1.4"}}, Mode: ModeBinary}},
}

func runInject(t testing.TB, file string, src []byte, opts Options) ([]byte, string) {
	t.Helper()
	p, err := NewPlan(opts)
	if err != nil {
		t.Fatal(err)
	}
	out, notes, err := Inject(file, src, p)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var ns strings.Builder
	for _, n := range notes {
		ns.WriteString(n.String() + "\n")
	}
	return out, ns.String()
}

func TestInjectGolden(t *testing.T) {
	for _, tc := range injectCases {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join("testdata", "inject", tc.input)
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			out, notes := runInject(t, in, src, tc.opts)
			base := filepath.Join("testdata", "inject", "golden", tc.name)
			golden.Check(t, base+".golden", out)
			golden.Check(t, base+".notes", []byte(notes))
		})
	}
}

// Idempotent: injecting the output again changes nothing, byte for byte, and says
// nothing new about the hooks it added.
func TestInjectIdempotent(t *testing.T) {
	for _, tc := range injectCases {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join("testdata", "inject", tc.input)
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			once, _ := runInject(t, in, src, tc.opts)
			twice, notes := runInject(t, in, once, tc.opts)
			if !bytes.Equal(once, twice) {
				t.Errorf("inject(inject(x)) != inject(x):\n%s", twice)
			}
			if strings.Contains(notes, "/nap/nap") || strings.Contains(notes, "already has a preStop") && !strings.Contains(tc.input, "existing") {
				t.Errorf("second run complained about its own hooks:\n%s", notes)
			}
		})
	}
}

// The property: every byte of the input is still there, in order (the input is a
// subsequence of the output, once grace period values are masked), and what was added
// is only nap's fields: removing them from the output's objects gives the input's.
func TestInjectOnlyAdds(t *testing.T) {
	for _, tc := range injectCases {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join("testdata", "inject", tc.input)
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := runInject(t, in, src, tc.opts)
			if !kept.Bytes(src, out) {
				t.Fatalf("an input byte was changed or removed")
			}
			a, err := manifest.Read(in, src)
			if err != nil {
				t.Fatal(err)
			}
			b, err := manifest.Read(in, out)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != len(b) {
				t.Fatalf("%d objects in, %d out", len(a), len(b))
			}
			for i := range a {
				want, got := plain(t, a[i].Node.YNode()), plain(t, b[i].Node.YNode())
				stripNap(got)
				stripNap(want) // hooks added by an earlier run, if any, go too
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: beyond nap's fields:\n got %v\nwant %v", a[i].Ref(), got, want)
				}
			}
		})
	}
}

func plain(t *testing.T, n *yaml.Node) any {
	var v any
	if err := n.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// stripNap removes from a decoded object what Inject adds: the nap volume and mounts,
// nap's preStop hooks (and a lifecycle left empty), and the grace period.
func stripNap(v any) {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "terminationGracePeriodSeconds")
		for _, key := range []string{"volumes", "volumeMounts", "lifecycle"} {
			if x, ok := v[key]; ok && x == nil { // null is absent to Kubernetes
				delete(v, key)
			}
		}
		for _, key := range []string{"volumes", "volumeMounts"} {
			if items, ok := v[key].([]any); ok {
				var keep []any
				for _, it := range items {
					if m, ok := it.(map[string]any); !ok || m["name"] != "nap" {
						keep = append(keep, it)
					}
				}
				if len(keep) == 0 {
					delete(v, key)
				} else {
					v[key] = keep
				}
			}
		}
		if lc, ok := v["lifecycle"].(map[string]any); ok {
			if x, ok := lc["preStop"]; ok && x == nil {
				delete(lc, "preStop")
			}
			if pre, ok := lc["preStop"].(map[string]any); ok {
				if _, sleep := pre["sleep"]; sleep || strings.Contains(fmtAny(pre), "/nap/nap") {
					delete(lc, "preStop")
				}
			}
			if len(lc) == 0 {
				delete(v, "lifecycle")
			}
		}
		for _, x := range v {
			stripNap(x)
		}
	case []any:
		for _, x := range v {
			stripNap(x)
		}
	}
}

func fmtAny(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

// FuzzInject: any input is injected or refused with an error; never a panic, never
// invalid YAML, and the output is a fixed point.
func FuzzInject(f *testing.F) {
	for _, tc := range injectCases {
		src, err := os.ReadFile(filepath.Join("testdata", "inject", tc.input))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src, tc.opts.Mode == ModeNative)
	}
	// Aliases of aliases: ten million leaves, compared once each by the check.
	bomb := "kind: Pod\nmetadata: {name: p}\na: &a [x,x,x,x,x,x,x,x,x,x]\n"
	for c := 'b'; c <= 'h'; c++ {
		bomb += fmt.Sprintf("%c: &%[1]c [%s]\n", c, strings.Repeat("*"+string(c-1)+",", 9)+"*"+string(c-1))
	}
	f.Add([]byte(bomb+"spec:\n  containers: [{name: a, image: b}]\n"), false)
	plans := map[bool]Plan{}
	for _, native := range []bool{false, true} {
		o := Options{Mode: ModeBinary}
		if native {
			o.Mode = ModeNative
		}
		p, err := NewPlan(o)
		if err != nil {
			f.Fatal(err)
		}
		plans[native] = p
	}
	f.Fuzz(func(t *testing.T, src []byte, native bool) {
		if len(src) > 8192 {
			return
		}
		out, notes, err := Inject("f.yaml", src, plans[native])
		// One document at a time is the whole at once: the same output, notes and error.
		whole, wholeNotes, wholeErr := injectWhole("f.yaml", src, plans[native])
		if fmt.Sprint(err) != fmt.Sprint(wholeErr) || !bytes.Equal(out, whole) || fmt.Sprint(notes) != fmt.Sprint(wholeNotes) {
			t.Fatalf("by document: %v %v\n%s\n---- whole: %v %v\n%s", err, notes, out, wholeErr, wholeNotes, whole)
		}
		if err != nil {
			return
		}
		if _, err := manifest.Read("f.yaml", out); err != nil {
			t.Fatalf("invalid output: %v\n%s", err, out)
		}
		again, _, err := Inject("f.yaml", out, plans[native])
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point (%v):\n%s\n---- again:\n%s", err, out, again)
		}
	})
}

// The native sleep is chosen only where every kubelet that may run the pod has it:
// nodes of mixed kubelet versions, narrowed by the template's nodeSelector.
func TestKubeletSkew(t *testing.T) {
	nodes := []kube.Node{
		{Name: "new-a", Labels: map[string]string{"pool": "new", "zone": "a"}, Kubelet: kube.Version{Major: 1, Minor: 34}},
		{Name: "new-b", Labels: map[string]string{"pool": "new", "zone": "b"}, Kubelet: kube.Version{Major: 1, Minor: 32}},
		{Name: "old", Labels: map[string]string{"pool": "old"}, Kubelet: kube.Version{Major: 1, Minor: 29}},
	}
	v134, v131 := kube.Version{Major: 1, Minor: 34}, kube.Version{Major: 1, Minor: 31}
	pod := func(selector string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + selector + "  containers:\n  - {name: a, image: a}\n"
	}
	for _, c := range []struct {
		name     string
		opts     Options
		selector string
		want     string // "sleep", "exec" or an error's text
	}{
		{name: "nodes unknown, 1.34: kubelets 1.31+", opts: Options{Kube: &v134}, want: "sleep"},
		{name: "nodes unknown, 1.31: kubelets may be 1.28", opts: Options{Kube: &v131}, want: "exec"},
		{name: "an old node among them", opts: Options{Kube: &v134, Nodes: nodes}, want: "exec"},
		{name: "a selector that keeps to new nodes", opts: Options{Kube: &v134, Nodes: nodes}, selector: "  nodeSelector: {pool: new}\n", want: "sleep"},
		{name: "a selector that picks the old node", opts: Options{Kube: &v134, Nodes: nodes}, selector: "  nodeSelector: {pool: old}\n", want: "exec"},
		{name: "a selector no node has: the skew rule", opts: Options{Kube: &v134, Nodes: nodes}, selector: "  nodeSelector: {pool: gpu}\n", want: "sleep"},
		{name: "all nodes new", opts: Options{Kube: &v134, Nodes: nodes[:2]}, want: "sleep"},
		{name: "native asked, an old node", opts: Options{Mode: ModeNative, Kube: &v134, Nodes: nodes}, want: "node old runs kubelet 1.29"},
		{name: "native asked, new nodes only", opts: Options{Mode: ModeNative, Kube: &v134, Nodes: nodes}, selector: "  nodeSelector: {pool: new}\n", want: "sleep"},
		{name: "binary asked", opts: Options{Mode: ModeBinary, Kube: &v134, Nodes: nodes[:2]}, want: "exec"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := NewPlan(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := Inject("pod.yaml", []byte(pod(c.selector)), p)
			got := ""
			switch {
			case err != nil:
				got = err.Error()
			case strings.Contains(string(out), "sleep:"):
				got = "sleep"
			case strings.Contains(string(out), "exec:"):
				got = "exec"
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("got %q, want %q\n%s", got, c.want, out)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "pod.yaml:1: ") {
				t.Errorf("error %q does not name the file and line", err)
			}
		})
	}
}

// Null tokens (~, null) are replaced; a block scalar that keeps its line breaks at the
// end of a file without a final one gets strip chomping, the same value.
func TestInjectEditsInPlace(t *testing.T) {
	p, err := NewPlan(Options{Mode: ModeNative, Wait: delay("5s")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, in, want string }{
		{name: "tilde with a comment",
			in:   "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    lifecycle: ~ # none yet\n",
			want: "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    lifecycle: # none yet\n      preStop:\n        sleep:\n          seconds: 5\n  terminationGracePeriodSeconds: 35\n"},
		{name: "null grace",
			in:   "kind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: null\n  containers:\n  - name: a\n    lifecycle: {}\n",
			want: "kind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: 35\n  containers:\n  - name: a\n    lifecycle: {preStop: {sleep: {seconds: 5}}}\n"},
		{name: "a tagged grace period",
			in:   "kind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: !!int 30\n  containers: [{name: a}]\n",
			want: "kind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: !!int 35\n  containers: [{name: a, lifecycle: {preStop: {sleep: {seconds: 5}}}}]\n"},
		{name: "an anchored and tagged grace period, a trailing comma",
			in:   "kind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: &g !!int 30\n  containers: [{name: a},]\n",
			want: "kind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: &g !!int 35\n  containers: [{name: a, lifecycle: {preStop: {sleep: {seconds: 5}}}},]\n"},
		{name: "a grace period as a string: left alone",
			in:   "kind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: \"30\"\n  containers: [{name: a}]\n",
			want: "kind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: \"30\"\n  containers: [{name: a, lifecycle: {preStop: {sleep: {seconds: 5}}}}]\n"},
		{name: "JSON null",
			in:   `{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "lifecycle": null}]}}`,
			want: `{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "a", "lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}], "terminationGracePeriodSeconds": 35}}`},
		{name: "keep chomping at the end without a line break",
			in:   "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    args:\n    - |+\n      hi",
			want: "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    args:\n    - |-\n      hi\n    lifecycle:\n      preStop:\n        sleep:\n          seconds: 5\n  terminationGracePeriodSeconds: 35\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := Inject("p.yaml", []byte(c.in), p)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Errorf("got\n%s\nwant\n%s", out, c.want)
			}
		})
	}
}

// What nap cannot edit without changing another part of the manifest, or what
// Kubernetes would not read as written, is an error naming the right line.
func TestInjectRefuses(t *testing.T) {
	p, err := NewPlan(Options{Mode: ModeBinary})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, in, want string }{
		{name: "containers shared by an alias in one List",
			in:   "kind: List\nitems:\n- kind: Deployment\n  metadata: {name: a}\n  spec:\n    template:\n      spec:\n        containers: &c\n        - {name: app, image: x}\n- kind: Deployment\n  metadata: {name: b}\n  spec:\n    template:\n      spec:\n        containers: *c\n",
			want: "in.yaml:15: Deployment/b: the alias here shares containers (line 8) of Deployment/a"},
		{name: "a List whose items are an alias",
			in:   "kind: List\nextra: &i\n- kind: Deployment\n  metadata: {name: a}\n  spec:\n    template:\n      spec:\n        containers:\n        - {name: app, image: x}\nitems: *i\n",
			want: "in.yaml:10: Deployment/a: the alias here shares containers (line 9) of Deployment/a"},
		{name: "an alias to another document",
			in:   "kind: Deployment\nmetadata: {name: a}\nspec:\n  template:\n    spec:\n      containers: &c\n      - {name: app, image: x}\n---\nkind: Deployment\nmetadata: {name: b}\nspec:\n  template:\n    spec:\n      containers: *c\n",
			want: "in.yaml:14: alias *c refers to an anchor of another document"},
		{name: "a duplicate key",
			in:   "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n    image: a\n    image: b\n",
			want: `in.yaml:7: mapping key "image" already defined at line 6`},
		{name: "binary garbage",
			in:   "kind: Pod\nmetadata: {name: p}\n\xff\xfe\n",
			want: "in.yaml:3: invalid YAML or JSON: byte 30 (0xff) is not UTF-8"},
		{name: "a control character",
			in:   "kind: Pod\nmetadata:\n  name: \x01\n",
			want: "in.yaml:3: invalid YAML or JSON: byte 28 is control character U+0001"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := Inject("in.yaml", []byte(c.in), p)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) || out != nil {
				t.Errorf("error %v, want %q…, and no output", err, c.want)
			}
			if _, err := manifest.Read("in.yaml", []byte(c.in)); c.name != "containers shared by an alias in one List" && c.name != "a List whose items are an alias" && (err == nil || !strings.HasPrefix(err.Error(), c.want)) {
				t.Errorf("Read: %v, want %q…", err, c.want)
			}
		})
	}
}

// The default delay written as text is the sleeper's own default.
func TestDefaultDelay(t *testing.T) {
	r, err := nap.Parse([]string{kube.DefaultDelay})
	if err != nil || r.Duration != nap.Default {
		t.Errorf("DefaultDelay %q reads as %v (%v), want nap.Default %v", kube.DefaultDelay, r.Duration, err, nap.Default)
	}
}

// TestDelivery: --delivery and --image are checked, and auto picks the image volume only
// where every node is known to mount them, saying why not otherwise.
func TestDelivery(t *testing.T) {
	v := func(minor int) *kube.Version { return &kube.Version{Major: 1, Minor: minor} }
	node := func(minor int, rt string) kube.Node {
		return kube.Node{Name: "n", Kubelet: kube.Version{Major: 1, Minor: minor}, Runtime: rt}
	}
	for _, tc := range []struct {
		name string
		opts Options
		want Delivery
		why  string // in DeliveryWhy, or in the error when want is ""
	}{
		{"default", Options{}, DeliveryConfigMap, ""},
		{"image", Options{Delivery: DeliveryImage, Image: "r/nap:1"}, DeliveryImage, ""},
		{"image-needs-a-reference", Options{Delivery: DeliveryImage}, "", "needs --image"},
		{"image-on-1.34", Options{Delivery: DeliveryImage, Image: "r/nap:1", Kube: v(34)}, "", "from Kubernetes 1.35"},
		{"image-without-delivery", Options{Image: "r/nap:1"}, "", "goes with --delivery image"},
		{"bad-delivery", Options{Delivery: "oci"}, "", `--delivery "oci"`},
		{"auto-unknown-cluster", Options{Delivery: DeliveryAuto, Image: "r/nap:1"}, DeliveryConfigMap, "the cluster is unknown"},
		{"auto-1.34", Options{Delivery: DeliveryAuto, Image: "r/nap:1", Kube: v(34)}, DeliveryConfigMap, "Kubernetes 1.34 has no image volumes"},
		{"auto-nodes-unknown", Options{Delivery: DeliveryAuto, Image: "r/nap:1", Kube: v(37)}, DeliveryConfigMap, "kubelets as old as 1.34"},
		{"auto-old-runtime", Options{Delivery: DeliveryAuto, Image: "r/nap:1", Kube: v(37), Nodes: []kube.Node{node(36, "containerd://2.1.4"), node(37, "containerd://1.7.24")}}, DeliveryConfigMap, "containerd://1.7.24; image volumes need containerd 2.1+"},
		{"auto-old-kubelet", Options{Delivery: DeliveryAuto, Image: "r/nap:1", Kube: v(37), Nodes: []kube.Node{node(34, "containerd://2.1.4")}}, DeliveryConfigMap, "kubelet 1.34"},
		{"auto-other-runtime", Options{Delivery: DeliveryAuto, Image: "r/nap:1", Kube: v(37), Nodes: []kube.Node{node(36, "docker://28.0.1")}}, DeliveryConfigMap, "not known to mount image volumes"},
		{"auto-all-able", Options{Delivery: DeliveryAuto, Image: "r/nap:1", Kube: v(37), Nodes: []kube.Node{node(36, "containerd://2.1.4"), node(35, "cri-o://1.33.2")}}, DeliveryImage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(tc.opts)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.why) {
					t.Errorf("error %v, want one saying %q", err, tc.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Delivery != tc.want || !strings.Contains(p.DeliveryWhy, tc.why) || (tc.why == "") != (p.DeliveryWhy == "") {
				t.Errorf("delivery %s (%q), want %s (%q)", p.Delivery, p.DeliveryWhy, tc.want, tc.why)
			}
		})
	}
}

// TestAdaptivePlan: --wait adaptive takes nap's binary (auto), is refused with the
// native sleep, and names the option that is off.
func TestAdaptivePlan(t *testing.T) {
	p, err := NewPlan(Options{Wait: adaptive(wait.Input{}), Kube: &kube.Version{Major: 1, Minor: 36}})
	if err != nil || p.Mode != ModeBinary || p.Wait != wait.DefaultAdaptive() {
		t.Errorf("adaptive, auto: %+v, %v; want the binary, 60s, quiet 2s, min 0", p, err)
	}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Wait: adaptive(wait.Input{}), Mode: ModeNative}, "cannot wait for the pod's traffic"},
		{Options{Wait: wait.Wait{Kind: "sometimes"}}, `wait "sometimes"`},
		{Options{Wait: wait.Wait{Kind: wait.Adaptive, Delay: 10 * time.Second, Min: 20 * time.Second}}, "MIN 20s is longer than its MAX 10s"},
		{Options{Wait: wait.Wait{Kind: wait.Fixed, Delay: -time.Second}}, "must not be negative"},
	} {
		if _, err := NewPlan(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// delay is the fixed wait of --delay s.
func delay(s string) wait.Wait {
	w, err := wait.Input{Delay: s}.Wait()
	if err != nil {
		panic(err)
	}
	return w
}

// adaptive is the adaptive wait of the flags in gives.
func adaptive(in wait.Input) wait.Wait {
	in.Kind = string(wait.Adaptive)
	w, err := in.Wait()
	if err != nil {
		panic(err)
	}
	return w
}

// Workloads are known by API group and kind: an Argo Rollout and an OpenKruise CloneSet
// get the hook as a Deployment does; a kind named Deployment in another group, an
// unknown pod-template kind and a Knative Service are left as they are, each with a
// note saying why.
func TestWorkloadKinds(t *testing.T) {
	p, err := NewPlan(Options{Mode: ModeNative, Wait: delay("5s")})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := "metadata: {name: w}\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: x\n"
	for _, c := range []struct {
		apiVersion, kind string
		injected         bool
		note             string
	}{
		{"apps/v1", "Deployment", true, ""},
		{"argoproj.io/v1alpha1", "Rollout", true, ""},
		{"apps.kruise.io/v1alpha1", "CloneSet", true, ""},
		{"apps.openshift.io/v1", "DeploymentConfig", true, ""},
		{"template.openshift.io/v1", "Template", false, "skipped: an OpenShift Template: its objects take parameters; render it first (oc process -f w.yaml)"},
		{"example.com/v1", "Deployment", false, "skipped: example.com/v1 Deployment is not a kind nap knows"},
		{"example.com/v1", "Widget", false, "skipped: example.com/v1 Widget is not a kind nap knows"},
		{"serving.knative.dev/v1", "Service", false, "skipped: a Knative Service's pods are drained by Knative itself"},
		{"batch/v1", "Job", false, "skipped: a Job runs to completion"},
	} {
		t.Run(c.apiVersion+" "+c.kind, func(t *testing.T) {
			in := "apiVersion: " + c.apiVersion + "\nkind: " + c.kind + "\n" + tmpl
			out, notes, err := Inject("w.yaml", []byte(in), p)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(out), "preStop"); got != c.injected {
				t.Errorf("injected %v, want %v:\n%s", got, c.injected, out)
			}
			var said []string
			for _, n := range notes {
				said = append(said, n.Msg)
			}
			if c.note != "" && !strings.Contains(strings.Join(said, "\n"), c.note) {
				t.Errorf("notes %q, want one saying %q", said, c.note)
			}
			if !c.injected && string(out) != in {
				t.Errorf("a skipped object changed:\n%s", out)
			}
		})
	}
}

// targets appends the named sidecars to a copy: the containers node's own array, spare
// capacity included, is never written.
func TestTargetsLeaveContainersAlone(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("containers: [{name: a}]\ninitContainers: [{name: s, restartPolicy: Always}, {name: i}]\n"), &root); err != nil {
		t.Fatal(err)
	}
	spec := root.Content[0]
	cs := lookup(spec, "containers")
	cs.Content = append(make([]*yaml.Node, 0, 4), cs.Content...)
	tm := &template{p: Plan{Containers: []string{"a", "s"}}, spec: spec}
	var names []string
	for _, c := range tm.targets(cs) {
		names = append(names, c.name)
	}
	if !slices.Equal(names, []string{"a", "s"}) {
		t.Errorf("targets %q, want a and the sidecar s", names)
	}
	if spare := cs.Content[:cap(cs.Content)][1]; spare != nil || len(cs.Content) != 1 {
		t.Errorf("the containers node's array was written: %d items, spare slot %v", len(cs.Content), spare)
	}
}

// EndLine ends a file with a line break and changes no value: a block scalar at the end
// gets strip chomping; one that the file does not end in keeps its own.
func TestEndLine(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"ends a line already", "a: |\n  x\n", "a: |\n  x\n"},
		{"empty", "", ""},
		{"plain scalar", "a: b", "a: b\n"},
		{"clip", "data:\n  run.sh: |\n    exec /app/server", "data:\n  run.sh: |-\n    exec /app/server\n"},
		{"keep", "a: >+\n  x", "a: >-\n  x\n"},
		{"indented clip", "a: |2\n   x", "a: |2-\n   x\n"},
		{"strip already", "a: |-\n  x", "a: |-\n  x\n"},
		{"a comment after the scalar", "a: |\n  x\n# end", "a: |\n  x\n# end\n"},
		{"CRLF", "a: |\r\n  x", "a: |-\r\n  x\r\n"},
		{"two documents, the last ends in a block", "a: 1\n---\nb: |\n  y", "a: 1\n---\nb: |-\n  y\n"},
		{"JSON", `{"a": "b"}`, "{\"a\": \"b\"}\n"},
	} {
		if got := string(EndLine([]byte(tc.in))); got != tc.want {
			t.Errorf("%s: EndLine(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// A preStop hook that stops the server at once is left alone, with a note that says so.
func TestStopHookNoted(t *testing.T) {
	p, err := NewPlan(Options{Mode: ModeNative, Wait: delay("5s")})
	if err != nil {
		t.Fatal(err)
	}
	src := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: nginx\n        lifecycle: {preStop: {exec: {command: [nginx, -s, quit]}}}\n"
	out, notes, err := Inject("web.yaml", []byte(src), p)
	if err != nil || string(out) != src {
		t.Fatalf("changed: %v\n%s", err, out)
	}
	if len(notes) != 1 || !strings.Contains(notes[0].Msg, `preStop hook "nginx -s quit" begins the server's stop at once`) {
		t.Errorf("notes %v", notes)
	}
}

// ServicesIn reads the Services alone, and names a broken document by its line in the
// whole file.
func TestServicesIn(t *testing.T) {
	src := "kind: ConfigMap\nmetadata: {name: c}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {selector: {app: web}}\n---\nkind: ServiceAccount\nmetadata: {name: sa}\n"
	svcs, err := ServicesIn("in.yaml", []byte(src))
	if err != nil || len(svcs) != 1 || svcs[0].Name != "web" || svcs[0].Namespace != "shop" || svcs[0].Spec.Selector["app"] != "web" {
		t.Fatalf("%+v, %v", svcs, err)
	}
	_, err = ServicesIn("in.yaml", []byte(src+"---\nkind: Service\nmetadata: [broken\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "in.yaml:13") { // metadata: [broken
		t.Errorf("a broken Service: %v, want in.yaml:13", err)
	}
}
