package amd64

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/nap-k8s/nap/internal/asm"
)

// modrm describes one ModRM-encoded instruction: [REX] opcode ModRM [SIB] [disp] [imm].
type modrm struct {
	w     bool   // REX.W: 64-bit operand size
	opc   []byte // opcode bytes
	reg   uint8  // the ModRM reg field: a register number or an opcode extension
	rm    Operand
	imm   []byte
	byte8 bool // 8-bit operands: registers 4-7 mean spl..dil and need a REX prefix
	regR  *Reg // the register in the reg field, if any (for REX.R and the 8-bit rule)
}

func text(mnemonic string, ops ...Operand) string {
	if len(ops) == 0 {
		return mnemonic
	}
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = o.String()
	}
	return mnemonic + " " + strings.Join(s, ", ")
}

func (e modrm) encode(txt string) (asm.Inst, error) {
	var rex byte
	if e.w {
		rex |= 0x48
	}
	if e.reg&8 != 0 {
		rex |= 0x44
	}
	if e.byte8 && e.regR != nil && e.regR.num >= 4 && e.regR.num < 8 {
		rex |= 0x40
	}
	var tail []byte // ModRM, SIB, displacement
	var label asm.Label
	var disp int32
	switch rm := e.rm.(type) {
	case Reg:
		if rm.num&8 != 0 {
			rex |= 0x41
		}
		if e.byte8 && rm.num >= 4 && rm.num < 8 {
			rex |= 0x40
		}
		tail = []byte{0xC0 | (e.reg&7)<<3 | rm.num&7}
	case Mem:
		if rm.Label != "" {
			label, disp = rm.Label, rm.Disp
			tail = []byte{(e.reg&7)<<3 | 5, 0, 0, 0, 0}
			break
		}
		if rm.Base.bits != 64 || (rm.Scale != 0 && rm.Index.bits != 64) {
			return asm.Inst{Text: txt}, errors.New("addresses need 64-bit registers")
		}
		if rm.Base.num&8 != 0 {
			rex |= 0x41
		}
		var mod byte
		switch {
		case rm.Disp == 0 && rm.Base.num&7 != 5: // [rbp] and [r13] have no disp-free form
			mod = 0
		case rm.Disp >= -128 && rm.Disp <= 127:
			mod = 1
		default:
			mod = 2
		}
		switch {
		case rm.Scale != 0:
			ss, ok := map[uint8]byte{1: 0, 2: 1, 4: 2, 8: 3}[rm.Scale]
			if !ok || rm.Index.num == 4 {
				return asm.Inst{Text: txt}, errors.New("bad index or scale")
			}
			if rm.Index.num&8 != 0 {
				rex |= 0x42
			}
			tail = []byte{mod<<6 | (e.reg&7)<<3 | 4, ss<<6 | (rm.Index.num&7)<<3 | rm.Base.num&7}
		case rm.Base.num&7 == 4: // [rsp] and [r12] need a SIB byte
			tail = []byte{mod<<6 | (e.reg&7)<<3 | 4, 0x24}
		default:
			tail = []byte{mod<<6 | (e.reg&7)<<3 | rm.Base.num&7}
		}
		switch mod {
		case 1:
			tail = append(tail, byte(int8(rm.Disp)))
		case 2:
			tail = binary.LittleEndian.AppendUint32(tail, uint32(rm.Disp))
		}
	default:
		return asm.Inst{Text: txt}, fmt.Errorf("operand %v is not a register or memory", e.rm)
	}
	if rm, ok := e.rm.(Reg); rex != 0 && (ok && rm.high() || e.regR != nil && e.regR.high()) {
		return asm.Inst{Text: txt}, errors.New("ah, ch, dh and bh cannot be used with a REX prefix")
	}
	var b []byte
	if rex != 0 {
		b = append(b, rex)
	}
	b = append(b, e.opc...)
	b = append(b, tail...)
	b = append(b, e.imm...)
	if label == "" {
		return asm.Inst{Text: txt, Bytes: b}, nil
	}
	// RIP-relative: the displacement counts from the end of the instruction.
	dispAt := len(b) - len(e.imm) - 4
	return asm.Inst{Text: txt, Ref: label, Forms: []asm.Form{{
		Size: len(b),
		Encode: func(pc, target uint64) ([]byte, error) {
			d := int64(target) + int64(disp) - int64(pc) - int64(len(b))
			if d != int64(int32(d)) {
				return nil, errors.New("label out of rel32 range")
			}
			out := append([]byte(nil), b...)
			binary.LittleEndian.PutUint32(out[dispAt:], uint32(int32(d)))
			return out, nil
		},
	}}}, nil
}

