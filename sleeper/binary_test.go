package sleeper

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nap-k8s/nap/internal/asm"
	"github.com/nap-k8s/nap/internal/asm/amd64"
	napelf "github.com/nap-k8s/nap/internal/elf"
	"github.com/nap-k8s/nap/internal/testenv"
	"github.com/nap-k8s/nap/internal/testutil/golden"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// TestBinaryELF reads each binary back with debug/elf: a static ELF64 executable for
// the right machine, one R+X PT_LOAD over the whole file at a 64 KiB-aligned address, a
// non-executable stack with zero sizes and alignment, no interpreter, no sections, the
// data from the end of the headers' used fields, and the entry in the code that follows
// the data.
func TestBinaryELF(t *testing.T) {
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, arch := range nap.Arches {
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
			// Of PT_GNU_STACK loaders read the type and the flags; the rest is the data.
			if stack.Type != elf.PT_GNU_STACK || stack.Flags != elf.PF_R|elf.PF_W {
				t.Errorf("PT_GNU_STACK %+v, want type %v flags %v", stack, elf.PT_GNU_STACK, elf.PF_R|elf.PF_W)
			}
			obj, err := Object(arch)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b[napelf.Load:], obj.Code) || obj.Base != napelf.Base+napelf.Load || obj.Labels["msg_refused"] != obj.Base {
				t.Errorf("the program does not start at %#x with the data", napelf.Load)
			}
			if stack.Filesz != 0 || stack.Memsz != 0 || stack.Align != 0 {
				t.Errorf("PT_GNU_STACK sizes %d, %d and alignment %d, want 0 as linkers write them", stack.Filesz, stack.Memsz, stack.Align)
			}
			if f.Entry != obj.Labels["entry"] || f.Entry < obj.Labels["code"] {
				t.Errorf("entry %#x, want the label entry %#x, in the code from %#x", f.Entry, obj.Labels["entry"], obj.Labels["code"])
			}
			again, _ := Binary(arch)
			if !bytes.Equal(b, again) {
				t.Error("two builds differ")
			}
		})
	}
}

// TestBinarySize holds each binary to its exact size (a change shows up here and in the
// README) and to its budget.
func TestBinarySize(t *testing.T) {
	for _, arch := range nap.Arches {
		b, err := Binary(arch)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != Sizes[arch] {
			t.Errorf("%s: %d bytes, Sizes says %d: update Sizes and the README", arch, len(b), Sizes[arch])
		}
		if len(b) > Budget[arch] {
			t.Errorf("%s: %d bytes, over the %d-byte budget by %d: trim it, or raise Budget and say why in the note", arch, len(b), Budget[arch], len(b)-Budget[arch])
		} else {
			t.Logf("%s: %d bytes, %d under the %d-byte budget", arch, len(b), Budget[arch]-len(b), Budget[arch])
		}
	}
}

