package hook

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nap-k8s/nap/wait"
)

// TestOf: each kind of hook, its delay where it can be read.
func TestOf(t *testing.T) {
	exec := func(cmd ...string) *corev1.LifecycleHandler {
		return &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}
	}
	for _, tc := range []struct {
		name  string
		h     *corev1.LifecycleHandler
		kind  Kind
		delay time.Duration
		known bool
		stops bool
	}{
		{name: "none", h: nil, kind: None},
		{name: "native", h: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 7}}, kind: NativeSleep, delay: 7 * time.Second, known: true},
		{name: "nap", h: exec("/nap/nap", "4.5"), kind: Nap, delay: 4500 * time.Millisecond, known: true},
		{name: "nap default", h: exec("/nap/nap"), kind: Nap, delay: 10 * time.Second, known: true},
		{name: "nap forever", h: exec("/nap/nap", "inf"), kind: Nap},
		{name: "nap adaptive", h: exec("/nap/nap", "2s", "--quiet", "1s", "--max", "45s", "--allow", "3"), kind: Nap, delay: 45 * time.Second, known: true},
		{name: "nap adaptive, MAX under MIN", h: exec("/nap/nap", "20s", "--max", "5s"), kind: Nap, delay: 20 * time.Second, known: true},
		{name: "nap adaptive, default MAX", h: exec("/nap/nap", "--quiet", "1s"), kind: Nap, delay: time.Minute, known: true},
		{name: "nap, a bad flag", h: exec("/nap/nap", "--quiet"), kind: Nap},
		{name: "sleep with nap's flags", h: exec("sleep", "--max", "3"), kind: Shell},
		{name: "shell sleep", h: exec("/bin/sh", "-c", "echo bye; sleep 5"), kind: Shell, delay: 5 * time.Second, known: true},
		{name: "sleep binary", h: exec("sleep", "3"), kind: Shell, delay: 3 * time.Second, known: true},
		{name: "shell script", h: exec("bash", "-c", "/stop.sh"), kind: Shell},
		{name: "own command", h: exec("/app", "stop"), kind: Exec},
		{name: "nginx quits at once", h: exec("/usr/sbin/nginx", "-s", "quit"), kind: Exec, known: true, stops: true},
		{name: "nginx reloads: no stop", h: exec("nginx", "-s", "reload"), kind: Exec},
		{name: "kong quits at once", h: exec("kong", "quit"), kind: Exec, known: true, stops: true},
		{name: "kong waits first", h: exec("kong", "quit", "--wait=15"), kind: Exec, delay: 15 * time.Second, known: true, stops: true},
		{name: "kong waits first, two words", h: exec("/usr/local/bin/kong", "quit", "--wait", "7.5"), kind: Exec, delay: 7500 * time.Millisecond, known: true, stops: true},
		{name: "a sleep first, then the stop", h: exec("sh", "-c", "sleep 5 && nginx -s quit"), kind: Shell, delay: 5 * time.Second, known: true},
		{name: "the stop first, then a sleep", h: exec("sh", "-c", "nginx -s quit; sleep 5"), kind: Shell, known: true, stops: true},
		{name: "kill in a script", h: exec("/bin/sh", "-c", "echo bye && kill -QUIT 1"), kind: Shell, known: true, stops: true},
		{name: "NATS's lame-duck mode, as its chart writes it", h: exec("nats-server", "-sl=ldm=/var/run/nats/nats.pid"), kind: Exec, known: true, stops: true},
		{name: "NATS's lame-duck mode, two words", h: exec("/nats-server", "--signal", "ldm"), kind: Exec, known: true, stops: true},
		{name: "NATS's lame-duck mode, then a sleep", h: exec("/bin/sh", "-c", "/nats-server -sl=ldm=/var/run/nats/nats.pid && /bin/sleep 60"), kind: Shell, known: true, stops: true},
		{name: "NATS reloads: no stop", h: exec("nats-server", "--signal", "reload"), kind: Exec},
		{name: "Cassandra drains at once", h: exec("/bin/sh", "-c", "nodetool drain"), kind: Shell, known: true, stops: true},
		{name: "Cassandra with its connection flags", h: exec("nodetool", "-h", "localhost", "drain"), kind: Exec, known: true, stops: true},
		{name: "nodetool status: no stop", h: exec("nodetool", "status"), kind: Exec},
		{name: "apache's graceful stop", h: exec("apachectl", "-k", "graceful-stop"), kind: Exec, known: true, stops: true},
		{name: "exec'd sleep in a script", h: exec("sh", "-c", "exec sleep 3"), kind: Shell, delay: 3 * time.Second, known: true},
		{name: "http", h: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/stop", Port: intstr.FromInt32(8080)}}, kind: HTTP},
	} {
		c := corev1.Container{Name: "app"}
		if tc.h != nil {
			c.Lifecycle = &corev1.Lifecycle{PreStop: tc.h}
		}
		h := Of(c)
		if h.Kind != tc.kind || h.Delay() != tc.delay || h.Known != tc.known || h.Stops != tc.stops {
			t.Errorf("%s: Of = %s %v known %v stops %v, want %s %v known %v stops %v", tc.name, h.Kind, h.Delay(), h.Known, h.Stops, tc.kind, tc.delay, tc.known, tc.stops)
		}
		if got := NeedsShell(h.Command); got != (tc.kind == Shell) {
			t.Errorf("%s: NeedsShell = %v", tc.name, got)
		}
	}
}

