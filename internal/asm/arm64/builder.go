package arm64

import "github.com/nap-k8s/nap/internal/asm"

// Builder writes an arm64 program one instruction per call. An invalid instruction is
// recorded with the file:line of the call and reported by Assemble.
type Builder struct{ asm.Program }

// Label defines l here.
func (b *Builder) Label(l asm.Label) { b.Program.Label(l) }

// Data places raw bytes (a string, a table) here.
func (b *Builder) Data(text string, d []byte) { b.Program.Data(text, d) }

func (b *Builder) MOVZ(rd Reg, imm uint16, shift uint)       { b.Emit(MOVZ(rd, imm, shift)) }
func (b *Builder) MOVK(rd Reg, imm uint16, shift uint)       { b.Emit(MOVK(rd, imm, shift)) }
func (b *Builder) MOVN(rd Reg, imm uint16, shift uint)       { b.Emit(MOVN(rd, imm, shift)) }
func (b *Builder) MOV(rd, rm Reg)                            { b.Emit(MOV(rd, rm)) }
func (b *Builder) ADDi(rd, rn Reg, imm uint32)               { b.Emit(ADDi(rd, rn, imm)) }
func (b *Builder) SUBi(rd, rn Reg, imm uint32)               { b.Emit(SUBi(rd, rn, imm)) }
func (b *Builder) SUBSi(rd, rn Reg, imm uint32)              { b.Emit(SUBSi(rd, rn, imm)) }
func (b *Builder) CMPi(rn Reg, imm uint32)                   { b.Emit(CMPi(rn, imm)) }
func (b *Builder) ADD(rd, rn, rm Reg)                        { b.Emit(ADD(rd, rn, rm)) }
func (b *Builder) ADDS(rd, rn, rm Reg)                       { b.Emit(ADDS(rd, rn, rm)) }
func (b *Builder) SUB(rd, rn, rm Reg)                        { b.Emit(SUB(rd, rn, rm)) }
func (b *Builder) SUBS(rd, rn, rm Reg)                       { b.Emit(SUBS(rd, rn, rm)) }
func (b *Builder) CMP(rn, rm Reg)                            { b.Emit(CMP(rn, rm)) }
func (b *Builder) MADD(rd, rn, rm, ra Reg)                   { b.Emit(MADD(rd, rn, rm, ra)) }
func (b *Builder) MSUB(rd, rn, rm, ra Reg)                   { b.Emit(MSUB(rd, rn, rm, ra)) }
func (b *Builder) MUL(rd, rn, rm Reg)                        { b.Emit(MUL(rd, rn, rm)) }
func (b *Builder) UMULH(rd, rn, rm Reg)                      { b.Emit(UMULH(rd, rn, rm)) }
func (b *Builder) SMULH(rd, rn, rm Reg)                      { b.Emit(SMULH(rd, rn, rm)) }
func (b *Builder) UDIV(rd, rn, rm Reg)                       { b.Emit(UDIV(rd, rn, rm)) }
func (b *Builder) CSEL(rd, rn, rm Reg, c Cond)               { b.Emit(CSEL(rd, rn, rm, c)) }
func (b *Builder) CSINC(rd, rn, rm Reg, c Cond)              { b.Emit(CSINC(rd, rn, rm, c)) }
func (b *Builder) CCMPi(rn Reg, imm, nzcv uint8, c Cond)     { b.Emit(CCMPi(rn, imm, nzcv, c)) }
func (b *Builder) LDRB(wt, rn Reg, off uint32)               { b.Emit(LDRB(wt, rn, off)) }
func (b *Builder) LDRBpost(wt, rn Reg, off int32)            { b.Emit(LDRBpost(wt, rn, off)) }
func (b *Builder) LDRBpre(wt, rn Reg, off int32)             { b.Emit(LDRBpre(wt, rn, off)) }
func (b *Builder) STRBpost(wt, rn Reg, off int32)            { b.Emit(STRBpost(wt, rn, off)) }
func (b *Builder) STRBpre(wt, rn Reg, off int32)             { b.Emit(STRBpre(wt, rn, off)) }
func (b *Builder) LDURB(wt, rn Reg, off int32)               { b.Emit(LDURB(wt, rn, off)) }
func (b *Builder) LDR(xt, rn Reg, off uint32)                { b.Emit(LDR(xt, rn, off)) }
func (b *Builder) STR(xt, rn Reg, off uint32)                { b.Emit(STR(xt, rn, off)) }
func (b *Builder) STRB(wt, rn Reg, off uint32)               { b.Emit(STRB(wt, rn, off)) }
func (b *Builder) LDRH(wt, rn Reg, off uint32)               { b.Emit(LDRH(wt, rn, off)) }
func (b *Builder) LDRBr(wt, rn, rm Reg)                      { b.Emit(LDRBr(wt, rn, rm)) }
func (b *Builder) STRBr(wt, rn, rm Reg)                      { b.Emit(STRBr(wt, rn, rm)) }
func (b *Builder) ANDi(rd, rn Reg, imm uint64)               { b.Emit(ANDi(rd, rn, imm)) }
func (b *Builder) LDRpost(xt, rn Reg, off int32)             { b.Emit(LDRpost(xt, rn, off)) }
func (b *Builder) STP(xt1, xt2, rn Reg, off int32, pre bool) { b.Emit(STP(xt1, xt2, rn, off, pre)) }
func (b *Builder) B(l asm.Label)                             { b.Emit(B(l)) }
func (b *Builder) BL(l asm.Label)                            { b.Emit(BL(l)) }
func (b *Builder) Bcond(c Cond, l asm.Label)                 { b.Emit(Bcond(c, l)) }
func (b *Builder) CBZ(rt Reg, l asm.Label)                   { b.Emit(CBZ(rt, l)) }
func (b *Builder) CBNZ(rt Reg, l asm.Label)                  { b.Emit(CBNZ(rt, l)) }
func (b *Builder) TBZ(rt Reg, bit uint, l asm.Label)         { b.Emit(TBZ(rt, bit, l)) }
func (b *Builder) TBNZ(rt Reg, bit uint, l asm.Label)        { b.Emit(TBNZ(rt, bit, l)) }
func (b *Builder) ADR(xd Reg, l asm.Label)                   { b.Emit(ADR(xd, l)) }
func (b *Builder) RET()                                      { b.Emit(RET()) }
func (b *Builder) SVC(imm uint16)                            { b.Emit(SVC(imm)) }
func (b *Builder) BRK(imm uint16)                            { b.Emit(BRK(imm)) }