func width(o Operand) uint8 {
	switch o := o.(type) {
	case Reg:
		return o.bits
	case Mem:
		return o.Bits
	}
	return 0
}

func isRM(o Operand) bool {
	switch o.(type) {
	case Reg, Mem:
		return true
	}
	return false
}

func fitsInt8(v int64) bool  { return v >= -128 && v <= 127 }
func fitsInt32(v int64) bool { return v >= -1<<31 && v <= 1<<31-1 }

func imm32(v int64) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

// alu encodes the classic two-operand arithmetic group: ADD OR ADC SBB AND SUB XOR CMP.
func alu(name string, ext uint8, dst, src Operand) (asm.Inst, error) {
	txt := text(name, dst, src)
	w := width(dst)
	if !isRM(dst) || (w != 8 && w != 32 && w != 64) {
		return asm.Inst{Text: txt}, errors.New("destination must be an 8-, 32- or 64-bit register or memory")
	}
	e := modrm{w: w == 64, rm: dst, byte8: w == 8}
	switch s := src.(type) {
	case Imm:
		if dst == AL && (fitsInt8(int64(s)) || (s >= 0 && s <= 255)) { // the short AL form
			return asm.Fixed(txt, ext<<3|4, byte(s)), nil
		}
		switch {
		case w == 8 && (fitsInt8(int64(s)) || (s >= 0 && s <= 255)):
			e.opc, e.reg, e.imm = []byte{0x80}, ext, []byte{byte(s)}
		case w != 8 && fitsInt8(int64(s)):
			e.opc, e.reg, e.imm = []byte{0x83}, ext, []byte{byte(s)}
		case w != 8 && fitsInt32(int64(s)):
			e.opc, e.reg, e.imm = []byte{0x81}, ext, imm32(int64(s))
		default:
			return asm.Inst{Text: txt}, fmt.Errorf("immediate %d does not fit", s)
		}
	case Reg:
		if s.bits != w {
			return asm.Inst{Text: txt}, errors.New("operand widths differ")
		}
		op := ext<<3 | 1
		if w == 8 {
			op = ext << 3
		}
		e.opc, e.reg, e.regR = []byte{op}, s.num, &s
	case Mem:
		d, ok := dst.(Reg)
		if !ok || s.Bits != w {
			return asm.Inst{Text: txt}, errors.New("memory source needs a register destination of the same width")
		}
		op := ext<<3 | 3
		if w == 8 {
			op = ext<<3 | 2
		}
		e = modrm{w: w == 64, opc: []byte{op}, reg: d.num, regR: &d, rm: s, byte8: w == 8}
	default:
		return asm.Inst{Text: txt}, errors.New("bad source operand")
	}
	return e.encode(txt)
}

// ADD dst, src.
func ADD(dst, src Operand) (asm.Inst, error) { return alu("add", 0, dst, src) }

// OR dst, src.
func OR(dst, src Operand) (asm.Inst, error) { return alu("or", 1, dst, src) }

// AND dst, src.
func AND(dst, src Operand) (asm.Inst, error) { return alu("and", 4, dst, src) }

// SUB dst, src.
func SUB(dst, src Operand) (asm.Inst, error) { return alu("sub", 5, dst, src) }

// XOR dst, src.
func XOR(dst, src Operand) (asm.Inst, error) { return alu("xor", 6, dst, src) }

// CMP a, b compares a with b.
func CMP(a, b Operand) (asm.Inst, error) { return alu("cmp", 7, a, b) }

// TEST a, b sets the flags of a AND b.
func TEST(a Operand, b Reg) (asm.Inst, error) {
	txt := text("test", a, b)
	w := width(a)
	if !isRM(a) || w != b.bits {
		return asm.Inst{Text: txt}, errors.New("operands must be a register or memory and a register of the same width")
	}
	op := byte(0x85)
	if w == 8 {
		op = 0x84
	}
	return modrm{w: w == 64, opc: []byte{op}, reg: b.num, regR: &b, rm: a, byte8: w == 8}.encode(txt)
}

