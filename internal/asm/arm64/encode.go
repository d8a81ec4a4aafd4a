package arm64

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/nap-k8s/nap/internal/asm"
)

func word(text string, w uint32) asm.Inst {
	return asm.Fixed(text, binary.LittleEndian.AppendUint32(nil, w)...)
}

func sf(r Reg) uint32 {
	if r.is64 {
		return 1 << 31
	}
	return 0
}

func fail(text, format string, args ...any) (asm.Inst, error) {
	return asm.Inst{Text: text}, fmt.Errorf(format, args...)
}

// gp checks a register that may not be SP.
func gp(rs ...Reg) error {
	for _, r := range rs {
		if r.sp {
			return errors.New("sp is not allowed here")
		}
	}
	return nil
}

func sameWidth(rs ...Reg) error {
	for _, r := range rs[1:] {
		if r.is64 != rs[0].is64 {
			return errors.New("registers of different widths")
		}
	}
	return nil
}

// movewide encodes MOVN (opc 0), MOVZ (2) and MOVK (3): rd = imm16 << shift.
func movewide(name string, opc uint32, rd Reg, imm uint16, shift uint) (asm.Inst, error) {
	txt := fmt.Sprintf("%s %v, #%#x", name, rd, imm)
	if shift != 0 {
		txt += fmt.Sprintf(", lsl #%d", shift)
	}
	// MOVZ and MOVN read as the mov alias with the value they make, as disassemblers print.
	if v := uint64(imm) << (shift % 64); opc != 3 && shift < 64 {
		if opc == 0 {
			v = ^v
			if !rd.is64 {
				v &= 1<<32 - 1
			}
		}
		txt = fmt.Sprintf("mov %v, #%#x", rd, v)
	}
	if err := gp(rd); err != nil {
		return fail(txt, "%v", err)
	}
	if shift%16 != 0 || shift > 48 || (!rd.is64 && shift > 16) {
		return fail(txt, "shift %d is not 0, 16, 32 or 48 (0 or 16 for W)", shift)
	}
	return word(txt, sf(rd)|opc<<29|0x25<<23|uint32(shift/16)<<21|uint32(imm)<<5|uint32(rd.num)), nil
}

// MOVZ rd = imm << shift.
func MOVZ(rd Reg, imm uint16, shift uint) (asm.Inst, error) {
	return movewide("movz", 2, rd, imm, shift)
}

// MOVK keeps rd but for the 16 bits at shift, which it sets to imm.
func MOVK(rd Reg, imm uint16, shift uint) (asm.Inst, error) {
	return movewide("movk", 3, rd, imm, shift)
}

// MOVN rd = ^(imm << shift).
func MOVN(rd Reg, imm uint16, shift uint) (asm.Inst, error) {
	return movewide("movn", 0, rd, imm, shift)
}

// MOV rd = rm (ORR rd, zr, rm); rd and rm may not be SP.
func MOV(rd, rm Reg) (asm.Inst, error) {
	txt := fmt.Sprintf("mov %v, %v", rd, rm)
	if err := errors.Join(gp(rd, rm), sameWidth(rd, rm)); err != nil {
		return fail(txt, "%v", err)
	}
	return word(txt, sf(rd)|0x2A000000|uint32(rm.num)<<16|31<<5|uint32(rd.num)), nil
}

// addsubImm encodes ADD/ADDS/SUB/SUBS with a 12-bit immediate (optionally << 12).
func addsubImm(name string, op, s uint32, rd, rn Reg, imm uint32) (asm.Inst, error) {
	txt := fmt.Sprintf("%s %v, %v, #%#x", name, rd, rn, imm)
	if name == "add" && imm == 0 && (rd.sp || rn.sp) {
		txt = fmt.Sprintf("mov %v, %v", rd, rn) // the alias for moves to and from sp
	}
	if err := sameWidth(rd, rn); err != nil {
		return fail(txt, "%v", err)
	}
	if s == 1 && rd.sp {
		return fail(txt, "flag-setting form cannot write sp")
	}
	if (rd.num == 31 && !rd.sp && s == 0) || (rn.num == 31 && !rn.sp) {
		return fail(txt, "register 31 is sp here")
	}
	var sh uint32
	if imm > 0xFFF {
		if imm&0xFFF != 0 || imm>>12 > 0xFFF {
			return fail(txt, "immediate %#x does not fit 12 bits (optionally shifted by 12)", imm)
		}
		imm, sh = imm>>12, 1
		txt = fmt.Sprintf("%s %v, %v, #%#x, lsl #12", name, rd, rn, imm)
	}
	return word(txt, sf(rd)|op<<30|s<<29|0x22<<23|sh<<22|imm<<10|uint32(rn.num)<<5|uint32(rd.num)), nil
}

