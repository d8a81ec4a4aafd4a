package nap

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    Request
		help    bool
		bad     bool   // invalid
		invalid string // the argument named by the error
	}{
		{name: "no argument", args: nil, want: Request{Duration: Default}},
		{name: "seconds", args: []string{"10"}, want: Request{Duration: 10 * time.Second}},
		{name: "fraction", args: []string{"2.5"}, want: Request{Duration: 2500 * time.Millisecond}},
		{name: "leading dot", args: []string{".5"}, want: Request{Duration: 500 * time.Millisecond}},
		{name: "trailing dot", args: []string{"3."}, want: Request{Duration: 3 * time.Second}},
		{name: "zero", args: []string{"0"}, want: Request{}},
		{name: "ms", args: []string{"500ms"}, want: Request{Duration: 500 * time.Millisecond}},
		{name: "terms", args: []string{"1m30s"}, want: Request{Duration: 90 * time.Second}},
		{name: "hours", args: []string{"1.5h"}, want: Request{Duration: 90 * time.Minute}},
		{name: "every unit", args: []string{"1h1m1s1ms1us1ns"}, want: Request{Duration: time.Hour + time.Minute + time.Second + time.Millisecond + time.Microsecond + time.Nanosecond}},
		{name: "sum of arguments", args: []string{"1m", "30s"}, want: Request{Duration: 90 * time.Second}},
		{name: "below a nanosecond", args: []string{"0.0000000019s"}, want: Request{Duration: 1}},
		{name: "exact minute digits", args: []string{"0.00000000001666666666666666666667m"}, want: Request{Duration: 1}},
		{name: "just below", args: []string{"0.00000000001666666666666666666666m"}, want: Request{Duration: 0}},
		{name: "max", args: []string{"9223372036854775807ns"}, want: Request{Duration: math.MaxInt64}},
		{name: "leading zeros", args: []string{"000000000000000000000000001s"}, want: Request{Duration: time.Second}},
		{name: "inf", args: []string{"inf"}, want: Request{Infinite: true}},
		{name: "infinity and more", args: []string{"1s", "infinity"}, want: Request{Duration: time.Second, Infinite: true}},
		{name: "live", args: []string{"5s", "--live"}, want: Request{Duration: 5 * time.Second, Live: true}},
		{name: "live alone: a floor of zero", args: []string{"--live"}, want: Request{Live: true}},
		{name: "live is no flag's value", args: []string{"--quiet", "--live"}, bad: true, invalid: "--live"},
		{name: "live takes no value", args: []string{"--live=1"}, bad: true, invalid: "--live=1"},
		{name: "help", args: []string{"-h"}, help: true},
		{name: "long help after a valid argument", args: []string{"5", "--help"}, help: true},
		{name: "invalid before help", args: []string{"x", "-h"}, bad: true, invalid: "x"},
		{name: "empty", args: []string{""}, bad: true, invalid: ""},
		{name: "negative", args: []string{"-5"}, bad: true, invalid: "-5"},
		{name: "plus sign", args: []string{"+5"}, bad: true, invalid: "+5"},
		{name: "unknown unit", args: []string{"10sec"}, bad: true, invalid: "10sec"},
		{name: "exponent", args: []string{"1e3"}, bad: true, invalid: "1e3"},
		{name: "missing unit", args: []string{"1m30"}, bad: true, invalid: "1m30"},
		{name: "two dots", args: []string{"1.2.3"}, bad: true, invalid: "1.2.3"},
		{name: "dot alone", args: []string{"."}, bad: true, invalid: "."},
		{name: "unit alone", args: []string{"s"}, bad: true, invalid: "s"},
		{name: "micro sign", args: []string{"1µs"}, bad: true, invalid: "1µs"},
		{name: "space", args: []string{"5 "}, bad: true, invalid: "5 "},
		{name: "upper case inf", args: []string{"INF"}, bad: true, invalid: "INF"},
		{name: "number before inf", args: []string{"5inf"}, bad: true, invalid: "5inf"},
		{name: "inf in a term", args: []string{"1minf"}, bad: true, invalid: "1minf"},
		{name: "flag", args: []string{"--verbose"}, bad: true, invalid: "--verbose"},
		{name: "overflow", args: []string{"9223372036854775808ns"}, bad: true, invalid: "9223372036854775808ns"},
		{name: "overflowing sum", args: []string{"9223372036854775807ns", "1ns"}, bad: true, invalid: "1ns"},
		{name: "first invalid wins", args: []string{"1s", "bad", "worse"}, bad: true, invalid: "bad"},
		{name: "adaptive", args: []string{"5s", "--quiet", "1.5s", "--max", "1m", "--allow", "3"},
			want: Request{Duration: 5 * time.Second, Adaptive: true, Quiet: 1500 * time.Millisecond, Max: time.Minute, Allow: 3}},
		{name: "adaptive defaults", args: []string{"--quiet", "1s"}, want: Request{Adaptive: true, Quiet: time.Second, Max: DefaultMax}},
		{name: "max alone", args: []string{"--max", "30"}, want: Request{Adaptive: true, Quiet: DefaultQuiet, Max: 30 * time.Second}},
		{name: "flags anywhere, MIN adds up", args: []string{"1s", "--allow", "2.9", "2s", "--max", "1m"}, want: Request{Duration: 3 * time.Second, Adaptive: true, Quiet: DefaultQuiet, Max: DefaultMax, Allow: 2}},
		{name: "allow alone: a fixed delay with its background", args: []string{"10s", "--allow", "2"}, want: Request{Duration: 10 * time.Second, Allow: 2}},
		{name: "allow and nothing else: a fixed delay of zero", args: []string{"--allow", "2"}, want: Request{Allow: 2}},
		{name: "the last flag wins", args: []string{"--quiet", "1s", "--quiet", "500ms"}, want: Request{Adaptive: true, Quiet: 500 * time.Millisecond, Max: DefaultMax}},
		{name: "zero quiet", args: []string{"--quiet", "0"}, want: Request{Adaptive: true, Max: DefaultMax}},
		{name: "inf with flags", args: []string{"inf", "--quiet", "1s"}, want: Request{Infinite: true, Adaptive: true, Quiet: time.Second, Max: DefaultMax}},
		{name: "flag without value", args: []string{"5s", "--quiet"}, bad: true, invalid: "--quiet"},
		{name: "inf as a value", args: []string{"--max", "inf"}, bad: true, invalid: "inf"},
		{name: "help as a value", args: []string{"--max", "-h"}, bad: true, invalid: "-h"},
		{name: "bad value", args: []string{"--allow", "x"}, bad: true, invalid: "x"},
		{name: "flag as a value", args: []string{"--quiet", "--max", "1s"}, bad: true, invalid: "--max"},
		{name: "overflowing flag", args: []string{"--max", "9223372036854775807ns1ns"}, bad: true, invalid: "9223372036854775807ns1ns"},
		{name: "equals form is not a flag", args: []string{"--quiet=1s"}, bad: true, invalid: "--quiet=1s"},
		{name: "requests", args: []string{"--requests", "1s"}, want: Request{Adaptive: true, Quiet: DefaultQuiet, Max: DefaultMax, Requests: time.Second}},
		{name: "requests with the rest", args: []string{"2s", "--quiet", "1s", "--requests", "1.5", "--allow", "2"},
			want: Request{Duration: 2 * time.Second, Adaptive: true, Quiet: time.Second, Max: DefaultMax, Allow: 2, Requests: 1500 * time.Millisecond}},
		{name: "requests without value", args: []string{"--requests"}, bad: true, invalid: "--requests"},
		{name: "requests inf", args: []string{"--requests", "inf"}, bad: true, invalid: "inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.args)
			var bad *InvalidError
			switch {
			case tt.help:
				if !errors.Is(err, ErrHelp) {
					t.Fatalf("Parse(%q) = %+v, %v; want ErrHelp", tt.args, got, err)
				}
			case tt.bad:
				if !errors.As(err, &bad) || bad.Arg != tt.invalid {
					t.Fatalf("Parse(%q) = %+v, %v; want invalid %q", tt.args, got, err, tt.invalid)
				}
			default:
				if err != nil || got != tt.want {
					t.Fatalf("Parse(%q) = %+v, %v; want %+v", tt.args, got, err, tt.want)
				}
			}
		})
	}
}

