package wait

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nap-k8s/nap/sleeper/nap"
)

const s = time.Second

// Input: defaults applied once, the chosen kind's flags read, errors naming the flag.
func TestInputWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want Wait
		err  string
	}{
		{name: "nothing: the fixed default", in: Input{}, want: Wait{Kind: Fixed, Delay: 10 * s, DelayText: "10s"}},
		{name: "a fixed delay keeps its spelling", in: Input{Delay: " 2.5 "}, want: Wait{Kind: Fixed, Delay: 2500 * time.Millisecond, DelayText: "2.5"}},
		{name: "adaptive defaults", in: Input{Kind: "adaptive"}, want: DefaultAdaptive()},
		{name: "adaptive", in: Input{Kind: "adaptive", Max: "45s", Min: "2s", Quiet: "1.5s"},
			want: Wait{Kind: Adaptive, Delay: 45 * s, Min: 2 * s, Quiet: 1500 * time.Millisecond}},
		{name: "adaptive with requests", in: Input{Kind: "adaptive", Requests: "1s"},
			want: Wait{Kind: Adaptive, Delay: 60 * s, Quiet: 2 * s, Requests: s}},
		{name: "bad requests", in: Input{Kind: "adaptive", Requests: "busy"}, err: `--requests "busy"`},
		{name: "a fixed wait reads no adaptive flag", in: Input{Quiet: "soon", Min: "90s"}, want: Default()},
		{name: "unknown kind", in: Input{Kind: "sometimes"}, err: `--wait "sometimes": want fixed or adaptive`},
		{name: "bad delay", in: Input{Delay: "--max"}, err: `--delay "--max": want a duration`},
		{name: "forever", in: Input{Delay: "inf"}, err: `--delay "inf": nap reads it as forever`},
		{name: "bad quiet", in: Input{Kind: "adaptive", Quiet: "soon"}, err: `--quiet "soon"`},
		{name: "a day", in: Input{Delay: "24h"}, want: Wait{Kind: Fixed, Delay: 24 * time.Hour, DelayText: "24h"}},
		{name: "past a day", in: Input{Delay: "1000000h"}, err: `--delay "1000000h": longer than a preStop wait may be (24h0m0s)`},
		{name: "near nap's own limit", in: Input{Delay: "9223372006"}, err: "longer than a preStop wait may be"},
		{name: "an adaptive MAX past a day", in: Input{Kind: "adaptive", Max: "25h"}, err: `--max "25h": longer`},
		{name: "MIN forever", in: Input{Kind: "adaptive", Min: "inf"}, err: `--min "inf"`},
		{name: "MIN past MAX", in: Input{Kind: "adaptive", Max: "10s", Min: "20s"}, err: "--min 20s is longer than --max 10s"},
		{name: "MAX named as the flag it came from", in: Input{Kind: "adaptive", Max: "10s", Min: "20s", MaxFlag: FlagDelay},
			err: "--min 20s is longer than --delay 10s"},
	} {
		got, err := tc.in.Wait()
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// Defaults read both waits, and a pod's annotations choose over them.
func TestDefaultsForPod(t *testing.T) {
	d, err := Input{Delay: "5", Max: "90s", Min: "3s"}.Defaults()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Input{Kind: "fixed", Min: "90s"}).Defaults(); err == nil {
		t.Error("Defaults took a MIN past the adaptive MAX: both waits must be valid")
	}
	adaptive := Wait{Kind: Adaptive, Delay: 90 * s, Min: 3 * s, Quiet: nap.DefaultQuiet}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        Wait
		err         string
	}{
		{name: "none", want: Wait{Kind: Fixed, Delay: 5 * s, DelayText: "5"}},
		{name: "its own delay", annotations: map[string]string{DelayAnnotation: " 2.5"}, want: Wait{Kind: Fixed, Delay: 2500 * time.Millisecond, DelayText: "2.5"}},
		{name: "adaptive", annotations: map[string]string{KindAnnotation: "adaptive"}, want: adaptive},
		{name: "adaptive, its own MAX", annotations: map[string]string{KindAnnotation: "adaptive", DelayAnnotation: "2m"},
			want: Wait{Kind: Adaptive, Delay: 120 * s, Min: 3 * s, Quiet: nap.DefaultQuiet}},
		{name: "bad kind", annotations: map[string]string{KindAnnotation: "eventually"}, err: `nap.dev/wait "eventually"`},
		{name: "bad delay", annotations: map[string]string{DelayAnnotation: "soon"}, err: `nap.dev/delay "soon"`},
		{name: "a delay past a day", annotations: map[string]string{DelayAnnotation: "9223372006"}, err: `nap.dev/delay "9223372006": longer`},
		{name: "MAX below MIN", annotations: map[string]string{KindAnnotation: "adaptive", DelayAnnotation: "1s"}, err: "shorter than the adaptive wait's MIN 3s"},
	} {
		got, err := d.ForPod(tc.annotations)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	if got, _ := (Defaults{}).ForPod(map[string]string{KindAnnotation: "adaptive"}); got != DefaultAdaptive() {
		t.Errorf("zero Defaults, adaptive: %+v, want nap's defaults", got)
	}
}