// ADDi rd = rn + imm.
func ADDi(rd, rn Reg, imm uint32) (asm.Inst, error) { return addsubImm("add", 0, 0, rd, rn, imm) }

// SUBi rd = rn - imm.
func SUBi(rd, rn Reg, imm uint32) (asm.Inst, error) { return addsubImm("sub", 1, 0, rd, rn, imm) }

// SUBSi rd = rn - imm, setting the flags.
func SUBSi(rd, rn Reg, imm uint32) (asm.Inst, error) { return addsubImm("subs", 1, 1, rd, rn, imm) }

// CMPi compares rn with imm (SUBS zr, rn, imm).
func CMPi(rn Reg, imm uint32) (asm.Inst, error) {
	zr := Reg{num: 31, is64: rn.is64}
	in, err := addsubImm("subs", 1, 1, zr, rn, imm)
	in.Text = fmt.Sprintf("cmp %v, #%#x", rn, imm)
	return in, err
}

// addsubReg encodes ADD/ADDS/SUB/SUBS with a shifted register (LSL #shift).
func addsubReg(name string, op, s uint32, rd, rn, rm Reg, shift uint) (asm.Inst, error) {
	txt := fmt.Sprintf("%s %v, %v, %v", name, rd, rn, rm)
	if shift != 0 {
		txt += fmt.Sprintf(", lsl #%d", shift)
	}
	if err := errors.Join(gp(rd, rn, rm), sameWidth(rd, rn, rm)); err != nil {
		return fail(txt, "%v", err)
	}
	if (rd.is64 && shift > 63) || (!rd.is64 && shift > 31) {
		return fail(txt, "shift %d too large", shift)
	}
	return word(txt, sf(rd)|op<<30|s<<29|0x0B<<24|uint32(rm.num)<<16|uint32(shift)<<10|uint32(rn.num)<<5|uint32(rd.num)), nil
}

// ADD rd = rn + rm.
func ADD(rd, rn, rm Reg) (asm.Inst, error) { return addsubReg("add", 0, 0, rd, rn, rm, 0) }

// ADDS rd = rn + rm, setting the flags (V on signed overflow).
func ADDS(rd, rn, rm Reg) (asm.Inst, error) { return addsubReg("adds", 0, 1, rd, rn, rm, 0) }

// SUB rd = rn - rm.
func SUB(rd, rn, rm Reg) (asm.Inst, error) { return addsubReg("sub", 1, 0, rd, rn, rm, 0) }

// SUBS rd = rn - rm, setting the flags.
func SUBS(rd, rn, rm Reg) (asm.Inst, error) { return addsubReg("subs", 1, 1, rd, rn, rm, 0) }

// CMP compares rn with rm.
func CMP(rn, rm Reg) (asm.Inst, error) {
	in, err := addsubReg("subs", 1, 1, Reg{num: 31, is64: rn.is64}, rn, rm, 0)
	in.Text = fmt.Sprintf("cmp %v, %v", rn, rm)
	return in, err
}

// dp3 encodes the three-source data-processing group (MADD, MSUB, SMULH, UMULH).
func dp3(txt string, base uint32, rd, rn, rm, ra Reg, only64 bool) (asm.Inst, error) {
	if err := errors.Join(gp(rd, rn, rm, ra), sameWidth(rd, rn, rm, ra)); err != nil {
		return fail(txt, "%v", err)
	}
	if only64 && !rd.is64 {
		return fail(txt, "needs X registers")
	}
	return word(txt, sf(rd)|base|uint32(rm.num)<<16|uint32(ra.num)<<10|uint32(rn.num)<<5|uint32(rd.num)), nil
}

