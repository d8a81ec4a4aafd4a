package amd64

import (
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"github.com/nap-k8s/nap/internal/asm"
	"github.com/nap-k8s/nap/internal/testutil/golden"
)

func must(in asm.Inst, err error) asm.Inst {
	if err != nil {
		panic(err)
	}
	return in
}

// at resolves a label-address instruction with the label at 0x400123.
func at(in asm.Inst, err error) asm.Inst {
	in = must(in, err)
	b, err := in.Forms[0].Encode(0x400000, 0x400123)
	if err != nil {
		panic(err)
	}
	return asm.Inst{Text: strings.Replace(in.Text, string(in.Ref), "0x400123", 1), Bytes: b}
}

// cases covers every encoder and operand form; testdata/amd64cases.txt holds their
// encodings as "hex|text" lines, and each line must decode (x86asm) to its text.
var cases = []asm.Inst{
	must(MOV(RAX, RDI)), must(MOV(R14, RSI)), must(MOV(EDI, EBP)), must(MOV(AL, Byte(RSI, -1))),
	must(MOV(RSI, Qword(RBX, 0))), must(MOV(Qword(RSP, -32), RAX)), must(MOV(Qword(R12, 8), R13)),
	must(MOV(EAX, Imm(231))), must(MOV(R9D, Imm(1))), must(MOV(RAX, Imm(-1))), must(MOV(R12, Imm(10_000_000_000))),
	must(MOV(Byte(RBP, 0), Imm(7))), must(MOV(SIL, DIL)),
	must(MOVZX(ECX, Byte(RDI, 0))), must(MOVZX(R8D, Byte(RDX, 2))), must(MOVZX(EAX, Byte(R11, 0))), must(MOVZX(EDX, AL)),
	must(LEA(RBX, Qword(RSP, 40))), must(LEA(R15, Qword(RDI, -1))), must(LEA(EDI, Qword(RAX, 128))), must(LEA(RAX, Qword(R13, 0))),
	must(LEA(RAX, ByteIndex(RSI, RCX))),
	must(ADD(RBX, Imm(8))), must(ADD(RDI, RCX)), must(ADD(R12, RAX)), must(ADD(EAX, Imm(1000))), must(ADD(AL, Imm('0'))),
	must(SUB(AL, Imm('0'))), must(SUB(EDX, Imm('0'))), must(SUB(R8, RDI)), must(SUB(EDI, Imm(-128))),
	must(CMP(AL, Imm(9))), must(CMP(AL, Byte(RDX, 0))), must(CMP(Byte(RSI, -1), Imm(0))), must(CMP(Byte(R14, 0), Imm('-'))),
	must(CMP(RDI, R14)), must(CMP(Qword(RSP, 32), Imm(1))), must(CMP(RDX, Imm(5))),
	must(AND(EAX, Imm(0xFF))), must(OR(RCX, Imm(-1))), must(XOR(EAX, EAX)), must(XOR(R12D, R12D)),
	must(TEST(RSI, RSI)), must(TEST(AL, AL)), must(TEST(R13, R13)),
	must(IMUL(RAX, R9)), must(IMUL(EAX, R9D)), must(IMUL3(RDX, RDX, Imm(10))), must(IMUL3(ECX, EAX, Imm(205))),
	must(IMUL3(RAX, Qword(RSP, -16), Imm(1_000_000_000))),
	must(MUL(R9)), must(DIV(RCX)), must(NEG(RAX)), must(NOT(RCX)), must(INC(R13)), must(INC(ECX)), must(DEC(R8)), must(DEC(RSI)),
	must(SHL(RAX, Imm(3))), must(SHR(ECX, Imm(11))), must(BTS(EDI, Imm(0))), must(BTS(Dword(R15, -0x2000), EAX)), must(BT(Dword(R15, -0x2000), EAX)),
	must(BT(RAX, Imm(63))), must(MOVZX(EAX, Word(RSI, 0x14))), must(MOVZX(EBX, Word(RDX, 0))), must(MOV(ECX, Dword(RSI, 0))),
	must(CMP(Dword(RDX, 0x38), Imm(1000))), must(AND(Qword(R15, -0x2008), Imm(0))),
	must(AND(Mem{Bits: 64, Base: R15, Index: RCX, Scale: 8, Disp: -0x2008}, Imm(0))), must(CMOV(A, RBX, RAX)),
	must(CMOV(E, RDX, R13)), must(XCHG(RSI, RDI)),
	must(PUSH(RAX)), must(PUSH(R14)), must(PUSH(Imm(8))), must(PUSH(Imm(0x4002))), must(POP(R10)), must(POP(RBP)),
	must(MOV(AL, Imm(13))), at(MOV(ECX, Addr("l"))), at(PUSH(Addr("l"))), must(XCHG(RAX, R12)), must(XCHG(EDX, EAX)),
	must(SUB(BL, BH)), must(DEC(BL)), must(ADD(AH, Imm(1))), must(CDQ()), must(CWDE()), must(LODSW()),
	must(MOV(Byte(RSP, 4), Imm(4))), must(CMP(RAX, Imm(-11))),
	must(RET()), must(SYSCALL()), must(UD2()), must(LODSB()), must(SCASW()), must(REPE_CMPSB()), must(REPNE_SCASB()),
	must(STOSB()), must(STOSW()), must(REP_MOVSB()),
}

