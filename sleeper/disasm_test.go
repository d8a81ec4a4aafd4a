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
	"github.com/nap-k8s/nap/sleeper/nap"
)

// The code runs from the label code to the end, after the data, in both programs.
const codeStart = "code"

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
	// negDisp32 is a displacement of 2^31 or more, printed as +0x...]
	negDisp32 = regexp.MustCompile(`\+0x[89a-f][0-9a-f]{7}\]`)
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
	// A negative 32-bit displacement, which x86asm prints as its unsigned pattern.
	text = negDisp32.ReplaceAllStringFunc(strings.ToLower(text), func(s string) string {
		u, _ := strconv.ParseUint(s[1:len(s)-1], 0, 32)
		return fmt.Sprintf("-%#x]", 1<<32-u)
	})
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
// system calls are exactly the expected native 64-bit ones. The one system call whose
// number is not a constant before it, at the label try, is each way to sleep in turn.
func TestDisassembly(t *testing.T) {
	wantCalls := map[string][]int64{
		"amd64": {amd64SysWrite, amd64SysPoll, amd64SysRtSigaction, amd64SysNanosleep, amd64SysClockNanosleep, amd64SysPpoll, amd64SysExitGroup,
			amd64SysOpenat, amd64SysRead, amd64SysClose, amd64SysSocket},
		"arm64": {arm64SysWrite, arm64SysPpoll, arm64SysExitGroup, arm64SysNanosleep, arm64SysClockNanosleep, arm64SysRtSigaction,
			arm64SysOpenat, arm64SysRead, arm64SysClose, arm64SysSocket},
	}
	sleepWays := map[string][]int64{
		"amd64": {amd64SysNanosleep, amd64SysClockNanosleep, amd64SysPpoll},
		"arm64": {arm64SysNanosleep, arm64SysClockNanosleep, arm64SysPpoll},
	}
	for _, arch := range nap.Arches {
		t.Run(arch, func(t *testing.T) {
			obj, err := Object(arch)
			if err != nil {
				t.Fatal(err)
			}
			start := obj.Labels[codeStart]
			var calls []int64
			var last int64 = -1 // arm64: the last immediate moved into x8
			var regs amd64Consts
			n := 0
			var label asm.Label
			// number is the system call's number, or the ways to sleep at try.
			number := func(addr uint64, nr int64) []int64 {
				if nr >= 0 {
					return []int64{nr}
				}
				if label == "try" {
					return sleepWays[arch]
				}
				t.Errorf("%#x: system call with no number set before it", addr)
				return nil
			}
			for _, line := range obj.Lines {
				if line.Label != "" {
					regs = amd64Consts{} // a label can be reached from anywhere
					label = line.Label
				}
				if line.Label != "" || line.Addr < start {
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
				case arch == "amd64":
					in, _ := x86asm.Decode(line.Bytes, 64)
					if nr, ok := regs.step(in); ok {
						calls = append(calls, number(line.Addr, nr)...)
					}
				case arch == "arm64" && strings.HasPrefix(line.Text, "mov x8, #"):
					last, _ = strconv.ParseInt(strings.TrimPrefix(line.Text, "mov x8, #"), 0, 64)
				case arch == "arm64" && (strings.Contains(line.Text, " x8,") || strings.Contains(line.Text, " w8,")):
					last = -1 // x8 from anything else: not a constant
				case d.op == "SYSCALL" || d.op == "SVC":
					calls = append(calls, number(line.Addr, last)...) // x8 is kept
				}
			}
			slices.Sort(calls)
			calls = slices.Compact(calls)
			want := slices.Clone(wantCalls[arch])
			slices.Sort(want)
			if !slices.Equal(calls, want) {
				t.Errorf("system calls %v, want %v", calls, want)
			}
			t.Logf("%s: %d instructions, %d code bytes, system calls %v", arch, n, obj.Base+uint64(len(obj.Code))-start, calls)
		})
	}
}

// amd64Consts follows constants in registers through straight-line x86-64 code: push
// imm then pop reg, mov reg, imm (for al: the program keeps the rest of rax 0 there),
// mov reg, reg and xor reg, reg. Any other write forgets the registers it may change.
type amd64Consts struct {
	known      map[string]int64 // by 64-bit register name
	pending    int64            // pushed immediate, for the next pop
	hasPending bool
}

// step takes one instruction; for a syscall it returns the number in rax (-1 if unknown).
func (c *amd64Consts) step(in x86asm.Inst) (nr int64, syscall bool) {
	if c.known == nil {
		c.known = map[string]int64{}
	}
	pending, hasPending := c.pending, c.hasPending
	c.hasPending = false
	reg := func(a x86asm.Arg) (string, bool) {
		r, ok := a.(x86asm.Reg)
		return family(r), ok
	}
	switch in.Op {
	case x86asm.SYSCALL:
		nr, ok := c.known["rax"]
		if !ok {
			nr = -1
		}
		for _, r := range []string{"rax", "rcx", "r11"} {
			delete(c.known, r)
		}
		return nr, true
	case x86asm.PUSH:
		if v, ok := in.Args[0].(x86asm.Imm); ok {
			c.pending, c.hasPending = int64(v), true
		}
		return 0, false
	case x86asm.POP:
		if r, _ := reg(in.Args[0]); hasPending {
			c.known[r] = pending
		} else {
			delete(c.known, r)
		}
		return 0, false
	case x86asm.XOR:
		if dst, ok := reg(in.Args[0]); ok {
			if src, ok := reg(in.Args[1]); ok && src == dst { // xor r, r: 0
				c.known[dst] = 0
				return 0, false
			}
		}
	case x86asm.MOV:
		if dst, ok := reg(in.Args[0]); ok {
			switch src := in.Args[1].(type) {
			case x86asm.Imm:
				c.known[dst] = int64(src)
				return 0, false
			case x86asm.Reg:
				if v, ok := c.known[family(src)]; ok {
					c.known[dst] = v
					return 0, false
				}
			}
		}
	}
	// Anything else: forget its register operands and the string instructions' and
	// division's implicit ones.
	for _, a := range in.Args {
		if r, ok := reg(a); ok {
			delete(c.known, r)
		}
	}
	for _, r := range []string{"rax", "rcx", "rdx", "rsi", "rdi"} {
		delete(c.known, r)
	}
	return 0, false
}

// family names the 64-bit register that r is part of (al, ah, eax: rax; r9d: r9).
func family(r x86asm.Reg) string {
	n := strings.ToLower(r.String())
	if strings.HasPrefix(n, "r") && len(n) > 1 && n[1] >= '0' && n[1] <= '9' {
		return strings.TrimRight(n, "bwdl")
	}
	switch n {
	case "al", "ah", "ax", "eax", "rax":
		return "rax"
	case "cl", "ch", "cx", "ecx", "rcx":
		return "rcx"
	case "dl", "dh", "dx", "edx", "rdx":
		return "rdx"
	case "bl", "bh", "bx", "ebx", "rbx":
		return "rbx"
	}
	n = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSuffix(n, "l"), "e"), "r")
	return "r" + n // si, di, sp, bp
}
