package sleeper

import x "github.com/nap-k8s/nap/internal/asm/amd64"

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
	defaultNs      = int64(Default)
	sigsetSize     = 8
	exitInvalid    = 2
	exitSignalBase = 128
	stdout         = 1
	stderr         = 2
)

// The registers, named as in the manual.
var (
	rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi = x.RAX, x.RCX, x.RDX, x.RBX, x.RSP, x.RBP, x.RSI, x.RDI
	r8, r9, r10, r11, r12, r13, r14, r15   = x.R8, x.R9, x.R10, x.R11, x.R12, x.R13, x.R14, x.R15
	eax, ecx, edx, esi, edi, ebp           = x.EAX, x.ECX, x.EDX, x.ESI, x.EDI, x.EBP
	r8d, r9d, r15d                         = x.R8D, x.R9D, x.R15D
	al                                     = x.AL
)

// programAMD64 writes nap for x86-64. Register use:
//
//	rsp  the next argv slot            r12  total nanoseconds
//	r14  the argument being read       r13  non-zero after inf
//	rbp  exit status                   r15  argc
//	per term: r10 number start, r11 number end, rsi text, rdi word table, r8 k, r9 c
//	(the unit is c*10^k ns), rdx the number, rcx digit count then carry, edi 1 after
//	the dot.
func programAMD64(b *x.Builder, words []byte) {
	b.Label("entry")
	// Linux starts a process with every general register zero (x86-64 ELF_PLAT_INIT), so
	// the total (r12), the inf flag (r13), the exit status (rbp) and oldact (rdx) start 0.
	//
	// SIGINT and SIGTERM run on_signal, which exits 128+signal. A handler (not the
	// default action) is what makes PID 1 of a PID namespace hear them. x86-64 cannot
	// deliver to a handler without SA_RESTORER; on_signal never returns, so it is its own
	// restorer. struct sigaction is handler, flags, restorer, mask: the mask overlaps argc,
	// and only applies while on_signal runs, which exits at once.
	b.LEA(rax, x.RIP("on_signal"))
	b.PUSH(rax)
	b.PUSH(x.Imm(saRestorer))
	b.PUSH(rax)
	b.MOV(rsi, rsp)
	b.PUSH(x.Imm(sigsetSize))
	b.POP(r10)
	b.PUSH(x.Imm(sigTERM))
	b.POP(rdi)
	b.Label("sigaction")
	b.PUSH(x.Imm(amd64SysRtSigaction))
	b.POP(rax)
	b.SYSCALL()
	b.SUB(edi, x.Imm(sigTERM-sigINT)) // SIGTERM, then SIGINT
	b.J(x.NS, "sigaction")

	// Pop the sigaction, then argc and argv[0]; each argument is popped in turn (the
	// slots left behind are free stack).
	b.POP(rax)
	b.POP(rax)
	b.POP(rax)
	b.POP(r15) // argc
	b.POP(rax) // argv[0]

	b.Label("next_arg")
	b.POP(rsi)
	b.MOV(r14, rsi)
	b.TEST(rsi, rsi)
	b.J(x.E, "args_done")

	// A term: a number [0-9.]* and a word from the table.
	b.Label("term")
	b.MOV(r10, rsi)
	b.Label("scan")
	b.LODSB()
	b.SUB(al, x.Imm('0'))
	b.CMP(al, x.Imm(9))
	b.J(x.BE, "scan")
	b.CMP(al, x.Imm('.'-'0'))
	b.J(x.E, "scan")
	b.DEC(rsi)
	b.MOV(r11, rsi)

	b.LEA(rdi, x.RIP("words"))
	b.Label("word")
	b.MOVZX(ecx, x.Byte(rdi, 0))
	b.JRCXZ("invalid") // end of the table
	b.INC(rdi)
	b.MOV(rsi, r11)
	b.REPE_CMPSB() // stops at the argument's NUL at the latest
	b.J(x.E, "matched")
	b.ADD(rdi, rcx)
	b.SCASW() // skip k and c
	b.JMP("word")

	b.Label("matched") // rsi: after the word; rdi: its k and c
	b.MOVZX(r8d, x.Byte(rdi, 0))
	b.MOVZX(r9d, x.Byte(rdi, 1))
	b.CMP(x.Byte(rsi, -1), x.Imm(0)) // a word ending in NUL
	b.J(x.NE, "number")
	b.CMP(r10, r14) // must be the whole argument
	b.J(x.NE, "invalid")
	b.DEC(rsi) // back on the NUL: the argument ends after this term
	b.TEST(r9d, r9d)
	b.J(x.NE, "number")
	b.CMP(r10, r11) // a keyword has no number
	b.J(x.NE, "invalid")
	b.TEST(r8d, r8d)
	b.J(x.NE, "help")
	b.INC(r13) // inf
	b.JMP("next_arg")

	// Head: the digits down to whole nanoseconds, checked acc = acc*10 + digit.
	b.Label("number")
	b.PUSH(rsi)
	b.MOV(rsi, r10)
	b.XOR(eax, eax)
	b.XOR(edx, edx)
	b.XOR(ecx, ecx)
	b.XOR(edi, edi)
	b.Label("digit")
	b.CMP(rsi, r11)
	b.J(x.AE, "digits_done")
	b.LODSB()
	b.SUB(al, x.Imm('0'))
	b.J(x.NS, "head")
	b.BTS(edi, 0) // the dot; a second one is invalid
	b.J(x.B, "invalid")
	b.JMP("digit")
	b.Label("head")
	b.SUB(r8, rdi) // after the dot each digit uses one power of ten of the unit
	b.J(x.L, "tail")
	b.INC(ecx)
	b.IMUL3(rdx, rdx, x.Imm(10))
	b.J(x.O, "invalid")
	b.ADD(rdx, rax)
	b.J(x.O, "invalid")
	b.JMP("digit")

	b.Label("invalid")
	b.MOV(rdi, r14) // strlen(arg)
	b.XOR(eax, eax)
	b.PUSH(x.Imm(-1))
	b.POP(rcx)
	b.REPNE_SCASB()
	b.NOT(rcx)
	b.DEC(rcx)
	// writev(2, [prefix, arg, suffix], 3)
	b.LEA(rax, x.RIP("msg_invalid"))
	b.PUSH(x.Imm(len(invalidSuffix)))
	b.LEA(rdx, x.Qword(rax, int32(len(invalidPrefix))))
	b.PUSH(rdx)
	b.PUSH(rcx)
	b.PUSH(r14)
	b.PUSH(x.Imm(len(invalidPrefix)))
	b.PUSH(rax)
	b.PUSH(x.Imm(stderr))
	b.POP(rdi)
	b.MOV(rsi, rsp)
	b.PUSH(x.Imm(3))
	b.POP(rdx)
	b.PUSH(x.Imm(amd64SysWritev))
	b.POP(rax)
	b.SYSCALL()
	b.PUSH(x.Imm(exitInvalid))
	b.POP(rbp)
	b.Label("default") // {10, 0}
	b.PUSH(x.Imm(0))
	b.PUSH(x.Imm(defaultNs / nsPerSecond))
	b.JMP("sleep_timespec")

	b.Label("digits_done")
	b.JRCXZ("invalid") // no digit at all
	b.XOR(ecx, ecx)    // no carry
	b.Label("pad")     // unused powers of ten scale the unit: c*10^k
	b.DEC(r8)
	b.J(x.S, "scale")
	b.IMUL3(r9, r9, x.Imm(10))
	b.JMP("pad")

	// Tail: the digits below a nanosecond. floor(c * 0.tail) is the carry of the long
	// multiplication c*tail, computed right to left.
	b.Label("tail")
	b.DEC(rsi) // the first tail digit
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
	b.J(x.A, "tail_digit")

	b.Label("scale") // total += acc*c*10^k + carry
	b.IMUL(rdx, r9)
	b.J(x.O, "invalid")
	b.ADD(rdx, rcx)
	b.J(x.O, "invalid")
	b.POP(rsi)
	b.ADD(r12, rdx)
	b.J(x.O, "invalid")
	b.CMP(x.Byte(rsi, 0), x.Imm(0))
	b.J(x.NE, "term")
	b.JMP("next_arg")

	b.Label("args_done")
	b.DEC(r15d) // argc == 1: no argument
	b.J(x.E, "default")
	b.TEST(r13, r13)
	b.J(x.E, "sleep")
	b.Label("forever") // until a signal runs on_signal
	b.PUSH(x.Imm(amd64SysPause))
	b.POP(rax)
	b.SYSCALL()
	b.JMP("forever")

	// One relative nanosleep on the monotonic clock. A stop/continue does not end it
	// early: the kernel restarts it itself with the original expiry. rsi, the remaining
	// time, is NULL or free stack: it is only written when a handler interrupts the
	// sleep, and the only handler exits.
	b.Label("sleep")
	b.MOV(rax, r12)
	b.XOR(edx, edx)
	b.MOV(ecx, x.Imm(nsPerSecond))
	b.DIV(rcx)
	b.PUSH(rdx)
	b.PUSH(rax)
	b.Label("sleep_timespec")
	b.MOV(rdi, rsp)
	b.PUSH(x.Imm(amd64SysNanosleep))
	b.POP(rax)
	b.SYSCALL()
	b.Label("exit")
	b.MOV(edi, ebp)
	b.JMP("exit_edi")

	b.Label("help")
	b.PUSH(x.Imm(stdout))
	b.POP(rdi)
	b.LEA(rsi, x.RIP("usage"))
	b.PUSH(x.Imm(len(Usage)))
	b.POP(rdx)
	b.PUSH(x.Imm(amd64SysWrite))
	b.POP(rax)
	b.SYSCALL()
	b.JMP("exit")

	// on_signal is the SIGINT/SIGTERM handler: the signal number comes in edi.
	b.Label("on_signal")
	b.SUB(edi, x.Imm(-exitSignalBase))
	b.Label("exit_edi")
	b.MOV(eax, x.Imm(amd64SysExitGroup))
	b.SYSCALL()

	b.Label("words")
	b.Data("words", words)
	b.Label("usage")
	b.Data("usage", []byte(Usage))
	b.Label("msg_invalid")
	b.Data("msg_invalid", []byte(invalidPrefix))
	b.Data("msg_default", []byte(invalidSuffix))
}