// MADD rd = ra + rn*rm.
func MADD(rd, rn, rm, ra Reg) (asm.Inst, error) {
	return dp3(fmt.Sprintf("madd %v, %v, %v, %v", rd, rn, rm, ra), 0x1B000000, rd, rn, rm, ra, false)
}

// MSUB rd = ra - rn*rm.
func MSUB(rd, rn, rm, ra Reg) (asm.Inst, error) {
	return dp3(fmt.Sprintf("msub %v, %v, %v, %v", rd, rn, rm, ra), 0x1B008000, rd, rn, rm, ra, false)
}

// MUL rd = rn*rm (the low bits).
func MUL(rd, rn, rm Reg) (asm.Inst, error) {
	zr := Reg{num: 31, is64: rd.is64}
	return dp3(fmt.Sprintf("mul %v, %v, %v", rd, rn, rm), 0x1B000000, rd, rn, rm, zr, false)
}

// UMULH rd = the high 64 bits of the unsigned product rn*rm.
func UMULH(rd, rn, rm Reg) (asm.Inst, error) {
	return dp3(fmt.Sprintf("umulh %v, %v, %v", rd, rn, rm), 0x1BC00000|1<<31, rd, rn, rm, XZR, true)
}

// SMULH rd = the high 64 bits of the signed product rn*rm.
func SMULH(rd, rn, rm Reg) (asm.Inst, error) {
	return dp3(fmt.Sprintf("smulh %v, %v, %v", rd, rn, rm), 0x1B400000|1<<31, rd, rn, rm, XZR, true)
}

// UDIV rd = rn / rm, unsigned (0 when rm is 0).
func UDIV(rd, rn, rm Reg) (asm.Inst, error) {
	txt := fmt.Sprintf("udiv %v, %v, %v", rd, rn, rm)
	if err := errors.Join(gp(rd, rn, rm), sameWidth(rd, rn, rm)); err != nil {
		return fail(txt, "%v", err)
	}
	return word(txt, sf(rd)|0x1AC00800|uint32(rm.num)<<16|uint32(rn.num)<<5|uint32(rd.num)), nil
}

// cond checks a condition code: four bits.
func cond(c Cond) error {
	if c > NV {
		return fmt.Errorf("condition code %d out of range", uint8(c))
	}
	return nil
}

// CSEL rd = rn if c holds, else rm.
func CSEL(rd, rn, rm Reg, c Cond) (asm.Inst, error) {
	txt := fmt.Sprintf("csel %v, %v, %v, %v", rd, rn, rm, c)
	if err := errors.Join(gp(rd, rn, rm), sameWidth(rd, rn, rm), cond(c)); err != nil {
		return fail(txt, "%v", err)
	}
	return word(txt, sf(rd)|0x1A800000|uint32(rm.num)<<16|uint32(c)<<12|uint32(rn.num)<<5|uint32(rd.num)), nil
}

// CSINC rd = rn if c holds, else rm+1.
func CSINC(rd, rn, rm Reg, c Cond) (asm.Inst, error) {
	txt := fmt.Sprintf("csinc %v, %v, %v, %v", rd, rn, rm, c)
	if err := errors.Join(gp(rd, rn, rm), sameWidth(rd, rn, rm), cond(c)); err != nil {
		return fail(txt, "%v", err)
	}
	return word(txt, sf(rd)|0x1A800400|uint32(rm.num)<<16|uint32(c)<<12|uint32(rn.num)<<5|uint32(rd.num)), nil
}

// CCMPi: if c holds, compare rn with imm5; else set the flags to nzcv.
func CCMPi(rn Reg, imm uint8, nzcv uint8, c Cond) (asm.Inst, error) {
	txt := fmt.Sprintf("ccmp %v, #%#x, #%#x, %v", rn, imm, nzcv, c)
	if err := errors.Join(gp(rn), cond(c)); err != nil {
		return fail(txt, "%v", err)
	}
	if imm > 31 || nzcv > 15 {
		return fail(txt, "immediate or flags out of range")
	}
	return word(txt, sf(rn)|0x7A400800|uint32(imm)<<16|uint32(c)<<12|uint32(rn.num)<<5|uint32(nzcv)), nil
}