// MOV dst, src: register, memory or immediate source.
func MOV(dst, src Operand) (asm.Inst, error) {
	txt := text("mov", dst, src)
	w := width(dst)
	if !isRM(dst) {
		return asm.Inst{Text: txt}, errors.New("destination must be a register or memory")
	}
	switch s := src.(type) {
	case Addr:
		d, ok := dst.(Reg)
		if !ok || w != 32 {
			return asm.Inst{Text: txt}, errors.New("a label address needs a 32-bit register")
		}
		var op []byte
		if d.num&8 != 0 {
			op = append(op, 0x41)
		}
		return absolute(txt, asm.Label(s), append(op, 0xB8+d.num&7))
	case Imm:
		d, isReg := dst.(Reg)
		switch {
		case isReg && w == 8 && d.num < 4 && (fitsInt8(int64(s)) || (s >= 0 && s <= 255)): // B0+r ib
			return asm.Fixed(txt, 0xB0+d.num, byte(s)), nil
		case isReg && w == 32 && (fitsInt32(int64(s)) || (s >= 0 && s <= 1<<32-1)):
			b := []byte{0xB8 + d.num&7}
			if d.num&8 != 0 {
				b = append([]byte{0x41}, b...)
			}
			return asm.Fixed(txt, append(b, imm32(int64(s))...)...), nil
		case isReg && w == 64 && !fitsInt32(int64(s)):
			b := []byte{0x48 | d.num>>3, 0xB8 + d.num&7}
			return asm.Fixed(txt, binary.LittleEndian.AppendUint64(b, uint64(s))...), nil
		case (w == 64 || w == 32) && fitsInt32(int64(s)):
			return modrm{w: w == 64, opc: []byte{0xC7}, rm: dst, imm: imm32(int64(s))}.encode(txt)
		case w == 8 && (fitsInt8(int64(s)) || (s >= 0 && s <= 255)):
			return modrm{opc: []byte{0xC6}, rm: dst, imm: []byte{byte(s)}, byte8: true}.encode(txt)
		}
		return asm.Inst{Text: txt}, fmt.Errorf("immediate %d does not fit", s)
	case Reg:
		if s.bits != w {
			return asm.Inst{Text: txt}, errors.New("operand widths differ")
		}
		op := byte(0x89)
		if w == 8 {
			op = 0x88
		}
		return modrm{w: w == 64, opc: []byte{op}, reg: s.num, regR: &s, rm: dst, byte8: w == 8}.encode(txt)
	case Mem:
		d, ok := dst.(Reg)
		if !ok || s.Bits != w {
			return asm.Inst{Text: txt}, errors.New("memory source needs a register destination of the same width")
		}
		op := byte(0x8B)
		if w == 8 {
			op = 0x8A
		}
		return modrm{w: w == 64, opc: []byte{op}, reg: d.num, regR: &d, rm: s, byte8: w == 8}.encode(txt)
	}
	return asm.Inst{Text: txt}, errors.New("bad source operand")
}

// absolute encodes op followed by the 32-bit address of l.
func absolute(txt string, l asm.Label, op []byte) (asm.Inst, error) {
	if l == "" {
		return asm.Inst{Text: txt}, errors.New("empty label")
	}
	return asm.Inst{Text: txt, Ref: l, Forms: []asm.Form{{
		Size: len(op) + 4,
		Encode: func(_, target uint64) ([]byte, error) {
			if target >= 1<<31 {
				return nil, fmt.Errorf("address %#x does not fit a sign-extended imm32", target)
			}
			return append(append([]byte(nil), op...), imm32(int64(target))...), nil
		},
	}}}, nil
}

// MOVZX dst, src zero-extends a byte into a 32- or 64-bit register.
func MOVZX(dst Reg, src Operand) (asm.Inst, error) {
	txt := text("movzx", dst, src)
	w := width(src)
	if dst.bits < 32 || (w != 8 && w != 16) || !isRM(src) {
		return asm.Inst{Text: txt}, errors.New("needs a 32- or 64-bit register and a byte or word source")
	}
	if w == 16 {
		return modrm{w: dst.bits == 64, opc: []byte{0x0F, 0xB7}, reg: dst.num, rm: src}.encode(txt)
	}
	return modrm{w: dst.bits == 64, opc: []byte{0x0F, 0xB6}, reg: dst.num, rm: src, byte8: true}.encode(txt)
}

// LEA dst, src loads the address of a memory operand (or of a label, with RIP).
func LEA(dst Reg, src Mem) (asm.Inst, error) {
	txt := text("lea", dst, src)
	if src.Label == "" { // an address has no access size: "ptr [..]", as x86asm prints it
		s := src.String()
		txt = "lea " + dst.String() + ", ptr " + s[strings.Index(s, "["):]
	}
	if dst.bits < 32 {
		return asm.Inst{Text: txt}, errors.New("needs a 32- or 64-bit register")
	}
	return modrm{w: dst.bits == 64, opc: []byte{0x8D}, reg: dst.num, rm: src}.encode(txt)
}