// The writer and the reader agree: every wait nap writes, nap reads back as itself.
func TestCommandRoundTrip(t *testing.T) {
	for _, w := range []Wait{
		Default(),
		{Kind: Fixed, Delay: 2500 * time.Millisecond, DelayText: "2.5"},
		{Kind: Fixed, Delay: 1500 * time.Microsecond},
		DefaultAdaptive(),
		{Kind: Adaptive, Min: 2 * s, Quiet: 1500 * time.Millisecond, Delay: 45 * s, Allow: 3},
		{Kind: Adaptive, Min: 29 * s, Quiet: 250 * time.Millisecond, Delay: 58 * s, Allow: 12},
		{Kind: Adaptive, Quiet: 2 * s, Delay: 90 * s, Allow: 2, Requests: s},
		{Kind: Fixed, Delay: 10 * s, Allow: 3}, // the background of its verdict
		{Kind: Fixed, Delay: 10 * s, Allow: 3, Live: true},
		{Kind: Adaptive, Quiet: 2 * s, Delay: 60 * s, Allow: 3, Live: true},
	} {
		cmd := w.Command()
		if cmd[0] != "/nap/nap" {
			t.Errorf("%+v: command %q does not run /nap/nap", w, cmd)
		}
		got, ok := FromArgs(cmd[1:])
		want := w
		want.DelayText = ""
		if !ok || got != want {
			t.Errorf("%q reads as %+v (%v), want %+v", cmd, got, ok, want)
		}
	}
	if got := (Wait{Kind: Adaptive, Min: 2 * s, Quiet: 2 * s, Delay: 60 * s, Allow: 1}).Args(); !slices.Equal(got, []string{"2s", "--quiet", "2s", "--max", "60s", "--allow", "1"}) {
		t.Errorf("Args = %q", got)
	}
	if got := (Wait{Kind: Adaptive, Quiet: 2 * s, Delay: 60 * s, Requests: 1500 * time.Millisecond}).Args(); !slices.Equal(got, []string{"--quiet", "2s", "--max", "60s", "--allow", "0", "--requests", "1500ms"}) {
		t.Errorf("Args with requests = %q", got)
	}
	if got := (Wait{Kind: Fixed, Delay: 10 * s, Allow: 2}).Args(); !slices.Equal(got, []string{"10s", "--allow", "2"}) {
		t.Errorf("fixed Args = %q", got)
	}
	if got := (Wait{Kind: Fixed, Delay: 10 * s}).Args(); !slices.Equal(got, []string{"10s"}) {
		t.Errorf("fixed Args with no background = %q", got)
	}
	if got := (Wait{Kind: Fixed, Delay: 10 * s, Allow: 2, Live: true}).Args(); !slices.Equal(got, []string{"10s", "--allow", "2", "--live"}) {
		t.Errorf("live fixed Args = %q", got)
	}
	for _, args := range [][]string{{"inf"}, {"soon"}} {
		if _, ok := FromArgs(args); ok {
			t.Errorf("FromArgs(%q) is known", args)
		}
	}
}

