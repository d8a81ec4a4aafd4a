package sleeper

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nap-k8s/nap/internal/asm"
	napelf "github.com/nap-k8s/nap/internal/elf"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// The word table the binaries read, built from the specification (spec.go) so that they
// cannot disagree with it. After a number, the program matches the text against each
// entry in turn:
//
//	[n] [n bytes of the word] [k] [c]      ...      [0] [9] [1]
//
// A unit's word is its name (ns us ms s m h, two-letter names first so that ms wins over
// m); its length is c*10^k ns with c not a multiple of 10 (m: 6*10^10, h: 36*10^11), so
// that the programs scale by powers of ten and carry the digits below a nanosecond of
// m and h exactly (c*9+c-1 < 1029, see carryMul). The keywords inf, infinity (k = 0,
// c = 0), --live (k = 0, c = keywordLive) and -h, --help (k = 1) end in NUL: they must be the whole argument, as must the flags
// (k = 2 or 3, see flagAdaptive). The table ends with an
// empty word whose k and c are those of seconds: a number with no word after it is a
// bare number of seconds, which must also be the whole argument.
func wordTable() ([]byte, error) {
	unitNs := nap.Units()
	units := make([]string, 0, len(unitNs))
	for n := range unitNs {
		units = append(units, n)
	}
	slices.SortFunc(units, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return int(unitNs[a] - unitNs[b])
	})
	var b []byte
	add := func(word string, k, c int64) error {
		if len(word) > 255 || k > 255 || c > 255 {
			return fmt.Errorf("word %q (k=%d c=%d) does not fit a table entry", word, k, c)
		}
		b = append(b, byte(len(word)))
		b = append(b, word...)
		b = append(b, byte(k), byte(c))
		return nil
	}
	unit := func(word string, ns int64) error {
		c, k := ns, int64(0)
		for c%10 == 0 {
			c, k = c/10, k+1
		}
		if c*9+c-1 >= carryLimit {
			return fmt.Errorf("unit %q: c=%d is too large for the carry step", word, c)
		}
		return add(word, k, c)
	}
	for _, n := range units {
		if err := unit(n, unitNs[n]); err != nil {
			return nil, err
		}
	}
	for _, kw := range []struct {
		word string
		help int64
		live int64
	}{{"inf", 0, 0}, {"infinity", 0, 0}, {nap.FlagLive, 0, keywordLive}, {"-h", 1, 0}, {"--help", 1, 0}} {
		if err := add(kw.word+"\x00", kw.help, kw.live); err != nil {
			return nil, err
		}
	}
	// The flags, c the offset of the slot their value goes to: k = 2 for those that make
	// the wait adaptive, 3 for --allow, the background of either wait.
	for _, f := range []struct {
		flag string
		slot int64
	}{{nap.FlagQuiet, slotQuiet}, {nap.FlagMax, slotMax}, {nap.FlagAllow, slotAllow}, {nap.FlagRequests, slotRequests}} {
		k := int64(flagAdaptive)
		if f.flag == nap.FlagAllow {
			k = flagBackground
		}
		if err := add(f.flag+"\x00", k, f.slot); err != nil {
			return nil, err
		}
	}
	// The end: an empty word (length 0), whose k and c are those of seconds, for a bare
	// number.
	if err := unit("", unitNs["s"]); err != nil {
		return nil, err
	}
	return b, nil
}

// datum is one labelled run of data.
type datum struct {
	label asm.Label
	bytes []byte
}