// Explain: a message's own reason when it has one, else what the hook runs (the
// kubelet's FailedPreStopHook event gives none).
func TestExplain(t *testing.T) {
	exec := func(cmd ...string) corev1.PodSpec {
		return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}}}}}
	}
	for _, tc := range []struct {
		msg  string
		spec corev1.PodSpec
		want string
	}{
		{msg: `rpc error: code = Unknown desc = exec: "/bin/sh": stat /bin/sh: no such file or directory`, spec: exec("/bin/sh", "-c", "sleep 5"),
			want: `exec: "/bin/sh": stat /bin/sh: no such file or directory`},
		{msg: BareFailure, spec: exec("/bin/sh", "-c", "sleep 5"), want: `the kubelet gives no reason; the hook runs "/bin/sh -c sleep 5", which needs a shell or sleep binary the image may not have`},
		{msg: BareFailure, spec: exec("/nap/nap", "5s"), want: `the kubelet gives no reason; the hook runs "/nap/nap 5s": the binary is missing (is the nap ConfigMap mounted there?), or nap exited non-zero after it waited: 2 for an invalid argument (after the default 10s), 3 when it could not read the pod's traffic (after MAX), 1 at once when every sleep call was refused`},
		{msg: BareFailure, spec: exec("/app", "stop"), want: `the kubelet gives no reason; the hook runs "/app stop"`},
		{msg: BareFailure, spec: corev1.PodSpec{}, want: "the kubelet gives no reason"},
	} {
		if got := Explain(tc.msg, tc.spec); got != tc.want {
			t.Errorf("Explain(%q, %v):\n got %s\nwant %s", tc.msg, tc.spec.Containers, got, tc.want)
		}
	}
}

func TestCauseLabel(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		{`exec: "/bin/sh": stat /bin/sh: no such file or directory: unknown`, "no-shell"},
		{`exec: "bash": executable file not found in $PATH: unknown`, "no-shell"},
		{`exec: "/nap/nap": stat /nap/nap: no such file or directory: unknown`, "no-binary"},
		{`command '/bin/true' exited with 1: `, "non-zero-exit"},
		{`Get "http://10.78.0.5:8080/stop": dial tcp 10.78.0.5:8080: connect: connection refused`, "http"},
		{`exec /nap/nap: permission denied`, "refused"},
		{`something else`, "other"},
		{BareFailure, "hook-shell"}, // the kubelet's: no reason, so what the hook runs
	} {
		if got := CauseLabel(c.msg, Shell); got != c.want {
			t.Errorf("CauseLabel(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}

// An adaptive nap hook holds from MIN to MAX: both are read.
func TestOfAdaptive(t *testing.T) {
	c := corev1.Container{Name: "app", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
		Command: []string{"/nap/nap", "2s", "--quiet", "1s", "--max", "45s"}}}}}
	if h := Of(c); !h.Adaptive() || h.Wait.Min != 2*time.Second || h.Delay() != 45*time.Second {
		t.Errorf("Of = %+v, want adaptive from 2s to 45s", h)
	}
	c.Lifecycle.PreStop.Exec.Command = []string{"/nap/nap", "5s"}
	if h := Of(c); h.Adaptive() || h.Wait.Min != 0 || h.Delay() != 5*time.Second {
		t.Errorf("Of = %+v, want a fixed 5s", h)
	}
}

func TestBackground(t *testing.T) {
	for _, tc := range []struct {
		quiet   time.Duration
		periods []time.Duration
		want    int64
	}{
		{2 * time.Second, nil, 0},
		{2 * time.Second, []time.Duration{time.Second}, 3},
		{2 * time.Second, []time.Duration{time.Second, 0}, 4}, // 0: the default 10 s
		{2 * time.Second, []time.Duration{5 * time.Second, 5 * time.Second}, 2},
		{1500 * time.Millisecond, []time.Duration{time.Second}, 2},
	} {
		if got := Background(tc.quiet, tc.periods); got != tc.want {
			t.Errorf("Background(%v, %v) = %d, want %d", tc.quiet, tc.periods, got, tc.want)
		}
	}
	// The command nap reads back as the same wait.
	w := wait.Wait{Kind: wait.Adaptive, Min: 2 * time.Second, Quiet: 1500 * time.Millisecond, Delay: 45 * time.Second, Allow: 3}
	c := corev1.Container{Name: "app", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: w.Command()}}}}
	if h := Of(c); h.Wait != w {
		t.Errorf("%q reads as %+v", w.Command(), h)
	}
}

// The probes that go on while a pod terminates and open a connection to it.
func TestProbePeriods(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	http := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want []time.Duration
	}{
		{"none", corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}, nil},
		{"readiness every second, liveness by default", corev1.PodSpec{Containers: []corev1.Container{{Name: "a",
			ReadinessProbe: &corev1.Probe{ProbeHandler: http, PeriodSeconds: 1},
			LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}}}}},
			[]time.Duration{time.Second, 10 * time.Second}},
		{"exec and startup probes open nothing", corev1.PodSpec{Containers: []corev1.Container{{Name: "a",
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1},
			StartupProbe:   &corev1.Probe{ProbeHandler: http, PeriodSeconds: 1}}}},
			nil},
		{"gRPC, a sidecar's, not a plain init container's", corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "init", ReadinessProbe: &corev1.Probe{ProbeHandler: http, PeriodSeconds: 3}},
				{Name: "sidecar", RestartPolicy: &always, LivenessProbe: &corev1.Probe{ProbeHandler: http, PeriodSeconds: 5}}},
			Containers: []corev1.Container{{Name: "a", ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9}}, PeriodSeconds: 2}}}},
			[]time.Duration{2 * time.Second, 5 * time.Second}},
	} {
		if got := ProbePeriods(tc.spec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: ProbePeriods = %v, want %v", tc.name, got, tc.want)
		}
	}
}
