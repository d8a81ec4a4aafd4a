package elf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// Base is where the file is mapped. It is a multiple of 64 KiB, the largest page size
// of arm64 kernels, so that p_vaddr and p_offset agree modulo any page size.
const Base = 0x400000

// Load is the file offset of the program, and Base+Load its address: right after the
// p_type and p_flags of PT_GNU_STACK, whose other fields loaders ignore.
const Load = elfHeaderSize + progHeaderSize + stackUsed

const (
	elfHeaderSize  = 64
	progHeaderSize = 56
	stackUsed      = 8 // p_type and p_flags
	segmentAlign   = 0x10000
)

// The ignored fields of PT_GNU_STACK that debug/elf (and so Go tools) still reads as
// signed 64-bit numbers and rejects when negative: p_offset, p_filesz and p_memsz. The
// program's bytes that land on their top bytes must be below 0x80.
var signedFields = []struct {
	name string
	off  int
}{{"p_offset", 0}, {"p_filesz", 24}, {"p_memsz", 32}}

// Executable returns the bytes of an executable for machine whose program (assembled for
// address Base+Load) starts running at entry.
func Executable(machine elf.Machine, prog []byte, entry uint64) ([]byte, error) {
	switch machine {
	case elf.EM_X86_64, elf.EM_AARCH64:
	default:
		return nil, fmt.Errorf("elf: machine %v is not supported", machine)
	}
	if entry < Base+Load || entry >= Base+Load+uint64(len(prog)) {
		return nil, fmt.Errorf("elf: entry %#x is outside the program", entry)
	}
	// The file holds the whole PT_GNU_STACK header, however short the program.
	if n := progHeaderSize - stackUsed; len(prog) < n {
		prog = append(prog[:len(prog):len(prog)], make([]byte, n-len(prog))...) // never into the caller's array
	}
	for _, f := range signedFields {
		if top := prog[f.off+7]; top >= 0x80 {
			return nil, fmt.Errorf("elf: program byte %d (%#x) would make PT_GNU_STACK's %s negative", f.off+7, top, f.name)
		}
	}
	size := uint64(Load + len(prog))
	hdr := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Entry:     entry,
		Phoff:     elfHeaderSize,
		Ehsize:    elfHeaderSize,
		Phentsize: progHeaderSize,
		Phnum:     2,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	hdr.Ident[elf.EI_OSABI] = byte(elf.ELFOSABI_NONE)

	load := elf.Prog64{
		Type:   uint32(elf.PT_LOAD),
		Flags:  uint32(elf.PF_R | elf.PF_X),
		Off:    0,
		Vaddr:  Base,
		Paddr:  Base,
		Filesz: size,
		Memsz:  size,
		Align:  segmentAlign,
	}
	stack := struct{ Type, Flags uint32 }{uint32(elf.PT_GNU_STACK), uint32(elf.PF_R | elf.PF_W)}
	var b bytes.Buffer
	for _, v := range []any{&hdr, &load, &stack} {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			return nil, err
		}
	}
	if b.Len() != Load {
		return nil, fmt.Errorf("elf: wrote %d header bytes, want %d", b.Len(), Load)
	}
	b.Write(prog)
	return b.Bytes(), nil
}