// IMUL dst, src multiplies signed, setting OF when the product does not fit dst.
func IMUL(dst Reg, src Operand) (asm.Inst, error) {
	txt := text("imul", dst, src)
	if dst.bits < 32 || width(src) != dst.bits || !isRM(src) {
		return asm.Inst{Text: txt}, errors.New("needs 32- or 64-bit operands of one width")
	}
	return modrm{w: dst.bits == 64, opc: []byte{0x0F, 0xAF}, reg: dst.num, rm: src}.encode(txt)
}

// IMUL3 dst, src, imm multiplies src by an immediate into dst.
func IMUL3(dst Reg, src Operand, imm Imm) (asm.Inst, error) {
	txt := text("imul", dst, src, imm)
	if dst.bits < 32 || width(src) != dst.bits || !isRM(src) {
		return asm.Inst{Text: txt}, errors.New("needs 32- or 64-bit operands of one width")
	}
	if fitsInt8(int64(imm)) {
		return modrm{w: dst.bits == 64, opc: []byte{0x6B}, reg: dst.num, rm: src, imm: []byte{byte(imm)}}.encode(txt)
	}
	if !fitsInt32(int64(imm)) {
		return asm.Inst{Text: txt}, fmt.Errorf("immediate %d does not fit", imm)
	}
	return modrm{w: dst.bits == 64, opc: []byte{0x69}, reg: dst.num, rm: src, imm: imm32(int64(imm))}.encode(txt)
}

func unary(name string, opc byte, ext uint8, o Operand) (asm.Inst, error) {
	txt := text(name, o)
	w := width(o)
	if !isRM(o) || (w != 8 && w != 32 && w != 64) {
		return asm.Inst{Text: txt}, errors.New("needs an 8-, 32- or 64-bit register or memory")
	}
	if w == 8 {
		opc--
	}
	return modrm{w: w == 64, opc: []byte{opc}, reg: ext, rm: o, byte8: w == 8}.encode(txt)
}

// INC o.
func INC(o Operand) (asm.Inst, error) { return unary("inc", 0xFF, 0, o) }

// DEC o.
func DEC(o Operand) (asm.Inst, error) { return unary("dec", 0xFF, 1, o) }

// NOT o.
func NOT(o Operand) (asm.Inst, error) { return unary("not", 0xF7, 2, o) }

// MUL o multiplies rax by o, unsigned, into rdx:rax.
func MUL(o Operand) (asm.Inst, error) { return unary("mul", 0xF7, 4, o) }

// NEG o.
func NEG(o Operand) (asm.Inst, error) { return unary("neg", 0xF7, 3, o) }

// DIV o divides rdx:rax (edx:eax) by o, unsigned: quotient in rax, remainder in rdx.
func DIV(o Operand) (asm.Inst, error) { return unary("div", 0xF7, 6, o) }

// shift encodes SHL/SHR by an immediate count.
func shift(name string, ext uint8, o Operand, n Imm) (asm.Inst, error) {
	txt := text(name, o, n)
	w := width(o)
	if !isRM(o) || (w != 32 && w != 64) || n < 0 || int(n) >= int(w) {
		return asm.Inst{Text: txt}, errors.New("needs a 32- or 64-bit operand and a count below its width")
	}
	return modrm{w: w == 64, opc: []byte{0xC1}, reg: ext, rm: o, imm: []byte{byte(n)}}.encode(txt)
}

// BTS o, n sets bit n of o, leaving its old value in CF. n is an immediate below o's
// width, or a register: then o may be memory, a bit string that n indexes from o's
// address on (signed, past o's width).
func BTS(o, n Operand) (asm.Inst, error) { return bitTest("bts", 5, 0xAB, o, n) }

// BT o, n copies bit n of o to CF (n as for BTS).
func BT(o, n Operand) (asm.Inst, error) { return bitTest("bt", 4, 0xA3, o, n) }