// data lays out what both programs read, first in the file: the texts, the word table
// and extra (more data for one program). The first internal/elf.Free bytes double as
// PT_GNU_STACK's offset and addresses: the Refused text fills them exactly (its ASCII
// keeps p_offset positive). Its sizes and alignment, the next 24 bytes, stay zero. The
// code follows, at the label code, a multiple of pad bytes from the start.
func data(b interface {
	Label(asm.Label)
	Data(string, []byte)
}, words []byte, pad int, extra ...datum) {
	all := append([]datum{
		{"msg_refused", []byte(nap.Refused)},
		{"words", words},
		{"usage", []byte(nap.Usage)},
		{"msg_invalid", []byte(nap.InvalidPrefix)},
		{"msg_default", []byte(nap.InvalidSuffix)},
		{"msg_unreadable", []byte(nap.Unreadable)},
		{"msg_unreadable_sockets", []byte(nap.UnreadableSockets)},
		{"snmp_path", []byte(nap.SnmpPath + "\x00")},
		{"tcp_head", []byte(tcpHead)},
		{"live_path", []byte(nap.LivePath + "\x00")},
		{"live_head", []byte(nap.LiveHead + " ")}, // the first field's space too: arm64 reads 8 bytes at once
		{"msg_live_missing", []byte(nap.LiveMissing)},
	}, append(verdictTexts(), extra...)...)
	n := 0
	for _, d := range all {
		if end := napelf.Free + 24; n < end && n+len(d.bytes) > napelf.Free {
			b.Data("stack_sizes", make([]byte, end-n)) // PT_GNU_STACK's sizes and alignment
			n = end
		}
		b.Label(d.label)
		b.Data(string(d.label), d.bytes)
		n += len(d.bytes)
	}
	if n%pad != 0 {
		b.Data("align", make([]byte, pad-n%pad))
	}
	b.Label("code")
}

// verdictTexts are the texts of the verdict (nap.Verdict.Tail): the file's path (NUL
// ended), its head, then each kind and each field's " NAME=" with its length in the
// byte before it.
func verdictTexts() []datum {
	counted := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	d := []datum{
		{"verdict_path", []byte(nap.VerdictPath + "\x00")},
		{"verdict_head", []byte(nap.VerdictHead)},
		{"word_quiet", counted(" " + nap.Quiet)},
		{"word_late", counted(" " + nap.Late)},
		{"word_held", counted(" " + nap.Held)},
		{"word_blind", counted(" " + nap.Blind)},
	}
	for _, f := range nap.VerdictFields {
		d = append(d, datum{asm.Label("field_" + f), counted(" " + f + "=")})
	}
	for _, w := range []string{nap.WaitArgs, nap.WaitLive} {
		d = append(d, datum{asm.Label("wait_" + w), counted(" " + nap.WaitField + "=" + w)})
	}
	return d
}

// The k of a flag in the word table: one that makes the wait adaptive, and --allow.
const (
	flagAdaptive   = 2
	flagBackground = 3
)

// keywordLive is --live's c in the word table (inf's is 0), and the value of the live
// byte (see slotLive) once --live is read; liveRead is its value once the live wait is.
const (
	keywordLive = 1
	liveRead    = 2
	// liveFields are the fields of a live wait's line.
	liveFields = 4
)

// tcpHead begins the line of TCP counters in /proc/net/snmp (nap.PassiveOpens).
const tcpHead = "Tcp: "

// t/10 == (t*carryMul)>>carryShift for every t below carryLimit: the programs' carry
// step t = c*digit + carry stays below it (checked by wordTable and the tests).
const (
	carryMul   = 205
	carryShift = 11
	carryLimit = 1029
)

// listingLine renders one assembled line for golden files: address, bytes, text.
func listingLine(addr uint64, b []byte, text string) string {
	const width = 11
	var hex []string
	for i := 0; i < len(b); i += width {
		hex = append(hex, fmt.Sprintf("%x", b[i:min(i+width, len(b))]))
	}
	if len(hex) == 0 {
		hex = []string{""}
	}
	var s strings.Builder
	for i, h := range hex {
		t := ""
		if i == 0 {
			t = text
		}
		fmt.Fprintf(&s, "%08x  %-22s  %s\n", addr+uint64(i*width), h, t)
	}
	return s.String()
}
