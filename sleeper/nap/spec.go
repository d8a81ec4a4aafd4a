package nap

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"math/big"
	"strconv"
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
	Usage         = "usage: nap [DURATION]... [--quiet QUIET] [--max MAX] [--allow N] [--requests WITHIN] [--live]\n"
	InvalidPrefix = `nap: invalid duration "`
	InvalidSuffix = "\"\nnap: sleeping the default 10s\n"
	// Refused is printed each time the kernel refuses a way to sleep (see the package
	// documentation); only the tiny binaries make those calls themselves.
	Refused = "nap: sleep call refused\n"
	// Unreadable is printed when an adaptive wait cannot read SnmpPath: it then waits
	// its longest (MAX) and exits ExitUnreadable.
	Unreadable = "nap: cannot read /proc/net/snmp; waiting --max\n"
	// UnreadableSockets is printed when an adaptive wait cannot read the sockets of its
	// network namespace (NETLINK_SOCK_DIAG; see ReadSockets): it too then waits MAX and
	// exits ExitUnreadable.
	UnreadableSockets = "nap: cannot read the pod's sockets; waiting --max\n"
	// LiveMissing is printed when --live finds no live wait it can read at LivePath:
	// the wait is then the arguments' (see "The live wait" in the package
	// documentation).
	LiveMissing = "nap: cannot read " + LivePath + "; waiting as the arguments say\n"
)

// The adaptive wait (see the package documentation).
const (
	// SnmpPath is the kernel's TCP counters of the network namespace nap runs in: the
	// pod's, for a preStop hook.
	SnmpPath = "/proc/net/snmp"
	// SnmpRead is the most one read of SnmpPath asks for, the only read: the kernel
	// gives the whole table (about 1.2 KiB) at once, the Tcp lines in its first few
	// hundred bytes (after Ip, Icmp and IcmpMsg).
	SnmpRead = 4096
	// PollInterval is how often the adaptive wait reads SnmpPath.
	PollInterval = 100 * time.Millisecond
	// The flags' defaults, when one of them makes the wait adaptive.
	DefaultQuiet = 2 * time.Second
	DefaultMax   = 60 * time.Second
	DefaultAllow = 0
	// ExitUnreadable is the exit status of an adaptive wait that could not read
	// SnmpPath and waited MAX: non-zero, so that the kubelet reports the hook, with the
	// message, as failed (it did wait).
	ExitUnreadable = 3
)

// The flags of the adaptive wait, each followed by its value as the next argument.
const (
	FlagQuiet = "--quiet"
	FlagMax   = "--max"
	// FlagAllow sets the background of either wait; it alone does not make the wait
	// adaptive.
	FlagAllow = "--allow"
	// FlagRequests turns the request signal on (see the package documentation).
	FlagRequests = "--requests"
	// FlagLive takes no value: nap reads the live wait at LivePath when it starts and
	// waits at least as long as both it and the arguments say.
	FlagLive = "--live"
)

// The live wait (see the package documentation): what the cluster says the pod's wait
// is when its hook starts, a line the controller keeps for the pod's workload.
const (
	// LivePath is where --live reads it: a file of nap's volume, which the kubelet keeps
	// current in running pods.
	LivePath = "/nap/wait"
	// LiveRead is the most one read of LivePath asks for, the only read.
	LiveRead = 64
	// LiveHead begins the line; its four fields follow, each a space and at most
	// LiveDigits decimal digits.
	LiveHead   = "wait/v1"
	LiveDigits = 9
)

// ExitCannotSleep is the exit status when every way to sleep was refused.
const ExitCannotSleep = 1

// ExitInvalid is the exit status after an invalid argument (and the default sleep).
const ExitInvalid = 2

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
	// Duration is the sum of the finite DURATIONs: Default when there are no arguments
	// at all; 0 when there are only flags. In an adaptive wait it is MIN.
	Duration time.Duration
	Infinite bool // inf or infinity was given: sleep until a signal
	// Adaptive: --quiet, --max or --requests was given; Quiet and Max are then set, to
	// the flags' values or their defaults.
	Adaptive bool
	Quiet    time.Duration
	Max      time.Duration
	// Allow is N, the background (--allow), of either wait: DefaultAllow unless given.
	Allow int64
	// Requests is WITHIN, the request signal's window: 0 (off) unless --requests gives
	// it.
	Requests time.Duration
	// Live: --live was given (and no invalid argument): read the live wait at the start.
	Live bool
}

// Parse reads nap's arguments left to right (see the package documentation).
func Parse(args []string) (Request, error) {
	if len(args) == 0 {
		return Request{Duration: Default}, nil
	}
	var r Request
	// The sum the DURATIONs add to (MIN), and the flags' values (the last given wins).
	var total, quiet, maxWait, allow, requests int64
	flags := map[string]*int64{FlagQuiet: &quiet, FlagMax: &maxWait, FlagAllow: &allow, FlagRequests: &requests}
	given := map[string]bool{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		into := &total
		switch a {
		case "-h", "--help":
			return Request{}, ErrHelp
		case "inf", "infinity":
			r.Infinite = true
			continue
		case FlagLive:
			r.Live = true
			continue
		case FlagQuiet, FlagMax, FlagAllow, FlagRequests:
			given[a], into = true, flags[a]
			r.Adaptive = r.Adaptive || a != FlagAllow
			*into = 0
			if i+1 == len(args) {
				return Request{}, &InvalidError{Arg: a} // a flag with no value
			}
			i++
			a = args[i] // the value: a finite DURATION
		}
		ns, ok := parseArg(a)
		if !ok || ns > math.MaxInt64-*into {
			return Request{}, &InvalidError{Arg: a}
		}
		*into += ns
	}
	r.Duration = time.Duration(total)
	r.Allow = DefaultAllow
	if given[FlagAllow] {
		r.Allow = allow / int64(time.Second) // N, read as seconds: its whole part
	}
	if r.Adaptive {
		r.Quiet, r.Max = DefaultQuiet, DefaultMax
		if given[FlagQuiet] {
			r.Quiet = time.Duration(quiet)
		}
		if given[FlagMax] {
			r.Max = time.Duration(maxWait)
		}
		r.Requests = time.Duration(requests)
	}
	return r, nil
}

