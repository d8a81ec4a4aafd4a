// Package asm is the architecture-neutral half of nap's assemblers: a program is a list of
// encoded instructions, data and labels; Assemble lays it out at an address, picks the
// shortest encoding of every label-relative instruction (branch relaxation), and fills in
// the displacements.
//
// The architecture packages (internal/asm/amd64, internal/asm/arm64) encode one
// instruction per call, after checking its operands, and record any error with the
// file:line of the program line that wrote it, as avo does.
package asm
