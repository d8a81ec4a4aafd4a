// Package arm64 encodes the AArch64 (A64) instructions that nap's program uses.
//
// Every instruction is 4 bytes. Registers are typed (X0..X17 and X19..X24, their W
// halves, XZR/WZR, and SP where the instruction allows it: the registers nap's program
// may use; x18 is the platform register), immediates are checked against the field they
// go in, and label-relative instructions (B, BL, B.cond, CBZ, CBNZ, ADR) are fixed up
// by asm.Program.Assemble. Names and syntax follow the Arm Architecture Reference
// Manual, lowercase, as arm64asm's GNU syntax prints them.
//
// Builder wraps an asm.Program with one method per instruction.
package arm64