// TestParseAgreesWithGo: where Go's time.ParseDuration reads an argument exactly (no
// fraction it would round through a float), nap reads the same duration.
func TestParseAgreesWithGo(t *testing.T) {
	for _, s := range []string{"1h", "2h45m", "1m30s", "500ms", "1s500ms", "3us", "7ns", "1.5s", "1.5h", "0.25m", "120m", "1h0m0s"} {
		want, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse([]string{s})
		if err != nil || got.Duration != want {
			t.Errorf("Parse(%q) = %v, %v; time.ParseDuration = %v", s, got.Duration, err, want)
		}
	}
}

// maxFuzzInput bounds fuzz inputs. The fuzzer grows inputs towards a megabyte, where the
// reference's exact big-integer arithmetic (quadratic in the digits) takes seconds and
// the run stalls; real arguments are short (the kernel caps one at 128 KiB), and long
// digit strings are covered by explicit cases.
const maxFuzzInput = 4096

// FuzzParse: Parse never panics, a valid result is in range, and arguments add up.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"10", "2.5", "1m30s", "inf", "-h", "1e3", "9223372036854775807ns", ".5", "0.00000000001666666666666666666667m"} {
		f.Add(s, "1s")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a)+len(b) > maxFuzzInput {
			t.Skip() // see maxFuzzInput
		}
		ra, errA := Parse([]string{a})
		rb, errB := Parse([]string{b})
		rab, errAB := Parse([]string{a, b})
		if errA == nil && ra.Duration < 0 {
			t.Fatalf("Parse(%q) = %v < 0", a, ra.Duration)
		}
		if errA != nil || errB != nil {
			return
		}
		sum := int64(ra.Duration) + int64(rb.Duration)
		overflow := sum < 0
		switch {
		case overflow && errAB == nil:
			t.Fatalf("Parse(%q, %q) = %v; want overflow", a, b, rab)
		case !overflow && (errAB != nil || rab.Duration != ra.Duration+rb.Duration || rab.Infinite != (ra.Infinite || rb.Infinite)):
			t.Fatalf("Parse(%q, %q) = %+v, %v; want the sum of %+v and %+v", a, b, rab, errAB, ra, rb)
		}
		if strings.ContainsAny(a, "eE+-") && a != "-h" && a != "--help" {
			t.Fatalf("Parse(%q) accepted a sign or exponent", a)
		}
	})
}

