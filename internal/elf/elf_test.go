package elf

import (
	"bytes"
	"debug/elf"
	"testing"
)

func TestExecutable(t *testing.T) {
	code := []byte{0x90, 0x90, 0xC3}
	b, err := Executable(elf.EM_X86_64, code, Base+HeaderSize+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != HeaderSize+len(code) || !bytes.Equal(b[HeaderSize:], code) {
		t.Fatalf("%d bytes, want the headers and then the code", len(b))
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if f.Entry != Base+HeaderSize+1 || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
		t.Errorf("header %+v", f.FileHeader)
	}
	data, err := f.Progs[0].Open().Read(make([]byte, 4))
	if err != nil || data != 4 {
		t.Errorf("the PT_LOAD segment does not read back the file: %v", err)
	}
}

func TestExecutableErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		m     elf.Machine
		entry uint64
	}{
		"unsupported machine": {elf.EM_386, Base + HeaderSize},
		"entry before code":   {elf.EM_AARCH64, Base},
		"entry after code":    {elf.EM_AARCH64, Base + HeaderSize + 3},
	} {
		if _, err := Executable(tc.m, []byte{1, 2, 3}, tc.entry); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
