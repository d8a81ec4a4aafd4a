package spec

import (
	"errors"
	"math"
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