// TestListingGolden keeps the assembled programs in testdata, so that a review sees every
// byte that changes. Refresh with: go test ./sleeper -run TestListingGolden -update
func TestListingGolden(t *testing.T) {
	for _, arch := range nap.Arches {
		got, err := Listing(arch)
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "nap-"+arch+".lst"), []byte(got))
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
	for i, last := 0, false; !last; {
		n := int(words[i])
		word := string(words[i+1 : i+1+n])
		k, c := int(words[i+1+n]), int64(words[i+2+n])
		i += n + 3
		seen[word] = true
		if last = n == 0; last && i != len(words) {
			t.Errorf("%d bytes after the end of the table", len(words)-i)
		}
		if c == 0 {
			continue
		}
		if word == nap.FlagLive+"\x00" { // a keyword: k 0 as inf's, c keywordLive
			if k != 0 || c != keywordLive {
				t.Errorf("%q: k %d, c %d; want 0, %d", word, k, c, keywordLive)
			}
			continue
		}
		if word != "" && word[len(word)-1] == 0 { // a flag: k 2 (3: --allow), c the offset of its slot
			flag := word[:len(word)-1]
			wantK := map[bool]int{true: flagBackground, false: flagAdaptive}[flag == nap.FlagAllow]
			if want := map[string]int64{nap.FlagQuiet: slotQuiet, nap.FlagMax: slotMax, nap.FlagAllow: slotAllow, nap.FlagRequests: slotRequests}[flag]; k != wantK || c != want {
				t.Errorf("flag %q: k %d, c %d; want %d, %d", word, k, c, wantK, want)
			}
			continue
		}
		ns := c
		for range k {
			ns *= 10
		}
		name := word
		if word == "" { // the end: a bare number counts seconds
			name = "s"
		}
		if ns != nap.Units()[name] {
			t.Errorf("%q: c*10^k = %d, want %d", word, ns, nap.Units()[name])
		}
		for tt := int64(0); tt <= c*9+c-1; tt++ {
			if (tt*carryMul)>>carryShift != tt/10 {
				t.Fatalf("carry step %d: (t*%d)>>%d != t/10", tt, carryMul, carryShift)
			}
		}
	}
	for _, w := range []string{"ns", "us", "ms", "s", "m", "h", "", "inf\x00", "infinity\x00", "-h\x00", "--help\x00",
		nap.FlagQuiet + "\x00", nap.FlagMax + "\x00", nap.FlagAllow + "\x00", nap.FlagRequests + "\x00", nap.FlagLive + "\x00"} {
		if !seen[w] {
			t.Errorf("word %q missing", w)
		}
	}
}

// TestBlockLayout holds amd64Layout to its claim: no move of one block to another place,
// and no swap of two, makes the program shorter. After a change to a block, it names a
// better order if there is one.
func TestBlockLayout(t *testing.T) {
	words, err := wordTable()
	if err != nil {
		t.Fatal(err)
	}
	size := func(order []asm.Label) int {
		var b amd64.Builder
		data(&b, words, 1)
		layout(&b, amd64Blocks(), order)
		obj, err := b.Assemble(napelf.Base + napelf.Load)
		if err != nil {
			return math.MaxInt // a branch that has no long form is out of reach
		}
		return len(obj.Code)
	}
	best := size(amd64Layout)
	if best == math.MaxInt {
		t.Fatal("amd64Layout does not assemble")
	}
	n := len(amd64Layout)
	tried := 0
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			moved := slices.Delete(slices.Clone(amd64Layout), i, i+1)
			moved = slices.Insert(moved, j, amd64Layout[i])
			swapped := slices.Clone(amd64Layout)
			swapped[i], swapped[j] = swapped[j], swapped[i]
			for _, order := range [][]asm.Label{moved, swapped} {
				tried++
				if s := size(order); s < best {
					t.Fatalf("%d bytes with the order %q, %d with amd64Layout", s, order, best)
				}
			}
		}
	}
	t.Logf("%d orders near amd64Layout tried: none shorter than %d bytes", tried, best)
}

// TestLayoutErrors: a layout that names a block twice or leaves one out does not
// assemble, and says which block.
func TestLayoutErrors(t *testing.T) {
	for name, order := range map[string][]asm.Label{
		"placed twice": append(slices.Clone(amd64Layout), amd64Layout[0]),
		"left out":     amd64Layout[1:],
		"unknown":      append(slices.Clone(amd64Layout), "nowhere"),
	} {
		var b amd64.Builder
		layout(&b, amd64Blocks(), order)
		_, err := b.Assemble(napelf.Base + napelf.Load)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}

// TestELFLint: elfutils' strict checker accepts both binaries as they are (it rejected
// PT_GNU_STACK's alignment when program data filled it; security scanners read the
// same headers).
func TestELFLint(t *testing.T) {
	lint := testenv.LookPath(t, "eu-elflint", "prereqs")
	for _, arch := range nap.Arches {
		b, err := Binary(arch)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "nap-"+arch)
		if err := os.WriteFile(path, b, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(lint, "--strict", "--quiet", path).CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Errorf("eu-elflint --strict --quiet nap-%s: %v\n%s", arch, err, out)
		}
	}
}
