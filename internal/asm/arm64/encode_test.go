package arm64

import (
	"encoding/hex"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"

	"github.com/nap-k8s/nap/internal/asm"
	"github.com/nap-k8s/nap/internal/testutil/golden"
)

func must(in asm.Inst, err error) asm.Inst {
	if err != nil {
		panic(err)
	}
	return in
}

// cases covers every encoder and operand form; testdata/arm64cases.txt holds their
// encodings as "hex|text" lines, and each must decode (arm64asm, GNU syntax) to its text.
var cases = []asm.Inst{
	must(MOVZ(X3, 8, 0)), must(MOVZ(X20, 0xe400, 0)), must(MOVZ(W1, 0x3b9a, 16)), must(MOVK(X1, 0x3b9a, 16)),
	must(MOVK(X20, 2, 32)), must(MOVN(X20, 0x8000, 48)), must(MOVN(W0, 0, 0)),
	must(MOV(X0, X4)), must(MOV(X2, XZR)), must(MOV(W1, W2)),
	must(ADDi(X1, SP, 0)), must(ADDi(X19, SP, 48)), must(ADDi(X12, X12, 2)), must(ADDi(X0, X0, 0x1000)),
	must(SUBi(X9, X9, 1)), must(SUBi(W1, W1, '0')), must(SUBi(SP, SP, 32)), must(SUBSi(X4, X4, 13)), must(SUBSi(W1, W1, '0')),
	must(CMPi(W1, '.')), must(CMPi(X1, 1)),
	must(ADD(X12, X12, X2)), must(ADDS(X15, X15, X1)), must(SUB(X2, X1, X22)), must(SUBS(X13, X13, X17)), must(CMP(X10, X22)), must(CMP(W3, W4)),
	must(MADD(W1, W1, W14, W7)), must(MSUB(X3, X2, X1, X20)), must(MUL(X15, X15, X6)), must(UMULH(X7, X15, X6)), must(SMULH(X7, X15, X6)),
	must(UDIV(X2, X20, X1)), must(UDIV(W7, W1, W6)), must(CSEL(X1, X2, X3, EQ)), must(CSINC(X1, X2, X3, NE)), must(CCMPi(W2, 0, 4, EQ)),
	must(LDRB(W13, X12, 0)), must(LDRB(W14, X12, 1)), must(LDRBpost(W1, X9, 1)), must(LDRBpre(W1, X11, -1)), must(LDURB(W1, X9, -1)),
	must(STRBpost(W3, X9, 1)), must(STRBpre(W8, X3, -1)),
	must(LDR(X1, SP, 32)), must(LDRpost(X22, X19, 8)), must(STP(X1, XZR, SP, -32, true)), must(STP(XZR, XZR, SP, 16, false)), must(STP(XZR, XZR, X1, 0, false)), must(LDRB(W29, X12, 1)), must(CSEL(X25, X20, X25, LO)),
	must(LDR(W12, X10, 0)), must(LDR(W4, X13, 56)), must(LDRH(W3, X10, 4)), must(LDRH(W3, X13, 0)), must(LDRH(W3, X10, 20)),
	must(STR(W2, X16, 0)), must(STR(W5, X16, 68)), must(STR(X1, SP, 8)), must(STRB(W2, X16, 19)), must(STRB(W0, X1, 0)),
	must(LDRBr(W4, X14, X3)), must(STRBr(W4, X14, X3)), must(ANDi(X3, X3, ^uint64(3))), must(ANDi(X1, X2, ^uint64(0xFFF))),
	must(RET()), must(SVC(0)), must(BRK(0)),
}

// The GNU syntax prints the zero offset and spacing a little differently.
var gnuNoise = regexp.MustCompile(`\s+|,#0x0\]`)

