package amd64

import "github.com/nap-k8s/nap/internal/asm"

// Builder writes an amd64 program one instruction per call. An invalid instruction is
// recorded with the file:line of the call and reported by Assemble.
type Builder struct{ asm.Program }

// Label defines l here.
func (b *Builder) Label(l asm.Label) { b.Program.Label(l) }

func (b *Builder) ADD(dst, src Operand)                { b.Emit(ADD(dst, src)) }
func (b *Builder) OR(dst, src Operand)                 { b.Emit(OR(dst, src)) }
func (b *Builder) AND(dst, src Operand)                { b.Emit(AND(dst, src)) }
func (b *Builder) SUB(dst, src Operand)                { b.Emit(SUB(dst, src)) }
func (b *Builder) XOR(dst, src Operand)                { b.Emit(XOR(dst, src)) }
func (b *Builder) CMP(x, y Operand)                    { b.Emit(CMP(x, y)) }
func (b *Builder) TEST(x Operand, y Reg)               { b.Emit(TEST(x, y)) }
func (b *Builder) MOV(dst, src Operand)                { b.Emit(MOV(dst, src)) }
func (b *Builder) MOVZX(dst Reg, src Operand)          { b.Emit(MOVZX(dst, src)) }
func (b *Builder) LEA(dst Reg, src Mem)                { b.Emit(LEA(dst, src)) }
func (b *Builder) IMUL(dst Reg, src Operand)           { b.Emit(IMUL(dst, src)) }
func (b *Builder) IMUL3(dst Reg, src Operand, imm Imm) { b.Emit(IMUL3(dst, src, imm)) }
func (b *Builder) INC(o Operand)                       { b.Emit(INC(o)) }
func (b *Builder) DEC(o Operand)                       { b.Emit(DEC(o)) }
func (b *Builder) NOT(o Operand)                       { b.Emit(NOT(o)) }
func (b *Builder) MUL(o Operand)                       { b.Emit(MUL(o)) }
func (b *Builder) SCASW()                              { b.Emit(SCASW()) }
func (b *Builder) NEG(o Operand)                       { b.Emit(NEG(o)) }
func (b *Builder) DIV(o Operand)                       { b.Emit(DIV(o)) }
func (b *Builder) BTS(o, n Operand)                    { b.Emit(BTS(o, n)) }
func (b *Builder) BT(o, n Operand)                     { b.Emit(BT(o, n)) }
func (b *Builder) CMOV(c Cond, dst Reg, src Operand)   { b.Emit(CMOV(c, dst, src)) }
func (b *Builder) XCHG(x, y Reg)                       { b.Emit(XCHG(x, y)) }
func (b *Builder) SHL(o Operand, n Imm)                { b.Emit(SHL(o, n)) }
func (b *Builder) SHR(o Operand, n Imm)                { b.Emit(SHR(o, n)) }
func (b *Builder) PUSH(o Operand)                      { b.Emit(PUSH(o)) }
func (b *Builder) POP(r Reg)                           { b.Emit(POP(r)) }
func (b *Builder) JMP(l asm.Label)                     { b.Emit(JMP(l)) }
func (b *Builder) J(c Cond, l asm.Label)               { b.Emit(J(c, l)) }
func (b *Builder) JRCXZ(l asm.Label)                   { b.Emit(JRCXZ(l)) }
func (b *Builder) LOOP(l asm.Label)                    { b.Emit(LOOP(l)) }
func (b *Builder) CALL(l asm.Label)                    { b.Emit(CALL(l)) }
func (b *Builder) RET()                                { b.Emit(RET()) }
func (b *Builder) SYSCALL()                            { b.Emit(SYSCALL()) }
func (b *Builder) UD2()                                { b.Emit(UD2()) }
func (b *Builder) CDQ()                                { b.Emit(CDQ()) }
func (b *Builder) CWDE()                               { b.Emit(CWDE()) }
func (b *Builder) LODSW()                              { b.Emit(LODSW()) }
func (b *Builder) LODSB()                              { b.Emit(LODSB()) }
func (b *Builder) REPE_CMPSB()                         { b.Emit(REPE_CMPSB()) }
func (b *Builder) REPNE_SCASB()                        { b.Emit(REPNE_SCASB()) }
func (b *Builder) STOSB()                              { b.Emit(STOSB()) }
func (b *Builder) STOSW()                              { b.Emit(STOSW()) }
func (b *Builder) REP_MOVSB()                          { b.Emit(REP_MOVSB()) }

// Data places raw bytes (a string, a table) here.
func (b *Builder) Data(text string, d []byte) { b.Program.Data(text, d) }
