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

// Free is how many of the program's first bytes double as PT_GNU_STACK's p_offset,
// p_vaddr and p_paddr, which nothing checks. The next 24 bytes, p_filesz, p_memsz and
// p_align, must be zero, as linkers write them: eu-elflint and other readers of headers
// (security scanners among them) check sizes and alignment.
const Free = 24

// stackZero is the end of the fields that must be zero.
const stackZero = progHeaderSize - stackUsed

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
	// debug/elf (and so Go tools) reads p_offset as a signed number: not negative.
	if top := prog[7]; top >= 0x80 {
		return nil, fmt.Errorf("elf: program byte 7 (%#x) would make PT_GNU_STACK's p_offset negative", top)
	}
	for i, c := range prog[Free:stackZero] {
		if c != 0 {
			return nil, fmt.Errorf("elf: program byte %d (%#x) is in PT_GNU_STACK's p_filesz, p_memsz or p_align, which must be zero", Free+i, c)
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