func TestEncodeCases(t *testing.T) {
	var lines []string
	for _, in := range cases {
		lines = append(lines, fmt.Sprintf("%x|%s", in.Bytes, in.Text))
	}
	got := strings.Join(lines, "\n") + "\n"
	const path = "testdata/arm64cases.txt"
	golden.Check(t, path, []byte(got)) // -update: check that the decoder agrees first
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
		h, text, _ := strings.Cut(line, "|")
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != 4 {
			t.Fatalf("%s: %v", line, err)
		}
		in, err := arm64asm.Decode(b)
		if err != nil {
			t.Errorf("%s: does not decode: %v", line, err)
			continue
		}
		if dec := arm64asm.GNUSyntax(in); gnuNoise.ReplaceAllString(dec, "") != gnuNoise.ReplaceAllString(text, "") {
			t.Errorf("%s: decodes as %q", line, dec)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string // what the error must say
	}{
		{name: "movz shift", err: second(MOVZ(X0, 1, 8)), want: "shift 8 is not 0, 16, 32 or 48"},
		{name: "movz sp", err: second(MOVZ(SP, 1, 0)), want: "sp is not allowed here"},
		{name: "mixed widths", err: second(ADD(X0, W1, X2)), want: "registers of different widths"},
		{name: "imm too large", err: second(ADDi(X0, X0, 0x1001)), want: "immediate 0x1001 does not fit 12 bits"},
		{name: "cmp with xzr base", err: second(CMPi(XZR, 1)), want: "register 31 is sp here"},
		{name: "ldrb into x", err: second(LDRB(X1, X2, 0)), want: "needs a W register and an offset of 0..4095"},
		{name: "ldrb offset", err: second(LDRB(W1, X2, 4096)), want: "needs a W register and an offset of 0..4095"},
		{name: "post-index same", err: second(LDRBpost(W1, X1, 1)), want: "needs a W register other than the base"},
		{name: "ldr misaligned", err: second(LDR(X1, SP, 4)), want: "a multiple of 8 up to 32760"},
		{name: "stp offset", err: second(STP(X1, X2, SP, 12, false)), want: "a multiple of 8 in -512..504"},
		{name: "umulh w", err: second(UMULH(W1, W2, W3)), want: "registers of different widths"},
		{name: "tbz bit", err: second(TBZ(W1, 40, "x")), want: "bit 40 out of range"},
		{name: "csel condition", err: second(CSEL(X0, X1, X2, Cond(16))), want: "condition code 16 out of range"},
		{name: "csinc condition", err: second(CSINC(W0, W1, W2, Cond(200))), want: "condition code 200 out of range"},
		{name: "ccmp condition", err: second(CCMPi(X0, 1, 0, Cond(17))), want: "condition code 17 out of range"},
		{name: "b.cond condition", err: second(Bcond(Cond(16), "x")), want: "condition code 16 out of range"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, c.err, c.want)
		}
	}
}

func second(_ asm.Inst, err error) error { return err }

// TestBranches: label-relative instructions encode their word distance, and report
// targets out of range with the program line.
func TestBranches(t *testing.T) {
	var b Builder
	b.Label("top")
	b.B("end")
	b.Bcond(NE, "top")
	b.CBZ(X1, "end")
	b.CBNZ(W2, "top")
	b.TBNZ(X15, 63, "end")
	b.TBZ(W3, 0, "top")
	b.BL("end")
	b.ADR(X1, "end")
	b.Label("end")
	obj, err := b.Assemble(0x1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range obj.Lines {
		if l.Label != "" {
			continue
		}
		in, err := arm64asm.Decode(l.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", l.Text, err)
		}
		dec := arm64asm.GNUSyntax(in)
		i := strings.Index(dec, ".+0x")
		if i < 0 {
			t.Fatalf("%s decodes as %q: no relative target", l.Text, dec)
		}
		var off uint64
		fmt.Sscanf(dec[i+2:], "0x%x", &off)
		target := l.Addr + off
		wantTarget := obj.Labels["end"]
		if strings.HasSuffix(l.Text, " top") {
			wantTarget = obj.Labels["top"]
		}
		if target != wantTarget {
			t.Errorf("%s: decodes as %q (to %#x), want %#x", l.Text, dec, target, wantTarget)
		}
	}

	var c Builder
	c.TBZ(W1, 0, "far")
	c.Data("pad", make([]byte, 40000))
	c.Label("far")
	if _, err := c.Assemble(0); err == nil || !strings.Contains(err.Error(), "encode_test.go:") {
		t.Errorf("tbz out of range: %v, want an error naming this file", err)
	}
}
