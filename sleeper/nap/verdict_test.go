package nap

import (
	"strings"
	"testing"
	"time"
)

func TestVerdictTail(t *testing.T) {
	for _, tc := range []struct {
		v    Verdict
		want string
	}{
		{Verdict{Kind: Quiet, End: 5200 * time.Millisecond, Last: 3100 * time.Millisecond, Conns: 412, Total: 98231, Kept: 2500 * time.Millisecond},
			" quiet end=5200ms last=3100ms conns=412 total=98231 kept=2500ms\n"},
		{Verdict{Kind: Late, End: 10 * time.Second, Last: 9900*time.Millisecond + 999*time.Microsecond, Conns: 0, Total: 0},
			" late end=10000ms last=9900ms conns=0 total=0 kept=0ms\n"},
		{Verdict{Kind: Held, End: 5 * time.Second, Last: 4500 * time.Millisecond, Total: 7, Kept: 4500 * time.Millisecond},
			" held end=5000ms last=4500ms conns=0 total=7 kept=4500ms\n"},
		{Verdict{Kind: Blind, End: 60 * time.Second, Last: time.Second, Conns: 3}, " blind end=60000ms\n"},
		{Verdict{Kind: Quiet, End: time.Second, Total: 4, Wait: WaitLive}, " quiet end=1000ms last=0ms conns=0 total=4 kept=0ms wait=live\n"},
		{Verdict{Kind: Blind, End: time.Second, Wait: WaitArgs}, " blind end=1000ms wait=args\n"},
	} {
		if got := tc.v.Tail(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestParseVerdict(t *testing.T) {
	quiet := Verdict{Kind: Quiet, End: 5200 * time.Millisecond, Last: 3100 * time.Millisecond, Conns: 412, Total: 98231}
	for _, tc := range []struct {
		name, message string
		want          Verdict
		ok            bool
	}{
		{"quiet", "nap/v1 quiet end=5200ms last=3100ms conns=412 total=98231\n", quiet, true},
		{"after the app's lines", "started\nwarming\nnap/v1 quiet end=5200ms last=3100ms conns=412 total=98231\n", quiet, true},
		{"after the app's text without a newline", "app stoppednap/v1 quiet end=5200ms last=3100ms conns=412 total=98231\n", quiet, true},
		{"the last of two", "nap/v1 late end=1ms last=1ms conns=1 total=1\nnap/v1 quiet end=5200ms last=3100ms conns=412 total=98231\n", quiet, true},
		{"the kept field", "nap/v1 quiet end=5200ms last=3100ms conns=412 total=98231 kept=2000ms\n", Verdict{Kind: Quiet, End: 5200 * time.Millisecond, Last: 3100 * time.Millisecond, Conns: 412, Total: 98231, Kept: 2 * time.Second}, true},
		{"held", "nap/v1 held end=5000ms last=4500ms conns=0 total=7 kept=4500ms wait=args\n", Verdict{Kind: Held, End: 5 * time.Second, Last: 4500 * time.Millisecond, Total: 7, Kept: 4500 * time.Millisecond, Wait: WaitArgs}, true},
		{"held needs kept", "nap/v1 held end=5000ms last=4500ms conns=0 total=7\n", Verdict{}, false},
		{"kept after last", "nap/v1 held end=5000ms last=4500ms conns=0 total=7 kept=4600ms\n", Verdict{}, false},
		{"kept without its unit", "nap/v1 quiet end=5000ms last=4500ms conns=0 total=7 kept=1\n", Verdict{}, false},
		{"kept out of place", "nap/v1 quiet end=5000ms last=4500ms conns=0 kept=0ms total=7\n", Verdict{}, false},
		{"late", "nap/v1 late end=10000ms last=9900ms conns=7 total=9\n", Verdict{Kind: Late, End: 10 * time.Second, Last: 9900 * time.Millisecond, Conns: 7, Total: 9}, true},
		{"blind", "nap/v1 blind end=60000ms\n", Verdict{Kind: Blind, End: time.Minute}, true},
		{"cut", "nap/v1", Verdict{Kind: Cut}, true},
		{"cut after the app's line", "hello\nnap/v1", Verdict{Kind: Cut}, true},
		{"none", "panic: runtime error\n", Verdict{}, false},
		{"empty", "", Verdict{}, false},
		{"the app wrote after a cut head", "nap/v1goodbye\n", Verdict{}, false},
		{"the app wrote after the line", "nap/v1 quiet end=5200ms last=3100ms conns=412 total=98231\nbye\n", quiet, true},
		{"no newline: still being written", "nap/v1 quiet end=5200ms last=3100ms", Verdict{}, false},
		{"an unknown kind", "nap/v1 loud end=1ms last=0ms conns=0 total=0\n", Verdict{}, false},
		{"sparse is the reader's, never written", "nap/v1 sparse end=1ms last=0ms conns=0 total=0\n", Verdict{}, false},
		{"a field missing", "nap/v1 quiet end=1ms last=0ms conns=0\n", Verdict{}, false},
		{"a field too many", "nap/v1 blind end=1ms last=0ms\n", Verdict{}, false},
		{"fields out of order", "nap/v1 quiet last=0ms end=1ms conns=0 total=0\n", Verdict{}, false},
		{"a unit missing", "nap/v1 quiet end=1 last=0ms conns=0 total=0\n", Verdict{}, false},
		{"a leading zero", "nap/v1 quiet end=01ms last=0ms conns=0 total=0\n", Verdict{}, false},
		{"a sign", "nap/v1 quiet end=1ms last=0ms conns=+1 total=0\n", Verdict{}, false},
		{"last after end", "nap/v1 late end=1ms last=2ms conns=0 total=0\n", Verdict{}, false},
		{"an end too long to be a duration", "nap/v1 blind end=9223372036855ms\n", Verdict{}, false},
		{"two spaces", "nap/v1  quiet end=1ms last=0ms conns=0 total=0\n", Verdict{}, false},
		{"the live wait", "nap/v1 late end=1ms last=1ms conns=0 total=0 wait=live\n", Verdict{Kind: Late, End: time.Millisecond, Last: time.Millisecond, Wait: WaitLive}, true},
		{"the arguments' wait", "nap/v1 quiet end=1ms last=0ms conns=0 total=0 wait=args\n", Verdict{Kind: Quiet, End: time.Millisecond, Wait: WaitArgs}, true},
		{"blind, with where its wait came from", "nap/v1 blind end=1ms wait=live\n", Verdict{Kind: Blind, End: time.Millisecond, Wait: WaitLive}, true},
		{"an unknown wait", "nap/v1 quiet end=1ms last=0ms conns=0 total=0 wait=learned\n", Verdict{}, false},
		{"the wait out of place", "nap/v1 quiet wait=live end=1ms last=0ms conns=0 total=0\n", Verdict{}, false},
		{"the wait twice", "nap/v1 blind end=1ms wait=live wait=live\n", Verdict{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseVerdict(tc.message)
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseVerdict(%q) = %+v, %v; want %+v, %v", tc.message, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// FuzzParseVerdict: whatever ParseVerdict accepts, nap writes the same way: its line
// reads back as itself; a line of the binaries before kept is nap's line without it.
func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{"nap/v1 quiet end=5200ms last=3100ms conns=412 total=98231\n", "x\nnap/v1", "nap/v1 blind end=0ms\n", "nap/v1 late end=9ms last=9ms conns=18446744073709551615 total=0\n", "nap/v1 held end=9ms last=8ms conns=0 total=3 kept=8ms wait=live\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, message string) {
		v, ok := ParseVerdict(message)
		if !ok {
			return
		}
		line := v.String()
		if v.Kind != Cut {
			line += "\n"
		}
		again, ok := ParseVerdict(line)
		if !ok || again != v {
			t.Fatalf("%q read as %+v, written as %q, read back as %+v, %v", message, v, line, again, ok)
		}
		before := strings.Replace(line, " kept=0ms", "", 1) // the binaries' before kept
		if v.Kind != Cut && !strings.Contains(message, line) && !strings.Contains(message, before) {
			t.Fatalf("%q read as %+v, whose line %q it does not hold", message, v, line)
		}
	})
}

func TestVerdictSparse(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		name  string
		v     Verdict
		age   time.Duration
		allow int64
		want  bool
	}{
		// 200 connections a second for a day: 400 per 2 s window.
		{"dense", Verdict{Kind: Quiet, Total: 200 * 86400}, day, 0, false},
		// One connection a minute: 0.03 per window.
		{"sparse", Verdict{Kind: Quiet, Total: 1440}, day, 0, true},
		// 4 per window, 2 of them the probes' background: 2 beyond it.
		{"dense only with the probes", Verdict{Kind: Quiet, Total: 4 * 43200}, day, 2, true},
		{"just at the bound", Verdict{Kind: Quiet, Total: SparseBelow * 43200}, day, 0, false},
		{"late is never sparse", Verdict{Kind: Late, Total: 0}, day, 0, false},
		{"held is never sparse", Verdict{Kind: Held, Total: 0}, day, 0, false},
		// A pod 2 min old that had 78 connections, then 687 in a 25.7 s wait (the lab's
		// scale-down behind the load balancer): dense, its life to the wait's end.
		{"a young pod, its wait dense", Verdict{Kind: Quiet, End: 25700 * time.Millisecond, Conns: 687, Total: 78}, 2 * time.Minute, 0, false},
		{"a young pod, its wait as thin", Verdict{Kind: Quiet, End: 25700 * time.Millisecond, Conns: 20, Total: 3}, 2 * time.Minute, 0, true},
		// A pool's few connections, its requests seen to stop: a tail, not silence.
		{"few connections, kept requests seen", Verdict{Kind: Quiet, Total: 1440, Kept: time.Second}, day, 0, false},
		{"an age unknown", Verdict{Kind: Quiet, Total: 0}, 0, 0, false},
	} {
		if got := tc.v.Sparse(tc.age, DefaultQuiet, tc.allow); got != tc.want {
			t.Errorf("%s: Sparse = %v, want %v", tc.name, got, tc.want)
		}
	}
}