func TestPassiveOpens(t *testing.T) {
	linux := "Ip: Forwarding DefaultTTL\nIp: 1 64\nIcmpMsg: InType3\nIcmpMsg: 97\n" +
		"Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n" +
		"Tcp: 1 200 120000 -1 200703 38074 3771 12011 181 3901186 3958667 3647 0 13256 0\n" +
		"Udp: InDatagrams NoPorts\nUdp: 571 0\n"
	for _, tc := range []struct {
		name, text string
		n          uint64
		ok         bool
	}{
		{"linux", linux, 38074, true},
		{"first line", "Tcp: 1 2 3 -1 5 6 7", 6, true},
		{"ends at the field", "Tcp: 1 2 3 -1 5 42", 42, true},
		{"max conn first", "Tcp: -1 2 3 4 5 6\n", 6, true},
		{"wraps", "Tcp: 1 2 3 4 5 18446744073709551617\n", 1, true},
		{"no values line", "Tcp: RtoAlgorithm RtoMin\nUdp: 1 2\n", 0, false},
		{"no Tcp", "Ip: 1 2 3 4 5 6\n", 0, false},
		{"too few fields", "Tcp: 1 2 3\n", 0, false},
		{"not a number", "Tcp: 1 2 3 4 5 x\n", 0, false},
		{"empty", "", 0, false},
		{"not at a line start", "xTcp: 1 2 3 4 5 6\n", 0, false},
		{"the text ends at a NUL", "Tcp: 1 2 3 4 5\x006\n", 0, false},
		{"digits end at a NUL", "Tcp: 1 2 3 4 5 67\x008\n", 67, true},
		{"spaces are counted past the line", "Tcp: 1 2\n3 4 5 6 7\n", 7, true},
	} {
		n, ok := PassiveOpens([]byte(tc.text))
		if n != tc.n || ok != tc.ok {
			t.Errorf("%s: PassiveOpens = %d, %v; want %d, %v", tc.name, n, ok, tc.n, tc.ok)
		}
	}
}

