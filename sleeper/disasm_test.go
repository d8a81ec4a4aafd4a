package sleeper

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"github.com/nap-k8s/nap/internal/asm"
)

// dataLabels start the data after the code, in both programs.
const firstData = "words"

// decoded is one instruction as golang.org/x/arch reads it back.
type decoded struct {
	text string
	len  int
	op   string
}

func decode(arch string, b []byte, pc uint64) (decoded, error) {
	if arch == "amd64" {
		in, err := x86asm.Decode(b, 64)
		if err != nil {
			return decoded{}, err
		}
		return decoded{text: x86asm.IntelSyntax(in, pc, nil), len: in.Len, op: in.Op.String()}, nil
	}
	in, err := arm64asm.Decode(b)
	if err != nil {
		return decoded{}, err
	}
	text := arm64asm.GNUSyntax(in)
	// Relative targets (.+0x...) become absolute, as the listing's labels are.
	text = regexp.MustCompile(`\.\+0x[0-9a-f]+`).ReplaceAllStringFunc(text, func(s string) string {
		off, _ := strconv.ParseUint(s[4:], 16, 64)
		return fmt.Sprintf("%#x", pc+off)
	})
	return decoded{text: text, len: 4, op: in.Op.String()}, nil
}

var (
	noise   = regexp.MustCompile(`(qword |dword |word |byte )?ptr | `)
	hexes   = regexp.MustCompile(`-?0x[0-9a-f]+`)
	numbers = regexp.MustCompile(`-?[0-9]+`)
)

// normal makes our text and the decoder's comparable: no spaces or size words, label
// names replaced by their address (RIP-relative ones by the displacement), numbers as
// 64-bit patterns.
func normal(text string, line asm.Line, labels map[asm.Label]uint64) string {
	for l, addr := range labels {
		name := regexp.QuoteMeta(string(l))
		rip := regexp.MustCompile(`rip\+` + name + `([+-]\d+)?\]`)
		text = rip.ReplaceAllStringFunc(text, func(s string) string {
			m := rip.FindStringSubmatch(s)
			d, _ := strconv.ParseInt(m[1], 10, 64)
			return fmt.Sprintf("rip+%#x]", int64(addr)+d-int64(line.Addr)-int64(len(line.Bytes)))
		})
		text = regexp.MustCompile(`\b`+name+`$`).ReplaceAllString(text, fmt.Sprintf("%#x", addr))
	}
	text = hexes.ReplaceAllStringFunc(strings.ToLower(text), func(s string) string {
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			u, _ := strconv.ParseUint(s, 0, 64)
			v = int64(u)
		}
		return strconv.FormatInt(v, 10)
	})
	return noise.ReplaceAllString(text, "")
}

// sameText allows an immediate printed as a negative number on one side and as its
// 8- or 32-bit pattern on the other (cmp al, -0x2 / cmp al, 0xfe).
func sameText(a, b string) bool {
	if a == b {
		return true
	}
	na, nb := numbers.FindAllString(a, -1), numbers.FindAllString(b, -1)
	if len(na) != len(nb) || numbers.ReplaceAllString(a, "#") != numbers.ReplaceAllString(b, "#") {
		return false
	}
	for i := range na {
		x, _ := strconv.ParseInt(na[i], 10, 64)
		y, _ := strconv.ParseInt(nb[i], 10, 64)
		if x != y && uint8(x) != uint8(y) && uint32(x) != uint32(y) || (x != y && x >= 0 && y >= 0) {
			return false
		}
	}
	return true
}

// TestDisassembly decodes every instruction of both programs with golang.org/x/arch: each
// decodes to our length and text, there is no int (the 32-bit system call gate), and the
// system calls are exactly the expected native 64-bit ones.
func TestDisassembly(t *testing.T) {
	wantCalls := map[string][]int64{
		"amd64": {amd64SysWrite, amd64SysRtSigaction, amd64SysPause, amd64SysNanosleep, amd64SysWritev, amd64SysExitGroup},
		"arm64": {arm64SysWrite, arm64SysWritev, arm64SysExitGroup, arm64SysNanosleep, arm64SysRtSigaction},
	}
	for _, arch := range Arches {
		t.Run(arch, func(t *testing.T) {
			obj, err := Object(arch)
			if err != nil {
				t.Fatal(err)
			}
			end := obj.Labels[firstData]
			var calls []int64
			var last int64 = -1 // the last immediate moved into the system call number register
			n := 0
			for i, line := range obj.Lines {
				if line.Label != "" || line.Addr >= end {
					continue
				}
				n++
				d, err := decode(arch, line.Bytes, line.Addr)
				if err != nil {
					t.Fatalf("%#x %x (%s): does not decode: %v", line.Addr, line.Bytes, line.Text, err)
				}
				if d.len != len(line.Bytes) {
					t.Errorf("%#x %s: decodes as %d bytes, encoded as %d", line.Addr, line.Text, d.len, len(line.Bytes))
				}
				if ours, theirs := normal(line.Text, line, obj.Labels), normal(d.text, line, nil); !sameText(ours, theirs) {
					t.Errorf("%#x %x: wrote %q, decodes as %q", line.Addr, line.Bytes, line.Text, d.text)
				}
				if strings.HasPrefix(d.op, "INT") {
					t.Errorf("%#x: %s: no int gate allowed", line.Addr, d.text)
				}
				switch {
				case arch == "amd64" && (strings.HasPrefix(line.Text, "mov eax, ") || strings.HasPrefix(line.Text, "push ") && i+1 < len(obj.Lines) && obj.Lines[i+1].Text == "pop rax"):
					last, _ = strconv.ParseInt(strings.Fields(line.Text)[len(strings.Fields(line.Text))-1], 0, 64)
				case arch == "arm64" && strings.HasPrefix(line.Text, "mov x8, #"):
					last, _ = strconv.ParseInt(strings.TrimPrefix(line.Text, "mov x8, #"), 0, 64)
				case d.op == "SYSCALL" || d.op == "SVC":
					if last < 0 {
						t.Errorf("%#x: system call with no number set before it", line.Addr)
					}
					calls = append(calls, last)
					if arch == "amd64" {
						last = -1 // rax returns the result; arm64 keeps x8
					}
				}
			}
			slices.Sort(calls)
			calls = slices.Compact(calls)
			want := slices.Clone(wantCalls[arch])
			slices.Sort(want)
			if !slices.Equal(calls, want) {
				t.Errorf("system calls %v, want %v", calls, want)
			}
			t.Logf("%s: %d instructions, %d code bytes, system calls %v", arch, n, end-obj.Base, calls)
		})
	}
}
