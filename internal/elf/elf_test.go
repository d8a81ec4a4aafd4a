package elf

import (
	"bytes"
	"debug/elf"
	"fmt"
	"strings"
	"testing"
)

func TestExecutable(t *testing.T) {
	// 24 bytes of data in PT_GNU_STACK's offset and addresses, its zero sizes, then code.
	prog := append([]byte("ASCII data, then zeros:\n"), make([]byte, 24)...)
	prog = append(prog, 0x90, 0x90, 0xc3)
	entry := uint64(Base + Load + len(prog) - 3)
	b, err := Executable(elf.EM_X86_64, prog, entry)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != Load+len(prog) || !bytes.Equal(b[Load:], prog) {
		t.Fatalf("%d bytes, want the headers, then the program from %d", len(b), Load)
	}
	// Short programs are padded to the end of PT_GNU_STACK.
	if short, err := Executable(elf.EM_X86_64, []byte{0xc3}, Base+Load); err != nil || len(short) != Load+48 {
		t.Errorf("a 1-byte program: %d bytes, %v; want %d", len(short), err, Load+48)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if f.Entry != entry || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC || len(f.Progs) != 2 {
		t.Errorf("header %+v", f.FileHeader)
	}
	if s := f.Progs[1]; s.Type != elf.PT_GNU_STACK || s.Flags != elf.PF_R|elf.PF_W {
		t.Errorf("PT_GNU_STACK %+v", s.ProgHeader)
	}
	load := f.Progs[0]
	got := make([]byte, load.Filesz)
	if _, err := load.Open().Read(got); err != nil || !bytes.Equal(got, b) || load.Vaddr != Base {
		t.Errorf("the PT_LOAD segment does not map the whole file at %#x: %v", Base, err)
	}
}

func TestExecutableErrors(t *testing.T) {
	code := bytes.Repeat([]byte{1}, 64)
	clear(code[Free:48])
	signed := append([]byte(nil), code...)
	signed[7] = 0x80 // the top byte of PT_GNU_STACK's p_offset
	for _, field := range []struct {
		name string
		off  int
	}{{"p_filesz", 24}, {"p_memsz", 32}, {"p_align", 40}} {
		// One byte of a field that must be zero; the error names the byte.
		b := append([]byte(nil), code...)
		b[field.off+1] = 0x10
		if _, err := Executable(elf.EM_X86_64, b, Base+Load); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("byte %d", field.off+1)) {
			t.Errorf("%s not zero: error %v", field.name, err)
		}
	}
	for name, tc := range map[string]struct {
		m     elf.Machine
		prog  []byte
		entry uint64
		want  string
	}{
		"unsupported machine": {elf.EM_386, code, Base + Load, "not supported"},
		"entry before code":   {elf.EM_AARCH64, code, Base, "outside"},
		"entry after code":    {elf.EM_AARCH64, code, Base + Load + 64, "outside"},
		"negative field":      {elf.EM_X86_64, signed, Base + Load, "p_offset"},
	} {
		_, err := Executable(tc.m, tc.prog, tc.entry)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, tc.want)
		}
	}
}