// bitTest encodes the bit tests: 0F BA /ext ib with an immediate, 0F op /r with a register.
func bitTest(name string, ext, op byte, o, n Operand) (asm.Inst, error) {
	txt := text(name, o, n)
	w := width(o)
	if !isRM(o) || (w != 32 && w != 64) {
		return asm.Inst{Text: txt}, errors.New("needs a 32- or 64-bit operand")
	}
	switch n := n.(type) {
	case Imm:
		if n < 0 || int(n) >= int(w) {
			return asm.Inst{Text: txt}, errors.New("needs a bit below the operand's width")
		}
		return modrm{w: w == 64, opc: []byte{0x0F, 0xBA}, reg: ext, rm: o, imm: []byte{byte(n)}}.encode(txt)
	case Reg:
		if n.bits != w {
			return asm.Inst{Text: txt}, errors.New("operand widths differ")
		}
		return modrm{w: w == 64, opc: []byte{0x0F, op}, reg: n.num, regR: &n, rm: o}.encode(txt)
	}
	return asm.Inst{Text: txt}, errors.New("the bit must be an immediate or a register")
}

// CMOV dst, src moves when c holds.
func CMOV(c Cond, dst Reg, src Operand) (asm.Inst, error) {
	txt := text("cmov"+c.String(), dst, src)
	if c > G {
		return asm.Inst{Text: txt}, errors.New("bad condition")
	}
	if dst.bits < 32 || width(src) != dst.bits || !isRM(src) {
		return asm.Inst{Text: txt}, errors.New("needs 32- or 64-bit operands of one width")
	}
	return modrm{w: dst.bits == 64, opc: []byte{0x0F, 0x40 + byte(c)}, reg: dst.num, rm: src}.encode(txt)
}

// XCHG a, b exchanges two registers.
func XCHG(a, b Reg) (asm.Inst, error) {
	txt := text("xchg", a, b)
	if a.bits != b.bits || a.bits < 32 {
		return asm.Inst{Text: txt}, errors.New("needs two 32- or 64-bit registers of one width")
	}
	if a.num == 0 && b.num != 0 { // 90+r: one byte (plus REX), written as x86asm prints it
		a, b = b, a
	}
	if b.num == 0 && a.num != 0 {
		var rex byte
		if a.bits == 64 {
			rex |= 0x48
		}
		if a.num&8 != 0 {
			rex |= 0x41
		}
		txt = text("xchg", a, b)
		if rex != 0 {
			return asm.Fixed(txt, rex, 0x90+a.num&7), nil
		}
		return asm.Fixed(txt, 0x90+a.num&7), nil
	}
	return modrm{w: a.bits == 64, opc: []byte{0x87}, reg: b.num, rm: a}.encode(txt)
}

// SHL o, n.
func SHL(o Operand, n Imm) (asm.Inst, error) { return shift("shl", 4, o, n) }

// SHR o, n.
func SHR(o Operand, n Imm) (asm.Inst, error) { return shift("shr", 5, o, n) }

// PUSH a 64-bit register or a sign-extended immediate.
func PUSH(o Operand) (asm.Inst, error) {
	txt := text("push", o)
	switch o := o.(type) {
	case Reg:
		if o.bits != 64 {
			break
		}
		if o.num&8 != 0 {
			return asm.Fixed(txt, 0x41, 0x50+o.num&7), nil
		}
		return asm.Fixed(txt, 0x50+o.num), nil
	case Addr:
		return absolute(txt, asm.Label(o), []byte{0x68})
	case Imm:
		if fitsInt8(int64(o)) {
			return asm.Fixed(txt, 0x6A, byte(o)), nil
		}
		if fitsInt32(int64(o)) {
			return asm.Fixed(txt, append([]byte{0x68}, imm32(int64(o))...)...), nil
		}
	}
	return asm.Inst{Text: txt}, errors.New("needs a 64-bit register or a 32-bit immediate")
}

// POP a 64-bit register.
func POP(r Reg) (asm.Inst, error) {
	txt := text("pop", r)
	if r.bits != 64 {
		return asm.Inst{Text: txt}, errors.New("needs a 64-bit register")
	}
	if r.num&8 != 0 {
		return asm.Fixed(txt, 0x41, 0x58+r.num&7), nil
	}
	return asm.Fixed(txt, 0x58+r.num), nil
}