// FuzzPassiveOpens: never panics, and agrees with a reading of the text by fields
// wherever the values line is well formed.
func FuzzPassiveOpens(f *testing.F) {
	f.Add([]byte("Tcp: 1 200 120000 -1 200703 38074 3771\n"))
	f.Add([]byte("Tcp: a b\nTcp: 1 2 3 4 5 6\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		n, ok := PassiveOpens(text)
		str, _, _ := strings.Cut(string(text), "\x00")
		for _, line := range strings.Split(str, "\n") {
			v, found := strings.CutPrefix(line, "Tcp: ")
			if !found || v == "" || !(v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
				continue
			}
			f := strings.Split(v, " ")
			if len(f) >= 6 && f[5] != "" && len(f[5]) < 19 && strings.Trim(f[5], "0123456789") == "" {
				if want, _ := strconv.ParseUint(f[5], 10, 64); !ok || n != want {
					t.Fatalf("PassiveOpens(%q) = %d, %v; the sixth field is %q", text, n, ok, f[5])
				}
			}
			break
		}
	})
}

func TestParseLive(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name, text string
		want       Request
		ok         bool
	}{
		{"adaptive", "wait/v1 4000 2000 23000 1000\n", Request{Duration: ms(4000), Quiet: ms(2000), Max: ms(23000), Requests: ms(1000), Adaptive: true}, true},
		{"fixed: MAX 0", "wait/v1 10000 2000 0 1000\n", Request{Duration: ms(10000), Quiet: ms(2000), Requests: ms(1000)}, true},
		{"no newline", "wait/v1 1 2 3 4", Request{Duration: ms(1), Quiet: ms(2), Max: ms(3), Requests: ms(4), Adaptive: true}, true},
		{"up to the first NUL", "wait/v1 1 2 3 4\x00garbage", Request{Duration: ms(1), Quiet: ms(2), Max: ms(3), Requests: ms(4), Adaptive: true}, true},
		{"a second line is not read", "wait/v1 0 0 0 0\nwait/v1 9 9 9 9\n", Request{}, true},
		{"nine digits", "wait/v1 999999999 0 0 000000001\n", Request{Duration: ms(999999999), Requests: ms(1)}, true},
		{"ten digits", "wait/v1 1000000000 0 0 0\n", Request{}, false},
		{"three fields", "wait/v1 1 2 3\n", Request{}, false},
		{"five fields", "wait/v1 1 2 3 4 5\n", Request{}, false},
		{"an empty field", "wait/v1 1  3 4\n", Request{}, false},
		{"a unit", "wait/v1 1s 2 3 4\n", Request{}, false},
		{"a sign", "wait/v1 +1 2 3 4\n", Request{}, false},
		{"another version", "wait/v2 1 2 3 4\n", Request{}, false},
		{"no head", "1 2 3 4\n", Request{}, false},
		{"a carriage return", "wait/v1 1 2 3 4\r\n", Request{}, false},
		{"a trailing space", "wait/v1 1 2 3 4 \n", Request{}, false},
		{"empty", "", Request{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseLive([]byte(tc.text))
			if got != tc.want || ok != tc.ok {
				t.Errorf("ParseLive(%q) = %+v, %v; want %+v, %v", tc.text, got, ok, tc.want, tc.ok)
			}
			if !ok {
				return
			}
			if line, lok := LiveLine(got); !lok || !strings.HasPrefix(tc.text, strings.TrimSuffix(line, "\n")) && tc.name != "nine digits" {
				t.Errorf("LiveLine(%+v) = %q, %v: not the line read", got, line, lok)
			}
		})
	}
}

func TestLiveLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Request
		want string
		ok   bool
	}{
		{"adaptive", Request{Duration: 4 * time.Second, Quiet: 2 * time.Second, Max: 23 * time.Second, Requests: time.Second, Allow: 3, Adaptive: true}, "wait/v1 4000 2000 23000 1000\n", true},
		{"fixed: MAX 0 whatever Max says", Request{Duration: 10 * time.Second, Max: time.Minute}, "wait/v1 10000 0 0 0\n", true},
		{"down to whole milliseconds", Request{Duration: 1999 * time.Microsecond, Adaptive: true, Max: time.Second}, "wait/v1 1 0 1000 0\n", true},
		{"too long", Request{Duration: 1000000 * time.Second}, "", false},
		{"inf", Request{Infinite: true}, "", false},
	} {
		got, ok := LiveLine(tc.r)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: LiveLine = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// TestRaise: the wait Raise gives never ends before either: the larger of each duration,
// adaptive when either is, the arguments' ALLOW.
func TestRaise(t *testing.T) {
	s := func(n int) time.Duration { return time.Duration(n) * time.Second }
	args := func(a ...string) Request {
		r, err := Parse(a)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	live := func(text string) Request {
		r, ok := ParseLive([]byte(text))
		if !ok {
			t.Fatalf("%q: not a live wait", text)
		}
		return r
	}
	for _, tc := range []struct {
		name string
		r, l Request
		want Request
	}{
		{"a fixed delay becomes the live adaptive wait, never shorter", args("10", "--allow", "3", "--live"), live("wait/v1 4000 2000 23000 1000"),
			Request{Duration: s(10), Quiet: s(2), Max: s(23), Requests: s(1), Allow: 3, Adaptive: true, Live: true}},
		{"an adaptive wait gains the request signal", args("--quiet", "2s", "--max", "60s", "--allow", "3"), live("wait/v1 0 2000 23000 1000"),
			Request{Quiet: s(2), Max: s(60), Requests: s(1), Allow: 3, Adaptive: true}},
		{"a shorter live wait changes nothing", args("--quiet", "3s", "--max", "60s", "5s"), live("wait/v1 4000 2000 23000 0"),
			Request{Duration: s(5), Quiet: s(3), Max: s(60), Adaptive: true}},
		{"two fixed delays: the longer", args("5s"), live("wait/v1 7000 2000 0 1000"),
			Request{Duration: s(7), Quiet: s(2), Requests: s(1)}},
		{"inf stays inf", args("inf"), live("wait/v1 7000 2000 9000 1000"), Request{Infinite: true}},
	} {
		if got := tc.r.Raise(tc.l); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func FuzzParseLive(f *testing.F) {
	for _, s := range []string{"wait/v1 4000 2000 23000 1000\n", "wait/v1 0 0 0 0", "wait/v1 1000000000 0 0 0", "wait/v1 1 2 3\n", "wait/v1 1 2 3 4\x00x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		r, ok := ParseLive(text)
		if !ok {
			return
		}
		// What it read is a line LiveLine writes back the same, up to leading zeros.
		line, lok := LiveLine(r)
		if !lok {
			t.Fatalf("%q read as %+v, which has no line", text, r)
		}
		back, bok := ParseLive([]byte(line))
		if !bok || back != r {
			t.Fatalf("%q read as %+v; its line %q reads as %+v, %v", text, r, line, back, bok)
		}
		if r.Adaptive != (r.Max > 0) || r.Allow != 0 || r.Infinite || r.Live {
			t.Fatalf("%q read as %+v", text, r)
		}
	})
}