func TestEncodeCases(t *testing.T) {
	var lines []string
	for _, in := range cases {
		lines = append(lines, fmt.Sprintf("%x|%s", in.Bytes, in.Text))
	}
	got := strings.Join(lines, "\n") + "\n"
	const path = "testdata/amd64cases.txt"
	golden.Check(t, path, []byte(got)) // -update: check that the decoder agrees first
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		h, text, _ := strings.Cut(line, "|")
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		in, err := x86asm.Decode(b, 64)
		if err != nil {
			t.Errorf("%s: does not decode: %v", line, err)
			continue
		}
		if in.Len != len(b) {
			t.Errorf("%s: decodes as %d bytes", line, in.Len)
		}
		if dec := x86asm.IntelSyntax(in, 0, nil); !sameIntel(text, dec) {
			t.Errorf("%s: decodes as %q", line, dec)
		}
	}
}

// sameIntel compares our text with x86asm's, which writes negative immediates of
// push and 8-bit operations, and negative 32-bit displacements, as their two's
// complement.
func sameIntel(ours, theirs string) bool {
	if ours == theirs {
		return true
	}
	if m := negDisp32.FindStringSubmatch(ours); m != nil {
		if d, err := strconv.ParseUint(m[1], 16, 32); err == nil && d > 0x80 {
			ours = strings.Replace(ours, m[0], fmt.Sprintf("+%#x]", uint32(-int32(d))), 1)
			if ours == theirs {
				return true
			}
		}
	}
	for _, neg := range []struct{ ours, theirs string }{{"-0x1", "0xffffffff"}, {"-0x1", "0xffffffffffffffff"}, {"-0x80", "0xffffff80"}} {
		if strings.Replace(ours, neg.ours, neg.theirs, 1) == theirs {
			return true
		}
	}
	return false
}

// negDisp32 is a negative displacement in our text (x86asm writes one of disp32 unsigned).
var negDisp32 = regexp.MustCompile(`-0x([0-9a-f]+)\]`)

func TestEncodeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string // what the error must say
	}{
		{name: "mov of different widths", err: second(MOV(RAX, EDI)), want: "operand widths differ"},
		{name: "memory to memory", err: second(MOV(Qword(RAX, 0), Qword(RBX, 0))), want: "memory source needs a register destination"},
		{name: "immediate too large for a byte", err: second(CMP(AL, Imm(300))), want: "immediate 300 does not fit"},
		{name: "64-bit immediate into memory", err: second(MOV(Qword(RAX, 0), Imm(1<<40))), want: "immediate 1099511627776 does not fit"},
		{name: "8-bit address register", err: second(MOV(AL, Byte(AL, 0))), want: "addresses need 64-bit registers"},
		{name: "rsp as an index", err: second(LEA(RAX, Mem{Bits: 64, Base: RAX, Index: RSP, Scale: 1})), want: "bad index or scale"},
		{name: "bad scale", err: second(LEA(RAX, Mem{Bits: 64, Base: RAX, Index: RCX, Scale: 3})), want: "bad index or scale"},
		{name: "32-bit push", err: second(PUSH(EAX)), want: "needs a 64-bit register or a 32-bit immediate"},
		{name: "shift too far", err: second(SHR(ECX, Imm(32))), want: "a count below its width"},
		{name: "movzx from a qword", err: second(MOVZX(EAX, Qword(RSI, 0))), want: "a byte or word source"},
		{name: "bt of a word", err: second(BT(Word(RSI, 0), EAX)), want: "a 32- or 64-bit operand"},
		{name: "bts past the width", err: second(BTS(EAX, Imm(32))), want: "a bit below"},
		{name: "bt widths", err: second(BT(RAX, ECX)), want: "operand widths differ"},
		{name: "empty label", err: second(JMP("")), want: "empty label"},
		{name: "bh with a REX prefix", err: second(MOV(BH, SIL)), want: "cannot be used with a REX prefix"},
		{name: "ah with r8b's encoding", err: second(ADD(Byte(R8, 0), AH)), want: "cannot be used with a REX prefix"},
		{name: "label address into a 64-bit register", err: second(MOV(RCX, Addr("l"))), want: "a label address needs a 32-bit register"},
		{name: "bad condition", err: second(J(Cond(16), "l")), want: "bad condition"},
		{name: "cmov bad condition", err: second(CMOV(Cond(16), EAX, ECX)), want: "bad condition"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, c.err, c.want)
		}
	}
}

func second(_ asm.Inst, err error) error { return err }

// TestBranchRelaxation: a branch takes its short form when its label is near and its
// near form when it is not; rel8-only branches fail with the program line.
func TestBranchRelaxation(t *testing.T) {
	var b Builder
	b.Label("top")
	b.J(E, "near")
	b.JMP("far")
	b.Label("near")
	b.Data("pad", make([]byte, 200))
	b.Label("far")
	b.JMP("top")
	obj, err := b.Assemble(0x1000)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"", "7405", "e9c8000000", "", "", "", "e92cffffff"}
	for i, l := range obj.Lines {
		if i >= len(want) {
			break
		}
		if l.Label == "" && l.Text != "pad" && fmt.Sprintf("%x", l.Bytes) != want[i] {
			t.Errorf("line %d %q: %x, want %s", i, l.Text, l.Bytes, want[i])
		}
	}

	var c Builder
	c.Label("a")
	c.JRCXZ("b")
	c.Data("pad", make([]byte, 300))
	c.Label("b")
	_, err = c.Assemble(0)
	if err == nil || !strings.Contains(err.Error(), "encode_test.go:") || !strings.Contains(err.Error(), "rel8") {
		t.Errorf("out-of-range jrcxz: error %v, want one naming this file and rel8", err)
	}
}

func TestProgramErrorsNameTheLine(t *testing.T) {
	var b Builder
	b.MOV(RAX, EDI) // a width mismatch
	b.JMP("nowhere")
	b.Label("x")
	b.Label("x")
	_, err := b.Assemble(0)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"encode_test.go:", "mov rax, edi", "undefined label \"nowhere\"", "label defined twice"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
