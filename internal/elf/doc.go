// Package elf writes the smallest static ELF64 executable that Linux runs: the 64-byte
// file header, two program headers, then the code. No sections, no interpreter, no libc.
//
// The one PT_LOAD segment maps the whole file readable and executable at Base; the
// PT_GNU_STACK header asks for a non-executable stack. The header structures and
// constants are those of the standard library's debug/elf, written with encoding/binary.
package elf