// Memory. Base registers are X registers or SP.

func base(rn Reg) error {
	if !rn.is64 || (rn.num == 31 && !rn.sp) {
		return errors.New("base must be an X register or sp")
	}
	return nil
}

// LDRB loads the byte at [rn+off] (unsigned offset 0..4095) zero-extended into wt.
func LDRB(wt, rn Reg, off uint32) (asm.Inst, error) {
	txt := fmt.Sprintf("ldrb %v, [%v, #%d]", wt, rn, off)
	if off == 0 {
		txt = fmt.Sprintf("ldrb %v, [%v]", wt, rn)
	}
	if err := errors.Join(gp(wt), base(rn)); err != nil {
		return fail(txt, "%v", err)
	}
	if wt.is64 || off > 4095 {
		return fail(txt, "needs a W register and an offset of 0..4095")
	}
	return word(txt, 0x39400000|off<<10|uint32(rn.num)<<5|uint32(wt.num)), nil
}

// LDRBpost loads the byte at [rn] into wt, then adds off to rn (-256..255).
func LDRBpost(wt, rn Reg, off int32) (asm.Inst, error) {
	return byteIndexed("ldrb %v, [%v], #%d", 0x38400400, wt, rn, off)
}

// LDRBpre adds off to rn (-256..255), then loads the byte at [rn] into wt.
func LDRBpre(wt, rn Reg, off int32) (asm.Inst, error) {
	return byteIndexed("ldrb %v, [%v, #%d]!", 0x38400C00, wt, rn, off)
}

// STRBpost stores the byte wt at [rn], then adds off to rn (-256..255).
func STRBpost(wt, rn Reg, off int32) (asm.Inst, error) {
	return byteIndexed("strb %v, [%v], #%d", 0x38000400, wt, rn, off)
}

// STRBpre adds off to rn (-256..255), then stores the byte wt at [rn].
func STRBpre(wt, rn Reg, off int32) (asm.Inst, error) {
	return byteIndexed("strb %v, [%v, #%d]!", 0x38000C00, wt, rn, off)
}

// byteIndexed is a byte load or store with a pre- or post-index (op, the encoding's
// fixed bits): a W register other than the base, a 9-bit signed offset.
func byteIndexed(format string, op uint32, wt, rn Reg, off int32) (asm.Inst, error) {
	txt := fmt.Sprintf(format, wt, rn, off)
	if err := errors.Join(gp(wt), base(rn)); err != nil {
		return fail(txt, "%v", err)
	}
	if wt.is64 || off < -256 || off > 255 || wt.num == rn.num {
		return fail(txt, "needs a W register other than the base and an offset of -256..255")
	}
	return word(txt, op|(uint32(off)&0x1FF)<<12|uint32(rn.num)<<5|uint32(wt.num)), nil
}

// LDURB loads the byte at [rn+off] (-256..255) into wt.
func LDURB(wt, rn Reg, off int32) (asm.Inst, error) {
	txt := fmt.Sprintf("ldurb %v, [%v, #%d]", wt, rn, off)
	if err := errors.Join(gp(wt), base(rn)); err != nil {
		return fail(txt, "%v", err)
	}
	if wt.is64 || off < -256 || off > 255 {
		return fail(txt, "needs a W register and an offset of -256..255")
	}
	return word(txt, 0x38400000|(uint32(off)&0x1FF)<<12|uint32(rn.num)<<5|uint32(wt.num)), nil
}

