package sleeper

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"testing"

	napelf "github.com/nap-k8s/nap/internal/elf"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestBinaryELF reads each binary back with debug/elf: a static ELF64 executable for
// the right machine, one R+X PT_LOAD over the whole file at a 64 KiB-aligned address, a
// non-executable stack, no interpreter, no sections, the entry inside the code.
func TestBinaryELF(t *testing.T) {
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, arch := range Arches {
		t.Run(arch, func(t *testing.T) {
			b, err := Binary(arch)
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.NewFile(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			want := elf.FileHeader{Class: elf.ELFCLASS64, Data: elf.ELFDATA2LSB, Version: elf.EV_CURRENT, OSABI: elf.ELFOSABI_NONE, ByteOrder: binary.LittleEndian, Type: elf.ET_EXEC, Machine: machines[arch], Entry: f.Entry}
			if f.FileHeader != want {
				t.Errorf("header %+v, want %+v", f.FileHeader, want)
			}
			if len(f.Sections) != 0 || len(f.Progs) != 2 {
				t.Fatalf("%d sections and %d program headers, want 0 and 2", len(f.Sections), len(f.Progs))
			}
			load, stack := f.Progs[0].ProgHeader, f.Progs[1].ProgHeader
			wantLoad := elf.ProgHeader{Type: elf.PT_LOAD, Flags: elf.PF_R | elf.PF_X, Off: 0, Vaddr: napelf.Base, Paddr: napelf.Base, Filesz: uint64(len(b)), Memsz: uint64(len(b)), Align: 0x10000}
			if load != wantLoad {
				t.Errorf("PT_LOAD %+v, want %+v", load, wantLoad)
			}
			if want := (elf.ProgHeader{Type: elf.PT_GNU_STACK, Flags: elf.PF_R | elf.PF_W, Align: 16}); stack != want {
				t.Errorf("PT_GNU_STACK %+v, want %+v", stack, want)
			}
			if f.Entry != napelf.Base+napelf.HeaderSize {
				t.Errorf("entry %#x, want the first code byte %#x", f.Entry, napelf.Base+napelf.HeaderSize)
			}
			again, _ := Binary(arch)
			if !bytes.Equal(b, again) {
				t.Error("two builds differ")
			}
		})
	}
}

// TestBinarySize holds each binary to its exact size (a change shows up here and in the
// README) and reports it against the budget.
func TestBinarySize(t *testing.T) {
	for _, arch := range Arches {
		b, err := Binary(arch)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != Sizes[arch] {
			t.Errorf("%s: %d bytes, Sizes says %d: update Sizes and the README", arch, len(b), Sizes[arch])
		}
		if len(b) > Budget[arch] {
			t.Logf("%s: %d bytes, over the %d-byte budget by %d", arch, len(b), Budget[arch], len(b)-Budget[arch])
		} else {
			t.Logf("%s: %d bytes, %d under the %d-byte budget", arch, len(b), Budget[arch]-len(b), Budget[arch])
		}
	}
}

// TestListingGolden keeps the assembled programs in testdata, so that a review sees every
// byte that changes. Refresh with: go test ./sleeper -run TestListingGolden -update
func TestListingGolden(t *testing.T) {
	for _, arch := range Arches {
		got, err := Listing(arch)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "nap-"+arch+".lst")
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s differs from the program; rerun with -update after review", path)
		}
	}
}

// TestWordTable checks the table the binaries read against the specification.
func TestWordTable(t *testing.T) {
	words, err := wordTable()
	if err != nil {
		t.Fatal(err)
	}
	// Every unit's c*10^k is its length, and every carry step t = c*9+carry stays where
	// (t*carryMul)>>carryShift == t/10.
	seen := map[string]bool{}
	for i := 0; words[i] != 0; {
		n := int(words[i])
		word := string(words[i+1 : i+1+n])
		k, c := int(words[i+1+n]), int64(words[i+2+n])
		i += n + 3
		seen[word] = true
		if c == 0 {
			continue
		}
		ns := c
		for range k {
			ns *= 10
		}
		name := word
		if word == "\x00" {
			name = "s"
		}
		if ns != unitNs[name] {
			t.Errorf("%q: c*10^k = %d, want %d", word, ns, unitNs[name])
		}
		for tt := int64(0); tt <= c*9+c-1; tt++ {
			if (tt*carryMul)>>carryShift != tt/10 {
				t.Fatalf("carry step %d: (t*%d)>>%d != t/10", tt, carryMul, carryShift)
			}
		}
	}
	for _, w := range []string{"ns", "us", "ms", "s", "m", "h", "\x00", "inf\x00", "infinity\x00", "-h\x00", "--help\x00"} {
		if !seen[w] {
			t.Errorf("word %q missing", w)
		}
	}
}
