package sleeper

import (
	"errors"

	"github.com/nap-k8s/nap/internal/asm"
	x "github.com/nap-k8s/nap/internal/asm/amd64"
	"github.com/nap-k8s/nap/sleeper/spec"
)

// Linux x86-64 system call numbers (native 64-bit ABI, never int 0x80).
const (
	amd64SysWrite          = 1
	amd64SysPoll           = 7
	amd64SysRtSigaction    = 13
	amd64SysNanosleep      = 35
	amd64SysClockNanosleep = 230
	amd64SysExitGroup      = 231
	amd64SysPpoll          = 271
)

// Shared by both programs.
const (
	sigTERM        = 15
	saRestorer     = 0x04000000
	nsPerSecond    = 1_000_000_000
	defaultNs      = int64(spec.Default)
	sigsetSize     = 8
	exitInvalid    = 2
	exitSignalBase = 128
	stdout         = 1
	stderr         = 2
	clockMonotonic = 1
	pollOut        = 4
	errEAGAIN      = 11
)

// The registers, named as in the manual.
var (
	rax, rcx, rdx, rsp, rbp, rsi, rdi = x.RAX, x.RCX, x.RDX, x.RSP, x.RBP, x.RSI, x.RDI
	r9, r10, r11, r12, r14            = x.R9, x.R10, x.R11, x.R12, x.R14
	eax, ecx, edx, ebx, esi, edi, ebp = x.EAX, x.ECX, x.EDX, x.EBX, x.ESI, x.EDI, x.EBP
	r9d, r10d                         = x.R9D, x.R10D
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
	"help", "entry", "term", "matched", "next_arg", "scale", "bare", "unit", "digits_done", "pad",
	"invalid", "default", "tail", "args_done", "sleep", "sleep_timespec", "slept", "done", "say",
	"write_all", "wait", "on_signal", "exit_edi",
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
//	r14  the argument read (the last)   ebp  exit status; -1 after inf until then
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
			// Signals 15 down to 1 run on_signal, which exits 128+signal (SIGKILL's call
			// fails, harmlessly). A handler (not the default action) is what makes PID 1
			// of a PID namespace hear them. x86-64 cannot deliver to a handler without
			// SA_RESTORER; on_signal never returns, so it is its own restorer. struct
			// sigaction is handler, flags, restorer, mask: the mask overlaps argc, and
			// only applies while on_signal runs, which exits.
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
			b.PUSH(x.Imm(amd64SysRtSigaction)) // rax holds the last result: -EINVAL after SIGKILL
			b.POP(rax)
			b.SYSCALL()
			b.DEC(edi)
			b.J(x.NE, "sigaction")
			// Drop the sigaction, then argc and argv[0]; each argument is popped in turn
			// (the slots left behind are free stack). With argc 0 (kernels before 5.18),
			// argv[0] is the NULL that ends argv: next_arg finds no argument.
			b.ADD(rsp, x.Imm(3*8))
			b.POP(rcx)
			b.JRCXZ("next_arg")
			b.POP(rcx)
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
			b.OR(ebp, x.Imm(-1)) // inf: negative until an invalid argument sets 2
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
			b.PUSH(rcx)
			b.MOV(esi, x.Addr("msg_invalid"))
			b.PUSH(x.Imm(len(spec.InvalidPrefix)))
			b.POP(rdx)
			b.CALL("say")
			b.MOV(rsi, r14)
			b.POP(rdx)
			b.CALL("say")
			b.MOV(esi, x.Addr("msg_default"))
			b.PUSH(x.Imm(len(spec.InvalidSuffix)))
			b.POP(rdx)
			b.CALL("say")
			b.PUSH(x.Imm(exitInvalid))
			b.POP(rbp)
		}},
		{"default", "sleep_timespec", func(b *x.Builder) { // from args_done and invalid: {10, 0}
			b.PUSH(x.Imm(0))
			b.PUSH(x.Imm(defaultNs / nsPerSecond))
		}},
		{"args_done", "sleep", func(b *x.Builder) { // from next_arg
			b.TEST(r14, r14)
			b.J(x.E, "default") // no argument at all
			b.TEST(ebp, ebp)
			b.J(x.E, "sleep")
			b.PUSH(x.Imm(-1)) // inf: the longest sleep, 2^63-1 ns, again and again
			b.POP(r12)
			b.SHR(r12, x.Imm(1))
		}},
		// One relative sleep on the monotonic clock, of r12 ns; none for a total of zero.
		{"sleep", "sleep_timespec", func(b *x.Builder) { // from args_done and slept
			b.MOV(rax, r12)
			b.TEST(rax, rax)
			b.J(x.E, "done")
			b.XOR(edx, edx)
			b.MOV(ecx, x.Imm(nsPerSecond))
			b.DIV(rcx)
			b.PUSH(rdx)
			b.PUSH(rax)
		}},
		// The timespec is on the stack. nanosleep, and where the kernel refuses it (a
		// seccomp profile), clock_nanosleep(CLOCK_MONOTONIC, 0, ts, NULL), then
		// ppoll(_, 0, ts, NULL): a refused call never ends the delay early. A stop and
		// continue does not end any of them early: the kernel restarts them itself with
		// the original expiry. The remaining time (rsi or r10) is NULL.
		{"sleep_timespec", "", func(b *x.Builder) { // also from default: {10, 0}
			b.PUSH(rsp)
			b.POP(rdi)
			b.PUSH(x.Imm(amd64SysNanosleep))
			b.POP(rax)
			b.MOV(ebx, x.Imm(amd64SysClockNanosleep|amd64SysPpoll<<16)) // the ways after it
			b.Label("try")
			b.PUSH(rsp)
			b.POP(rdx)
			b.XOR(esi, esi)
			b.XOR(r10d, r10d)
			b.SYSCALL()
			b.TEST(eax, eax)
			b.J(x.E, "slept")
			b.MOV(esi, x.Addr("msg_refused"))
			b.PUSH(x.Imm(len(spec.Refused)))
			b.POP(rdx)
			b.CALL("say")
			b.MOV(eax, ebx) // the next way, 0 when there is none
			b.CWDE()
			b.SHR(ebx, x.Imm(16))
			b.PUSH(x.Imm(clockMonotonic)) // ppoll ignores it: it polls no file
			b.POP(rdi)
			b.TEST(eax, eax)
			b.J(x.NE, "try")
			b.JMP("exit_edi") // every way refused: exit 1 (edi), said on stderr
		}},
		{"slept", "done", func(b *x.Builder) { // from sleep_timespec
			b.TEST(ebp, ebp)
			b.J(x.S, "sleep") // inf
		}},
		{"done", "exit_edi", func(b *x.Builder) { // from sleep and slept
			b.MOV(edi, ebp)
		}},
		{"help", "exit_edi", func(b *x.Builder) { // from matched
			b.PUSH(x.Imm(stdout))
			b.POP(rdi)
			b.MOV(esi, x.Addr("usage"))
			b.PUSH(x.Imm(len(spec.Usage)))
			b.POP(rdx)
			b.CALL("write_all") // keeps edi
			b.DEC(edi)          // exit 0
		}},
		// say writes rdx bytes from rsi to stderr; write_all to the descriptor in edi.
		// A short write goes on with the rest; a full non-blocking pipe is waited for
		// with poll (as the reference's runtime does); an error gives up the message,
		// never the sleep.
		{"say", "write_all", func(b *x.Builder) {
			b.PUSH(x.Imm(stderr))
			b.POP(rdi)
		}},
		{"write_all", "", func(b *x.Builder) {
			b.PUSH(x.Imm(amd64SysWrite))
			b.POP(rax)
			b.SYSCALL()
			b.CMP(rax, x.Imm(-errEAGAIN))
			b.J(x.E, "wait")
			b.TEST(rax, rax)
			b.J(x.LE, "written")
			b.ADD(rsi, rax)
			b.SUB(rdx, rax)
			b.J(x.NE, "write_all")
			b.Label("written")
			b.RET()
		}},
		{"wait", "write_all", func(b *x.Builder) { // poll({fd, POLLOUT}, 1, -1)
			b.PUSH(rdx)
			b.PUSH(rsi)
			b.PUSH(rdi) // struct pollfd: fd, then events
			b.MOV(x.Byte(rsp, 4), x.Imm(pollOut))
			b.PUSH(rsp)
			b.POP(rdi)
			b.PUSH(x.Imm(1))
			b.POP(rsi)
			b.PUSH(x.Imm(-1))
			b.POP(rdx)
			b.PUSH(x.Imm(amd64SysPoll))
			b.POP(rax)
			b.SYSCALL()
			b.POP(rdi) // the fd in edi, POLLOUT above it: the kernel reads an int
			b.POP(rsi)
			b.POP(rdx)
		}},
		// on_signal is the handler of signals 1 to 15: the signal number comes in edi.
		{"on_signal", "exit_edi", func(b *x.Builder) {
			b.SUB(edi, x.Imm(-exitSignalBase))
		}},
		{"exit_edi", "", func(b *x.Builder) { // also from done and help
			b.MOV(eax, x.Imm(amd64SysExitGroup))
			b.SYSCALL()
			// Only a seccomp profile that denies exit_group returns here: nothing may run
			// on (the next block would read the environment as durations).
			b.UD2()
		}},
	}
}