// LDR loads the word at [rn+off] into xt: 64 bits into an X register (off a multiple of
// 8, 0..32760), 32 bits zero-extended into a W register (off a multiple of 4, 0..16380).
func LDR(xt, rn Reg, off uint32) (asm.Inst, error) {
	txt := fmt.Sprintf("ldr %v, [%v, #%d]", xt, rn, off)
	if off == 0 {
		txt = fmt.Sprintf("ldr %v, [%v]", xt, rn)
	}
	if err := errors.Join(gp(xt), base(rn)); err != nil {
		return fail(txt, "%v", err)
	}
	if !xt.is64 {
		if off%4 != 0 || off > 16380 {
			return fail(txt, "needs a W register's offset to be a multiple of 4 up to 16380")
		}
		return word(txt, 0xB9400000|(off/4)<<10|uint32(rn.num)<<5|uint32(xt.num)), nil
	}
	if off%8 != 0 || off > 32760 {
		return fail(txt, "needs an X register's offset to be a multiple of 8 up to 32760")
	}
	return word(txt, 0xF9400000|(off/8)<<10|uint32(rn.num)<<5|uint32(xt.num)), nil
}

// STR stores the word xt at [rn+off]: 64 bits from an X register (off a multiple of 8,
// 0..32760), 32 bits from a W register (off a multiple of 4, 0..16380).
func STR(xt, rn Reg, off uint32) (asm.Inst, error) {
	txt := fmt.Sprintf("str %v, [%v, #%d]", xt, rn, off)
	if off == 0 {
		txt = fmt.Sprintf("str %v, [%v]", xt, rn)
	}
	if err := errors.Join(gp(xt), base(rn)); err != nil {
		return fail(txt, "%v", err)
	}
	if !xt.is64 {
		if off%4 != 0 || off > 16380 {
			return fail(txt, "needs a W register's offset to be a multiple of 4 up to 16380")
		}
		return word(txt, 0xB9000000|(off/4)<<10|uint32(rn.num)<<5|uint32(xt.num)), nil
	}
	if off%8 != 0 || off > 32760 {
		return fail(txt, "needs an X register's offset to be a multiple of 8 up to 32760")
	}
	return word(txt, 0xF9000000|(off/8)<<10|uint32(rn.num)<<5|uint32(xt.num)), nil
}

// STRB stores the low byte of wt at [rn+off] (unsigned offset 0..4095).
func STRB(wt, rn Reg, off uint32) (asm.Inst, error) {
	txt := fmt.Sprintf("strb %v, [%v, #%d]", wt, rn, off)
	if off == 0 {
		txt = fmt.Sprintf("strb %v, [%v]", wt, rn)
	}
	if err := errors.Join(gp(wt), base(rn)); err != nil {
		return fail(txt, "%v", err)
	}
	if wt.is64 || off > 4095 {
		return fail(txt, "needs a W register and an offset of 0..4095")
	}
	return word(txt, 0x39000000|off<<10|uint32(rn.num)<<5|uint32(wt.num)), nil
}

// LDRH loads the 16-bit half-word at [rn+off] (off a multiple of 2, 0..8190)
// zero-extended into wt.
func LDRH(wt, rn Reg, off uint32) (asm.Inst, error) {
	txt := fmt.Sprintf("ldrh %v, [%v, #%d]", wt, rn, off)
	if off == 0 {
		txt = fmt.Sprintf("ldrh %v, [%v]", wt, rn)
	}
	if err := errors.Join(gp(wt), base(rn)); err != nil {
		return fail(txt, "%v", err)
	}
	if wt.is64 || off%2 != 0 || off > 8190 {
		return fail(txt, "needs a W register and an offset that is a multiple of 2 up to 8190")
	}
	return word(txt, 0x79400000|(off/2)<<10|uint32(rn.num)<<5|uint32(wt.num)), nil
}

// LDRBr loads the byte at [rn+rm] zero-extended into wt; STRBr stores wt's low byte there.
func LDRBr(wt, rn, rm Reg) (asm.Inst, error) { return byteRegOffset("ldrb", 0x38606800, wt, rn, rm) }

// STRBr stores the low byte of wt at [rn+rm].
func STRBr(wt, rn, rm Reg) (asm.Inst, error) { return byteRegOffset("strb", 0x38206800, wt, rn, rm) }