// branch makes a label-relative instruction with a rel8 form (nil if none) and a rel32 form.
func branch(txt string, l asm.Label, short, near []byte) (asm.Inst, error) {
	if l == "" {
		return asm.Inst{Text: txt}, errors.New("empty label")
	}
	form := func(op []byte, size int) asm.Form {
		return asm.Form{Size: len(op) + size, Encode: func(pc, target uint64) ([]byte, error) {
			d := int64(target) - int64(pc) - int64(len(op)+size)
			b := append([]byte(nil), op...)
			if size == 1 {
				if !fitsInt8(d) {
					return nil, errors.New("label out of rel8 range")
				}
				return append(b, byte(int8(d))), nil
			}
			if !fitsInt32(d) {
				return nil, errors.New("label out of rel32 range")
			}
			return append(b, imm32(d)...), nil
		}}
	}
	in := asm.Inst{Text: txt, Ref: l}
	if short != nil {
		in.Forms = append(in.Forms, form(short, 1))
	}
	if near != nil {
		in.Forms = append(in.Forms, form(near, 4))
	}
	return in, nil
}

// JMP l.
func JMP(l asm.Label) (asm.Inst, error) {
	return branch("jmp "+string(l), l, []byte{0xEB}, []byte{0xE9})
}

// J jumps to l when c holds (Jcc).
func J(c Cond, l asm.Label) (asm.Inst, error) {
	if c > G {
		return asm.Inst{Text: "j?"}, errors.New("bad condition")
	}
	return branch("j"+c.String()+" "+string(l), l, []byte{0x70 + byte(c)}, []byte{0x0F, 0x80 + byte(c)})
}

// JRCXZ jumps to l when rcx is zero (rel8 only).
func JRCXZ(l asm.Label) (asm.Inst, error) { return branch("jrcxz "+string(l), l, []byte{0xE3}, nil) }

// LOOP decrements rcx and jumps to l while it is not zero (rel8 only).
func LOOP(l asm.Label) (asm.Inst, error) { return branch("loop "+string(l), l, []byte{0xE2}, nil) }

// CALL l.
func CALL(l asm.Label) (asm.Inst, error) { return branch("call "+string(l), l, nil, []byte{0xE8}) }

// RET returns from a CALL.
func RET() (asm.Inst, error) { return asm.Fixed("ret", 0xC3), nil }

// SYSCALL enters the kernel: number in rax, arguments in rdi rsi rdx r10 r8 r9; it
// clobbers rcx and r11 and returns in rax.
func SYSCALL() (asm.Inst, error) { return asm.Fixed("syscall", 0x0F, 0x05), nil }

// UD2 raises an invalid-opcode exception: SIGILL, a trap nothing runs past.
func UD2() (asm.Inst, error) { return asm.Fixed("ud2", 0x0F, 0x0B), nil }

// CDQ sign-extends eax into edx (edx = 0 when eax is not negative).
func CDQ() (asm.Inst, error) { return asm.Fixed("cdq", 0x99), nil }

// CWDE sign-extends ax into eax (a 16-bit number below 0x8000 becomes itself).
func CWDE() (asm.Inst, error) { return asm.Fixed("cwde", 0x98), nil }

// LODSW loads the word at [rsi] into ax and advances rsi by 2.
func LODSW() (asm.Inst, error) { return asm.Fixed("lodsw word ptr [rsi]", 0x66, 0xAD), nil }

// LODSB loads the byte at [rsi] into al and advances rsi.
func LODSB() (asm.Inst, error) { return asm.Fixed("lodsb byte ptr [rsi]", 0xAC), nil }

// REPE_CMPSB compares [rsi] with [rdi], advancing both, while equal and rcx is not zero.
func REPE_CMPSB() (asm.Inst, error) {
	return asm.Fixed("rep cmpsb byte ptr [rsi], byte ptr [rdi]", 0xF3, 0xA6), nil
}

// SCASW compares ax with [rdi] and advances rdi by 2.
func SCASW() (asm.Inst, error) { return asm.Fixed("scasw word ptr [rdi]", 0x66, 0xAF), nil }

// STOSB stores al at [rdi] and advances rdi.
func STOSB() (asm.Inst, error) { return asm.Fixed("stosb byte ptr [rdi]", 0xAA), nil }

// STOSW stores ax at [rdi] and advances rdi by 2.
func STOSW() (asm.Inst, error) { return asm.Fixed("stosw word ptr [rdi]", 0x66, 0xAB), nil }

// REP_MOVSB copies rcx bytes from [rsi] to [rdi], advancing both.
func REP_MOVSB() (asm.Inst, error) {
	return asm.Fixed("rep movsb byte ptr [rdi], byte ptr [rsi]", 0xF3, 0xA4), nil
}

// REPNE_SCASB scans [rdi] for al, advancing rdi, while not equal and rcx is not zero.
func REPNE_SCASB() (asm.Inst, error) { return asm.Fixed("repne scasb byte ptr [rdi]", 0xF2, 0xAE), nil }