func TestArg(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 60 * s: "60s", 1500 * time.Millisecond: "1500ms", 1500 * time.Microsecond: "1500000ns"} {
		if got := Arg(d); got != want {
			t.Errorf("Arg(%v) = %q, want %q", d, got, want)
		}
	}
}

// CELCommand is Command with the pod's parts as CEL expressions.
func TestCELCommand(t *testing.T) {
	a := Wait{Kind: Adaptive, Min: time.Second, Quiet: 2 * s, Delay: 60 * s}
	if got, want := a.CELCommand("d", "m", "n"), `["/nap/nap", "1s", "--quiet", "2s", "--max", m, "--allow", string(n)]`; got != want {
		t.Errorf("adaptive: %s, want %s", got, want)
	}
	if got, want := Default().CELCommand("d", "m", "n"), `["/nap/nap", d] + (n > 0 ? ["--allow", string(n)] : [])`; got != want {
		t.Errorf("fixed: %s, want %s", got, want)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		w   Wait
		err string
	}{
		{Default(), ""},
		{DefaultAdaptive(), ""},
		{Wait{}, `wait ""`},
		{Wait{Kind: Fixed, Delay: -s}, "must not be negative"},
		{Wait{Kind: Adaptive, Delay: s, Min: 2 * s}, "MIN 2s is longer than its MAX 1s"},
		{Wait{Kind: Adaptive, Delay: s, Quiet: -s}, "must not be negative"},
		{Wait{Kind: Adaptive, Delay: s, Requests: -s}, "must not be negative"},
		{Wait{Kind: Adaptive, Delay: s, Requests: MaxDelay + 1}, "longer than a preStop wait may be"},
		{Wait{Kind: Fixed, Delay: MaxDelay + 1}, "longer than a preStop wait may be"},
	} {
		err := tc.w.Check()
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: %v, want %q", tc.w, err, tc.err)
		}
	}
}

// Native is never shorter than the wait it stands for: whole seconds, rounded up, and
// an adaptive wait's MAX.
func TestNative(t *testing.T) {
	for _, c := range []struct {
		in   Wait
		want time.Duration
	}{
		{Wait{Kind: Fixed, Delay: 5 * time.Second, DelayText: "5"}, 5 * time.Second},
		{Wait{Kind: Fixed, Delay: 2500 * time.Millisecond}, 3 * time.Second},
		{Wait{Kind: Fixed, Delay: time.Nanosecond}, time.Second},
		{Wait{Kind: Fixed}, 0},
		{Wait{Kind: Adaptive, Delay: 60 * time.Second, Min: 5 * time.Second, Quiet: 2 * time.Second, Allow: 3}, 60 * time.Second},
	} {
		got := c.in.Native()
		if got != (Wait{Kind: Fixed, Delay: c.want}) {
			t.Errorf("%+v: %+v, want a fixed %v", c.in, got, c.want)
		}
	}
}

func TestLiveLine(t *testing.T) {
	for _, tc := range []struct {
		w    Wait
		want string
	}{
		{Wait{Kind: Fixed, Delay: 10 * s, Allow: 3}, "wait/v1 10000 0 0 0\n"},
		{Wait{Kind: Adaptive, Min: 4 * s, Quiet: 2 * s, Delay: 23 * s, Allow: 3, Requests: s}, "wait/v1 4000 2000 23000 1000\n"},
		{Wait{Kind: Adaptive, Quiet: 2 * s, Delay: 60 * s}, "wait/v1 0 2000 60000 0\n"},
	} {
		if got, ok := tc.w.LiveLine(); !ok || got != tc.want {
			t.Errorf("%+v: %q, %v; want %q", tc.w, got, ok, tc.want)
		}
		// nap reads it as the wait it is (but its ALLOW, the hook's).
		r, ok := nap.ParseLive([]byte(tc.want))
		got, _ := FromArgs(nil)
		if ok {
			got = Wait{Kind: Fixed, Delay: r.Duration}
			if r.Adaptive {
				got = Wait{Kind: Adaptive, Min: r.Duration, Quiet: r.Quiet, Delay: r.Max, Requests: r.Requests}
			}
		}
		want := tc.w
		want.Allow = 0
		if !ok || got != want {
			t.Errorf("%q reads as %+v, want %+v", tc.want, got, want)
		}
	}
}
