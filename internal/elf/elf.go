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

// HeaderSize is the size of the file header and the two program headers; the code starts
// at this offset, at address Base+HeaderSize.
const HeaderSize = elfHeaderSize + 2*progHeaderSize

const (
	elfHeaderSize  = 64
	progHeaderSize = 56
	segmentAlign   = 0x10000
)

// Executable returns the bytes of an executable for machine whose code (assembled for
// address Base+HeaderSize) starts running at entry.
func Executable(machine elf.Machine, code []byte, entry uint64) ([]byte, error) {
	switch machine {
	case elf.EM_X86_64, elf.EM_AARCH64:
	default:
		return nil, fmt.Errorf("elf: machine %v is not supported", machine)
	}
	size := uint64(HeaderSize + len(code))
	if entry < Base+HeaderSize || entry >= Base+size {
		return nil, fmt.Errorf("elf: entry %#x is outside the code", entry)
	}
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
	stack := elf.Prog64{
		Type:  uint32(elf.PT_GNU_STACK),
		Flags: uint32(elf.PF_R | elf.PF_W),
		Align: 16,
	}
	var b bytes.Buffer
	for _, v := range []any{&hdr, &load, &stack} {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			return nil, err
		}
	}
	if b.Len() != HeaderSize {
		return nil, fmt.Errorf("elf: wrote %d header bytes, want %d", b.Len(), HeaderSize)
	}
	b.Write(code)
	return b.Bytes(), nil
}
