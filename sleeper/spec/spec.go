package spec

import (
	"errors"
	"maps"
	"math"
	"math/big"
	"strings"
	"syscall"
	"time"
)

// Arches are the architectures nap is made for, as Kubernetes names them
// (kubernetes.io/arch): one tiny binary each, the reference everywhere.
var Arches = []string{"amd64", "arm64"}

// Default is what nap sleeps with no argument, and after an invalid one.
const Default = 10 * time.Second

// The texts nap prints. The tiny binaries embed these same bytes: the invalid-input
// message is InvalidPrefix, the argument, InvalidSuffix.
const (
	Usage         = "usage: nap [DURATION]...\n"
	InvalidPrefix = `nap: invalid duration "`
	InvalidSuffix = "\"\nnap: sleeping the default 10s\n"
	// Refused is printed each time the kernel refuses a way to sleep (see the package
	// documentation); only the tiny binaries make those calls themselves.
	Refused = "nap: sleep call refused\n"
)

// ExitCannotSleep is the exit status when every way to sleep was refused.
const ExitCannotSleep = 1

// Signals are the signals that end nap with 128+signal: 1 to 15, less SIGKILL, which
// cannot be caught (and ends nap anyway).
var Signals = func() []syscall.Signal {
	var s []syscall.Signal
	for n := syscall.Signal(1); n <= syscall.SIGTERM; n++ {
		if n != syscall.SIGKILL {
			s = append(s, n)
		}
	}
	return s
}()

// ErrHelp is returned by Parse for -h or --help.
var ErrHelp = errors.New("help requested")

// InvalidError names the first argument nap could not read.
type InvalidError struct{ Arg string }

func (e *InvalidError) Error() string { return `invalid duration "` + e.Arg + `"` }

// Request is what the arguments ask for.
type Request struct {
	Duration time.Duration // sum of the finite arguments; Default when there are none
	Infinite bool          // inf or infinity was given: sleep until a signal
}

// Parse reads nap's arguments left to right (see the package documentation).
func Parse(args []string) (Request, error) {
	if len(args) == 0 {
		return Request{Duration: Default}, nil
	}
	var r Request
	var total int64
	for _, a := range args {
		switch a {
		case "-h", "--help":
			return Request{}, ErrHelp
		case "inf", "infinity":
			r.Infinite = true
			continue
		}
		ns, ok := parseArg(a)
		if !ok || ns > math.MaxInt64-total {
			return Request{}, &InvalidError{Arg: a}
		}
		total += ns
	}
	r.Duration = time.Duration(total)
	return r, nil
}

// unitNs maps each unit to its length in nanoseconds.
// Units are the units a term may carry, in nanoseconds; the binaries' word table is
// built from them.
func Units() map[string]int64 { return maps.Clone(unitNs) }

var unitNs = map[string]int64{
	"ns": 1,
	"us": int64(time.Microsecond),
	"ms": int64(time.Millisecond),
	"s":  int64(time.Second),
	"m":  int64(time.Minute),
	"h":  int64(time.Hour),
}

// parseArg reads one finite argument: a bare number of seconds, or number+unit terms.
func parseArg(s string) (int64, bool) {
	sum := new(big.Int)
	for first := true; first || s != ""; first = false {
		n := strings.IndexFunc(s, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
		if n < 0 {
			n = len(s)
		}
		num := s[:n]
		s = s[n:]
		u := strings.IndexFunc(s, func(r rune) bool { return r == '.' || (r >= '0' && r <= '9') })
		if u < 0 {
			u = len(s)
		}
		unit := s[:u]
		s = s[u:]
		if unit == "" && first && s == "" {
			unit = "s" // a bare number counts seconds
		}
		mult, ok := unitNs[unit]
		if !ok {
			return 0, false
		}
		ns, ok := termNs(num, mult)
		if !ok {
			return 0, false
		}
		sum.Add(sum, ns)
	}
	if !sum.IsInt64() {
		return 0, false
	}
	return sum.Int64(), true
}

// termNs is floor(num * mult) for a decimal num with at least one digit and at most one
// dot, computed exactly with big integers.
func termNs(num string, mult int64) (*big.Int, bool) {
	intPart, frac, _ := strings.Cut(num, ".")
	if intPart+frac == "" || strings.Contains(frac, ".") {
		return nil, false
	}
	v, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		return nil, false
	}
	v.Mul(v, big.NewInt(mult))
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	return v.Quo(v, scale), true // v >= 0, so Quo is floor
}
