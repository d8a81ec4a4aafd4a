package amd64

import (
	"fmt"
	"strings"

	"github.com/nap-k8s/nap/internal/asm"
)

// Operand is a register, a memory reference or an immediate.
type Operand interface {
	fmt.Stringer
	operand() // seals the interface
}

// Reg is a general-purpose register of a given width.
type Reg struct {
	num  uint8 // 0-15; 20-23 are ah, ch, dh, bh (4-7 without a REX prefix)
	bits uint8 // 8, 32 or 64
}

var regNames = map[uint8][16]string{
	64: {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"},
	32: {"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi", "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d"},
	8:  {"al", "cl", "dl", "bl", "spl", "bpl", "sil", "dil", "r8b", "r9b", "r10b", "r11b", "r12b", "r13b", "r14b", "r15b"},
}

// The registers.
var (
	RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI = Reg{0, 64}, Reg{1, 64}, Reg{2, 64}, Reg{3, 64}, Reg{4, 64}, Reg{5, 64}, Reg{6, 64}, Reg{7, 64}
	R8, R9, R10, R11, R12, R13, R14, R15   = Reg{8, 64}, Reg{9, 64}, Reg{10, 64}, Reg{11, 64}, Reg{12, 64}, Reg{13, 64}, Reg{14, 64}, Reg{15, 64}

	EAX, ECX, EDX, EBX, ESP, EBP, ESI, EDI       = Reg{0, 32}, Reg{1, 32}, Reg{2, 32}, Reg{3, 32}, Reg{4, 32}, Reg{5, 32}, Reg{6, 32}, Reg{7, 32}
	R8D, R9D, R10D, R11D, R12D, R13D, R14D, R15D = Reg{8, 32}, Reg{9, 32}, Reg{10, 32}, Reg{11, 32}, Reg{12, 32}, Reg{13, 32}, Reg{14, 32}, Reg{15, 32}

	AL, CL, DL, BL, SPL, BPL, SIL, DIL = Reg{0, 8}, Reg{1, 8}, Reg{2, 8}, Reg{3, 8}, Reg{4, 8}, Reg{5, 8}, Reg{6, 8}, Reg{7, 8}
	AH, CH, DH, BH                     = Reg{highByte | 4, 8}, Reg{highByte | 5, 8}, Reg{highByte | 6, 8}, Reg{highByte | 7, 8}
)

// highByte marks ah..bh: their number is that of spl..dil, encoded without REX.
const highByte = 16

func (r Reg) operand() {}

func (r Reg) high() bool { return r.num&highByte != 0 }

func (r Reg) String() string {
	if r.bits == 8 && r.high() {
		return [4]string{"ah", "ch", "dh", "bh"}[r.num&3]
	}
	names, ok := regNames[r.bits]
	if !ok || r.num > 15 {
		return fmt.Sprintf("reg(%d,%d)", r.num, r.bits)
	}
	return names[r.num]
}

// Bits is the register's width.
func (r Reg) Bits() int { return int(r.bits) }

// Mem is a memory operand: [Base+Index*Scale+Disp], or [rip+Label] when Label is set.
type Mem struct {
	Bits  uint8 // width of the access: 8, 16, 32 or 64
	Base  Reg
	Index Reg
	Scale uint8 // 0 when there is no index
	Disp  int32
	Label asm.Label
}

func (m Mem) operand() {}

// Byte is an 8-bit access at [base+disp].
func Byte(base Reg, disp int32) Mem { return Mem{Bits: 8, Base: base, Disp: disp} }

// Word is a 16-bit access at [base+disp] (MOVZX's source).
func Word(base Reg, disp int32) Mem { return Mem{Bits: 16, Base: base, Disp: disp} }

// Dword is a 32-bit access at [base+disp].
func Dword(base Reg, disp int32) Mem { return Mem{Bits: 32, Base: base, Disp: disp} }

// Qword is a 64-bit access at [base+disp].
func Qword(base Reg, disp int32) Mem { return Mem{Bits: 64, Base: base, Disp: disp} }

// ByteIndex is an 8-bit access at [base+index].
func ByteIndex(base, index Reg) Mem { return Mem{Bits: 8, Base: base, Index: index, Scale: 1} }

// RIP is a reference to a label, relative to the instruction pointer (for LEA).
func RIP(l asm.Label) Mem { return Mem{Bits: 64, Label: l} }

// RIPDisp is a reference to disp bytes after a label.
func RIPDisp(l asm.Label, disp int32) Mem { return Mem{Bits: 64, Label: l, Disp: disp} }

var ptrNames = map[uint8]string{8: "byte ptr ", 16: "word ptr ", 32: "dword ptr ", 64: "qword ptr "}

func (m Mem) String() string {
	if m.Label != "" {
		if m.Disp != 0 {
			return fmt.Sprintf("[rip+%s%+d]", m.Label, m.Disp)
		}
		return "[rip+" + string(m.Label) + "]"
	}
	var b strings.Builder
	b.WriteString(ptrNames[m.Bits])
	b.WriteString("[" + m.Base.String())
	if m.Scale != 0 {
		fmt.Fprintf(&b, "+%s*%d", m.Index, m.Scale)
	}
	switch {
	case m.Disp > 0:
		fmt.Fprintf(&b, "+%#x", m.Disp)
	case m.Disp < 0:
		fmt.Fprintf(&b, "-%#x", -int64(m.Disp))
	}
	b.WriteString("]")
	return b.String()
}

// Imm is an immediate value.
type Imm int64

func (i Imm) operand() {}

func (i Imm) String() string {
	if i < 0 {
		return fmt.Sprintf("-%#x", -int64(i))
	}
	return fmt.Sprintf("%#x", int64(i))
}

// Addr is the address of a label as a 32-bit immediate (MOV r32, PUSH): the program is
// mapped below 2 GiB, so an absolute address is 2 bytes shorter than a RIP-relative LEA.
type Addr asm.Label

func (a Addr) operand() {}

func (a Addr) String() string { return string(a) }

// Cond is a condition code, as in Jcc and CMOVcc.
type Cond uint8

// The condition codes, by their Intel names.
const (
	O Cond = iota
	NO
	B
	AE
	E
	NE
	BE
	A
	S
	NS
	P
	NP
	L
	GE
	LE
	G
)

var condNames = [16]string{"o", "no", "b", "nb", "z", "nz", "be", "nbe", "s", "ns", "p", "np", "l", "nl", "le", "nle"}

func (c Cond) String() string { return condNames[c&15] }