func byteRegOffset(name string, op uint32, wt, rn, rm Reg) (asm.Inst, error) {
	txt := fmt.Sprintf("%s %v, [%v, %v]", name, wt, rn, rm)
	if err := errors.Join(gp(wt, rm), base(rn)); err != nil {
		return fail(txt, "%v", err)
	}
	if wt.is64 || !rm.is64 {
		return fail(txt, "needs a W register and an X offset")
	}
	return word(txt, op|uint32(rm.num)<<16|uint32(rn.num)<<5|uint32(wt.num)), nil
}

// ANDi rd = rn AND imm, where imm clears the low k bits of an X register (^(1<<k-1),
// k 1..63): the one logical immediate the programs need, to align.
func ANDi(rd, rn Reg, imm uint64) (asm.Inst, error) {
	txt := fmt.Sprintf("and %v, %v, #%#x", rd, rn, imm)
	k := bits.TrailingZeros64(imm)
	if err := gp(rd, rn); err != nil {
		return fail(txt, "%v", err)
	}
	if !rd.is64 || !rn.is64 || k == 0 || k == 64 || imm != ^uint64(0)<<k {
		return fail(txt, "needs X registers and a mask that clears the low 1..63 bits")
	}
	return word(txt, 0x92400000|uint32(64-k)<<16|uint32(63-k)<<10|uint32(rn.num)<<5|uint32(rd.num)), nil
}

// LDRpost loads the 64-bit word at [rn] into xt, then adds off (-256..255) to rn.
func LDRpost(xt, rn Reg, off int32) (asm.Inst, error) {
	txt := fmt.Sprintf("ldr %v, [%v], #%d", xt, rn, off)
	if err := errors.Join(gp(xt), base(rn)); err != nil {
		return fail(txt, "%v", err)
	}
	if !xt.is64 || off < -256 || off > 255 || xt.num == rn.num {
		return fail(txt, "needs an X register other than the base and an offset of -256..255")
	}
	return word(txt, 0xF8400400|(uint32(off)&0x1FF)<<12|uint32(rn.num)<<5|uint32(xt.num)), nil
}

// STP stores xt1 and xt2 at [rn+off] (off a multiple of 8, -512..504); with pre it
// first adds off to rn (writeback).
func STP(xt1, xt2, rn Reg, off int32, pre bool) (asm.Inst, error) {
	txt := fmt.Sprintf("stp %v, %v, [%v, #%d]", xt1, xt2, rn, off)
	switch {
	case pre:
		txt += "!"
	case off == 0:
		txt = fmt.Sprintf("stp %v, %v, [%v]", xt1, xt2, rn)
	}
	if err := errors.Join(gp(xt1, xt2), base(rn)); err != nil {
		return fail(txt, "%v", err)
	}
	if !xt1.is64 || !xt2.is64 || off%8 != 0 || off < -512 || off > 504 {
		return fail(txt, "needs X registers and an offset that is a multiple of 8 in -512..504")
	}
	op := uint32(0xA9000000) // signed offset
	if pre {
		op = 0xA9800000
	}
	return word(txt, op|(uint32(off/8)&0x7F)<<15|uint32(xt2.num)<<10|uint32(rn.num)<<5|uint32(xt1.num)), nil
}

// Branches.

func rel(txt string, l asm.Label, enc func(delta int64) (uint32, error)) (asm.Inst, error) {
	if l == "" {
		return fail(txt, "empty label")
	}
	return asm.Inst{Text: txt, Ref: l, Forms: []asm.Form{{Size: 4, Encode: func(pc, target uint64) ([]byte, error) {
		w, err := enc(int64(target) - int64(pc))
		if err != nil {
			return nil, err
		}
		return binary.LittleEndian.AppendUint32(nil, w), nil
	}}}}, nil
}

// imm19/imm26 check a word-aligned branch distance.
func field(delta int64, bits uint) (uint32, error) {
	if delta%4 != 0 {
		return 0, errors.New("label is not word-aligned")
	}
	d := delta / 4
	if d < -(1<<(bits-1)) || d >= 1<<(bits-1) {
		return 0, fmt.Errorf("label out of range (%d words, %d-bit field)", d, bits)
	}
	return uint32(d) & (1<<bits - 1), nil
}

