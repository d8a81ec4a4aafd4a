package sleeper

import (
	"errors"

	"github.com/nap-k8s/nap/internal/asm"
	x "github.com/nap-k8s/nap/internal/asm/amd64"
	"github.com/nap-k8s/nap/sleeper/spec"
)

// Linux x86-64 system call numbers (native 64-bit ABI, never int 0x80).
const (
	amd64SysWrite       = 1
	amd64SysRtSigaction = 13
	amd64SysPause       = 34
	amd64SysNanosleep   = 35
	amd64SysWritev      = 20
	amd64SysExitGroup   = 231
)

// Shared by both programs.
const (
	sigINT         = 2
	sigTERM        = 15
	saRestorer     = 0x04000000
	nsPerSecond    = 1_000_000_000
	defaultNs      = int64(spec.Default)
	sigsetSize     = 8
	exitInvalid    = 2
	exitSignalBase = 128
	stdout         = 1
	stderr         = 2
)

// The registers, named as in the manual.
var (
	rax, rcx, rdx, rsp, rbp, rsi, rdi = x.RAX, x.RCX, x.RDX, x.RSP, x.RBP, x.RSI, x.RDI
	r9, r10, r11, r12, r14            = x.R9, x.R10, x.R11, x.R12, x.R14
	eax, ecx, edx, ebx, esi, edi, ebp = x.EAX, x.ECX, x.EDX, x.EBX, x.ESI, x.EDI, x.EBP
	r9d                               = x.R9D
	al, bl, bh                        = x.AL, x.BL, x.BH
)

// block is a run of code entered at its label. It goes on at next, if set: the layout
// adds a jmp unless the block placed after it is that one.
type block struct {
	label asm.Label
	next  asm.Label
	code  func(b *x.Builder)
}

// amd64Layout is the order of programAMD64's blocks in the file: the one that makes the
// program shortest of those tried (a search over orders, each measured by the
// assembler's branch relaxation). Every branch takes its 2-byte form. TestBlockLayout
// fails if moving or swapping blocks would save a byte.
var amd64Layout = []asm.Label{
	"forever", "on_signal", "args_done", "sleep", "sleep_timespec", "exit_edi", "entry",
	"next_arg", "term", "default", "help", "matched", "scale", "bare", "invalid",
	"digits_done", "pad", "unit", "tail",
}

// programAMD64 writes nap for x86-64: the data (see data), then the code, in the order
// of amd64Layout.
func programAMD64(b *x.Builder, words []byte) {
	data(b, words, 1)
	layout(b, amd64Blocks(), amd64Layout)
}

// layout places the blocks in order, with a jmp after each block whose next is not the
// block placed after it.
func layout(b *x.Builder, blocks []block, order []asm.Label) {
	byLabel := map[asm.Label]block{}
	for _, bl := range blocks {
		byLabel[bl.label] = bl
	}
	for i, l := range order {
		bl, ok := byLabel[l]
		if !ok {
			b.Emit(asm.Inst{Text: string(l)}, errors.New("no such block, or placed twice"))
			continue
		}
		delete(byLabel, l)
		b.Label(bl.label)
		bl.code(b)
		if bl.next != "" && (i+1 == len(order) || order[i+1] != bl.next) {
			b.JMP(bl.next)
		}
	}
	for l := range byLabel {
		b.Emit(asm.Inst{Text: string(l)}, errors.New("block left out of the layout"))
	}
}

