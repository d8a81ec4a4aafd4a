// Package arm64 encodes the AArch64 (A64) instructions that nap's program uses.
//
// Every instruction is 4 bytes. Registers are typed (X0..X30 but X18, the platform
// register, which nap's program never uses; their W halves, XZR/WZR, and SP where the
// instruction allows it), immediates are checked against the field they go in, and
// label-relative instructions (B, BL, B.cond, CBZ, CBNZ, TBZ, TBNZ, ADR) are fixed up by
// asm.Program.Assemble. Names and syntax follow the Arm Architecture Reference
// Manual, lowercase, as arm64asm's GNU syntax prints them.
//
// Builder wraps an asm.Program with one method per instruction, and Label and Data
// for the program's labels and its bytes of data.
package arm64
