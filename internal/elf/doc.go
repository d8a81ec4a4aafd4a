// Package elf writes the smallest static ELF64 executable that Linux runs: the 64-byte
// file header, two program headers, then the program. No sections, no interpreter, no
// libc.
//
// The one PT_LOAD segment maps the whole file readable and executable at Base; the
// PT_GNU_STACK header asks for a non-executable stack. Of PT_GNU_STACK, loaders read
// only p_type and p_flags (Linux fs/binfmt_elf.c, gVisor, qemu-user), so the program
// starts right after those two words, at Load: its first 48 bytes are also that header's
// unused offset, addresses, sizes and alignment. The header structures and constants are
// those of the standard library's debug/elf, written with encoding/binary.
package elf