// B jumps to l.
func B(l asm.Label) (asm.Inst, error) {
	return rel("b "+string(l), l, func(d int64) (uint32, error) {
		f, err := field(d, 26)
		return 0x14000000 | f, err
	})
}

// BL calls l, leaving the return address in x30.
func BL(l asm.Label) (asm.Inst, error) {
	return rel("bl "+string(l), l, func(d int64) (uint32, error) {
		f, err := field(d, 26)
		return 0x94000000 | f, err
	})
}

// Bcond jumps to l when c holds.
func Bcond(c Cond, l asm.Label) (asm.Inst, error) {
	if err := cond(c); err != nil {
		return fail("b.? "+string(l), "%v", err)
	}
	return rel("b."+c.String()+" "+string(l), l, func(d int64) (uint32, error) {
		f, err := field(d, 19)
		return 0x54000000 | f<<5 | uint32(c), err
	})
}

func cb(name string, op uint32, rt Reg, l asm.Label) (asm.Inst, error) {
	txt := fmt.Sprintf("%s %v, %s", name, rt, l)
	if err := gp(rt); err != nil {
		return fail(txt, "%v", err)
	}
	return rel(txt, l, func(d int64) (uint32, error) {
		f, err := field(d, 19)
		return sf(rt) | op | f<<5 | uint32(rt.num), err
	})
}

// CBZ jumps to l when rt is zero.
func CBZ(rt Reg, l asm.Label) (asm.Inst, error) { return cb("cbz", 0x34000000, rt, l) }

// CBNZ jumps to l when rt is not zero.
func CBNZ(rt Reg, l asm.Label) (asm.Inst, error) { return cb("cbnz", 0x35000000, rt, l) }

// TBZ jumps to l when bit b of rt is zero; TBNZ when it is one.
func tb(name string, op uint32, rt Reg, bit uint, l asm.Label) (asm.Inst, error) {
	txt := fmt.Sprintf("%s %v, #%d, %s", name, rt, bit, l)
	if err := gp(rt); err != nil {
		return fail(txt, "%v", err)
	}
	if bit > 63 || (!rt.is64 && bit > 31) {
		return fail(txt, "bit %d out of range", bit)
	}
	return rel(txt, l, func(d int64) (uint32, error) {
		f, err := field(d, 14)
		return uint32(bit>>5)<<31 | op | uint32(bit&31)<<19 | f<<5 | uint32(rt.num), err
	})
}

// TBZ jumps to l when bit of rt is zero.
func TBZ(rt Reg, bit uint, l asm.Label) (asm.Inst, error) { return tb("tbz", 0x36000000, rt, bit, l) }

// TBNZ jumps to l when bit of rt is one.
func TBNZ(rt Reg, bit uint, l asm.Label) (asm.Inst, error) { return tb("tbnz", 0x37000000, rt, bit, l) }

// ADR puts the address of l in xd.
func ADR(xd Reg, l asm.Label) (asm.Inst, error) {
	txt := fmt.Sprintf("adr %v, %s", xd, l)
	if err := gp(xd); err != nil || !xd.is64 {
		return fail(txt, "needs an X register")
	}
	return rel(txt, l, func(d int64) (uint32, error) {
		if d < -(1<<20) || d >= 1<<20 {
			return 0, errors.New("label out of the 1 MiB range of adr")
		}
		u := uint32(d) & (1<<21 - 1)
		return 0x10000000 | (u&3)<<29 | (u>>2)<<5 | uint32(xd.num), nil
	})
}

// RET returns to x30.
func RET() (asm.Inst, error) { return word("ret", 0xD65F03C0), nil }

// BRK raises a breakpoint exception: SIGTRAP, a trap nothing runs past.
func BRK(imm uint16) (asm.Inst, error) {
	return word(fmt.Sprintf("brk #%#x", imm), 0xD4200000|uint32(imm)<<5), nil
}

// SVC calls the kernel: number in x8, arguments in x0..x5, result in x0.
func SVC(imm uint16) (asm.Inst, error) {
	return word(fmt.Sprintf("svc #%#x", imm), 0xD4000001|uint32(imm)<<5), nil
}
