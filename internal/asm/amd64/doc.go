// Package amd64 encodes the x86-64 instructions that nap's program uses.
//
// Operands are typed: registers carry their width (RAX is 64-bit, EAX 32-bit, AL 8-bit),
// memory operands carry the width of the access (Qword, Byte), immediates are Imm, and
// branches name an asm.Label. Each encoder checks its operands and either returns the
// encoding or an error; it never emits unchecked bytes. Syntax and names follow the
// Intel manual, so the text of every instruction reads as x86asm.IntelSyntax prints it.
//
// Builder wraps an asm.Program with one method per instruction, so a program reads as
// one call per line, with named labels.
package amd64