// amd64Blocks is nap for x86-64, block by block in reading order. Register use:
//
//	rsp  the next argv slot            r12  total nanoseconds
//	r14  the argument being read       ebp  exit status; 1 after inf until then
//	per term: r10 number start, r11 number end, rdi text, rsi word table, bl k, r9 c
//	(the unit is c*10^k ns), bh 1 after the dot, rdx the number, rcx digit count then
//	carry. rax holds a byte (al) while a number is read: add rdx, rax needs the rest 0.
func amd64Blocks() []block {
	return []block{
		{"entry", "next_arg", func(b *x.Builder) {
			// Linux starts a process with every general register zero (x86-64
			// ELF_PLAT_INIT; rax is execve's result, 0), so the total (r12), the exit
			// status (rbp), the argument (r14) and oldact (rdx) start 0.
			//
			// SIGINT and SIGTERM run on_signal, which exits 128+signal. A handler (not the
			// default action) is what makes PID 1 of a PID namespace hear them. x86-64
			// cannot deliver to a handler without SA_RESTORER; on_signal never returns, so
			// it is its own restorer. struct sigaction is handler, flags, restorer, mask:
			// the mask overlaps argc, and only applies while on_signal runs, which exits.
			b.MOV(ecx, x.Addr("on_signal"))
			b.PUSH(rcx)
			b.PUSH(x.Imm(saRestorer))
			b.PUSH(rcx)
			b.PUSH(rsp)
			b.POP(rsi)
			b.PUSH(x.Imm(sigsetSize))
			b.POP(r10)
			b.PUSH(x.Imm(sigTERM))
			b.POP(rdi)
			b.Label("sigaction")
			b.MOV(al, x.Imm(amd64SysRtSigaction)) // rax is 0: at entry, and rt_sigaction's result
			b.SYSCALL()
			b.SUB(edi, x.Imm(sigTERM-sigINT)) // SIGTERM, then SIGINT
			b.J(x.NS, "sigaction")
			// Drop the sigaction, argc and argv[0]; each argument is popped in turn (the
			// slots left behind are free stack).
			b.ADD(rsp, x.Imm(5*8))
		}},
		{"next_arg", "term", func(b *x.Builder) { // from entry, matched and scale
			b.POP(rsi)
			b.TEST(rsi, rsi)
			b.J(x.E, "args_done")
			b.MOV(r14, rsi)
		}},
		// From next_arg and scale. A term: a number [0-9.]* and a word from the table.
		{"term", "", func(b *x.Builder) {
			b.MOV(r10, rsi)
			b.Label("scan")
			b.LODSB()
			b.SUB(al, x.Imm('0'))
			b.CMP(al, x.Imm(9))
			b.J(x.BE, "scan")
			b.CMP(al, x.Imm('.'-'0'))
			b.J(x.E, "scan")
			b.LEA(r11, x.Qword(rsi, -1))
			b.MOV(esi, x.Addr("words"))
			b.Label("word")
			b.LODSB()
			b.MOVZX(ecx, al)
			b.JRCXZ("bare") // the end of the table
			b.MOV(rdi, r11)
			b.REPE_CMPSB() // stops at the argument's NUL at the latest
			b.J(x.E, "matched")
			b.ADD(esi, ecx)
			b.LODSW() // skip k and c
			b.JMP("word")
		}},
		{"matched", "next_arg", func(b *x.Builder) { // rdi: after the word; rsi: its k and c
			b.CMP(x.Byte(rdi, -1), x.Imm(0))
			b.J(x.NE, "unit")
			// A keyword (a word ending in NUL): the whole argument, no number.
			b.CMP(r11, r14)
			b.J(x.NE, "invalid")
			b.CMP(x.Byte(rsi, 0), x.Imm(0))
			b.J(x.NE, "help")
			b.INC(ebp) // inf
		}},
		// From word: no word after the number. It counts seconds (the table ends with their
		// k and c, where rsi is) and must be the whole argument: text after it is read as
		// another term, which finds no word either and is not the whole argument.
		{"bare", "unit", func(b *x.Builder) {
			b.MOV(rdi, r11)
			b.CMP(r10, r14)
			b.J(x.NE, "invalid")
		}},
		// From matched (a unit) or bare. Head: the digits down to whole nanoseconds,
		// checked acc = acc*10 + digit.
		{"unit", "", func(b *x.Builder) {
			b.MOVZX(ebx, x.Byte(rsi, 0)) // k; bh = 0
			b.MOVZX(r9d, x.Byte(rsi, 1))
			b.PUSH(rdi)
			b.MOV(rsi, r10)
			b.XOR(eax, eax)
			b.CDQ() // rcx is 0 after a match
			b.Label("digit")
			b.CMP(rsi, r11)
			b.J(x.AE, "digits_done")
			b.LODSB()
			b.SUB(al, x.Imm('0'))
			b.J(x.NS, "head")
			b.BTS(ebx, 8) // the dot (bh); a second one is invalid
			b.J(x.B, "invalid")
			b.JMP("digit")
			b.Label("head")
			b.SUB(bl, bh) // after the dot each digit uses one power of ten of the unit
			b.J(x.L, "tail")
			b.INC(ecx)
			b.IMUL3(rdx, rdx, x.Imm(10))
			b.J(x.O, "invalid")
			b.ADD(rdx, rax)
			b.J(x.O, "invalid")
			b.JMP("digit")
		}},
		{"digits_done", "pad", func(b *x.Builder) { // from unit
			b.JRCXZ("invalid") // no digit at all
			b.XOR(ecx, ecx)    // no carry
		}},
		{"pad", "", func(b *x.Builder) { // unused powers of ten scale the unit: c*10^k
			b.DEC(bl)
			b.J(x.S, "scale")
			b.IMUL3(r9, r9, x.Imm(10))
			b.JMP("pad")
		}},
		// From head. Tail: the digits below a nanosecond. floor(c * 0.tail) is the carry
		// of the long multiplication c*tail, computed right to left, down to the first
		// tail digit (rsi-1). Then pad, where bl is -1, goes straight on to scale (which
		// is further away).
		{"tail", "pad", func(b *x.Builder) {
			b.XOR(ecx, ecx)
			b.Label("tail_digit")
			b.DEC(r11)
			b.MOVZX(eax, x.Byte(r11, 0))
			b.SUB(eax, x.Imm('0'))
			b.J(x.S, "invalid") // a second dot
			b.IMUL(eax, r9d)
			b.ADD(eax, ecx)
			b.IMUL3(ecx, eax, x.Imm(carryMul)) // carry = t/10
			b.SHR(ecx, x.Imm(carryShift))
			b.CMP(r11, rsi)
			b.J(x.AE, "tail_digit")
		}},
		// From unit or tail: total += number*c*10^k + carry; the argument goes on with
		// another term, or ends.
		{"scale", "next_arg", func(b *x.Builder) {
			b.IMUL(rdx, r9)
			b.J(x.O, "invalid")
			b.ADD(rdx, rcx)
			b.J(x.O, "invalid")
			b.POP(rsi)
			b.ADD(r12, rdx)
			b.J(x.O, "invalid")
			b.CMP(x.Byte(rsi, 0), x.Imm(0))
			b.J(x.NE, "term")
		}},
		{"invalid", "default", func(b *x.Builder) { // from the checks above
			b.MOV(rdi, r14) // strlen(arg)
			b.XOR(eax, eax)
			b.PUSH(x.Imm(-1))
			b.POP(rcx)
			b.REPNE_SCASB()
			b.NOT(ecx)
			b.DEC(ecx)
			// writev(2, [prefix, arg, suffix], 3)
			b.PUSH(x.Imm(len(spec.InvalidSuffix)))
			b.PUSH(x.Addr("msg_default"))
			b.PUSH(rcx)
			b.PUSH(r14)
			b.PUSH(x.Imm(len(spec.InvalidPrefix)))
			b.PUSH(x.Addr("msg_invalid"))
			b.PUSH(x.Imm(exitInvalid))
			b.POP(rbp)
			b.MOV(edi, ebp) // stderr is 2 as well
			b.PUSH(rsp)
			b.POP(rsi)
			b.PUSH(x.Imm(3))
			b.POP(rdx)
			b.PUSH(x.Imm(amd64SysWritev))
			b.POP(rax)
			b.SYSCALL()
		}},
		{"default", "sleep_timespec", func(b *x.Builder) { // from args_done and invalid: {10, 0}
			b.PUSH(x.Imm(0))
			b.PUSH(x.Imm(defaultNs / nsPerSecond))
		}},
		{"args_done", "sleep", func(b *x.Builder) { // from next_arg
			b.TEST(r14, r14)
			b.J(x.E, "default") // no argument at all
			b.TEST(ebp, ebp)
			b.J(x.NE, "forever") // inf
		}},
		{"forever", "forever", func(b *x.Builder) { // from args_done: until a signal
			b.PUSH(x.Imm(amd64SysPause))
			b.POP(rax)
			b.SYSCALL()
		}},
		// One relative nanosleep on the monotonic clock. A stop/continue does not end it
		// early: the kernel restarts it itself with the original expiry. rsi, the remaining
		// time, is NULL or free stack: it is only written when a handler interrupts the
		// sleep, and the only handler exits.
		{"sleep", "sleep_timespec", func(b *x.Builder) {
			b.XCHG(rax, r12)
			b.XOR(edx, edx)
			b.MOV(ecx, x.Imm(nsPerSecond))
			b.DIV(rcx)
			b.PUSH(rdx)
			b.PUSH(rax)
		}},
		{"sleep_timespec", "exit_edi", func(b *x.Builder) { // also from default: {10, 0}
			b.PUSH(rsp)
			b.POP(rdi)
			b.PUSH(x.Imm(amd64SysNanosleep))
			b.POP(rax)
			b.SYSCALL()
			b.MOV(edi, ebp)
		}},
		{"help", "exit_edi", func(b *x.Builder) { // from matched
			b.PUSH(x.Imm(stdout))
			b.POP(rdi)
			b.MOV(esi, x.Addr("usage"))
			b.PUSH(x.Imm(len(spec.Usage)))
			b.POP(rdx)
			b.MOV(eax, edi) // write
			b.SYSCALL()
			b.DEC(edi) // exit 0
		}},
		// on_signal is the SIGINT/SIGTERM handler: the signal number comes in edi.
		{"on_signal", "exit_edi", func(b *x.Builder) {
			b.SUB(edi, x.Imm(-exitSignalBase))
		}},
		{"exit_edi", "", func(b *x.Builder) { // also from sleep_timespec and help
			b.MOV(eax, x.Imm(amd64SysExitGroup))
			b.SYSCALL()
			// Only a seccomp profile that denies exit_group returns here: nothing may run
			// on (the next block would read the environment as durations).
			b.UD2()
		}},
	}
}