// ParseLive reads a live wait (see "The live wait" in the package documentation): the
// text up to its first NUL byte, LiveHead and four fields, MIN QUIET MAX WITHIN, each a
// space and 1 to LiveDigits decimal digits of milliseconds, then a newline or the end.
// The wait is adaptive when MAX is not 0, a fixed delay of MIN otherwise. It has no
// ALLOW: that is the arguments' (see Raise). ok is false for any other text.
func ParseLive(text []byte) (r Request, ok bool) {
	if i := bytes.IndexByte(text, 0); i >= 0 {
		text = text[:i]
	}
	rest, ok := bytes.CutPrefix(text, []byte(LiveHead))
	if !ok {
		return Request{}, false
	}
	var v [4]int64
	for i := range v {
		if len(rest) == 0 || rest[0] != ' ' {
			return Request{}, false
		}
		rest = rest[1:]
		n := 0
		for ; n < len(rest) && n <= LiveDigits && isDigit(rest[n]); n++ {
			v[i] = v[i]*10 + int64(rest[n]-'0')
		}
		if n == 0 || n > LiveDigits {
			return Request{}, false
		}
		rest = rest[n:]
	}
	if len(rest) > 0 && rest[0] != '\n' {
		return Request{}, false
	}
	ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
	return Request{Duration: ms(v[0]), Quiet: ms(v[1]), Max: ms(v[2]), Requests: ms(v[3]), Adaptive: v[2] > 0}, true
}

// LiveLine is the live wait that asks for r, as ParseLive reads it (newline included):
// what the controller writes. Durations go down to whole milliseconds; r's Allow is not
// written; a value over LiveDigits digits, or an infinite r, has no line.
func LiveLine(r Request) (string, bool) {
	maxWait := r.Max
	if !r.Adaptive {
		maxWait = 0
	}
	s := LiveHead
	for _, n := range []int64{int64(r.Duration / time.Millisecond), int64(r.Quiet / time.Millisecond), int64(maxWait / time.Millisecond), int64(r.Requests / time.Millisecond)} {
		d := strconv.FormatInt(n, 10)
		if n < 0 || len(d) > LiveDigits || r.Infinite {
			return "", false
		}
		s += " " + d
	}
	return s + "\n", true
}

// Raise is the wait that is at least as long as both r and the live wait l, whatever the
// traffic: MIN, QUIET, MAX and WITHIN the larger, adaptive when either is, ALLOW r's (the
// background of the pod's own probes, which its spec fixed when it was admitted). A
// fixed r brings no QUIET, MAX or WITHIN of its own (Parse leaves them 0); inf stays
// inf.
func (r Request) Raise(l Request) Request {
	if r.Infinite {
		return r
	}
	r.Duration = max(r.Duration, l.Duration)
	r.Adaptive = r.Adaptive || l.Adaptive
	r.Quiet, r.Max, r.Requests = max(r.Quiet, l.Quiet), max(r.Max, l.Max), max(r.Requests, l.Requests)
	return r
}

// Units are the units a term may carry, each with its length in nanoseconds; the
// binaries' word table is built from them.
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

// PassiveOpens reads the TCP counter PassiveOpens (connections this network namespace
// accepted) from the text of SnmpPath, up to its first NUL byte if it has one (the
// programs read it as a string). The values are on the first line that begins with
// "Tcp: " and a digit or a minus (the line before it names them). After "Tcp: ", it
// skips past five spaces (RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens); the counter
// is the decimal digits that follow, up to the first other byte, in unsigned 64-bit
// arithmetic that wraps. ok is false without such a line, with fewer than five spaces
// after it, or when no digit follows the fifth.
func PassiveOpens(text []byte) (n uint64, ok bool) {
	if i := bytes.IndexByte(text, 0); i >= 0 {
		text = text[:i]
	}
	head := []byte("Tcp: ")
	for off := 0; off < len(text); {
		line := text[off:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if v, found := bytes.CutPrefix(line, head); found && len(v) > 0 && (isDigit(v[0]) || v[0] == '-') {
			return sixthField(text[off+len(head):])
		}
		off += len(line)
	}
	return 0, false
}

func sixthField(text []byte) (n uint64, ok bool) {
	for range 5 {
		sp := bytes.IndexByte(text, ' ')
		if sp < 0 {
			return 0, false
		}
		text = text[sp+1:]
	}
	if len(text) == 0 || !isDigit(text[0]) {
		return 0, false
	}
	for _, c := range text {
		if !isDigit(c) {
			break
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
