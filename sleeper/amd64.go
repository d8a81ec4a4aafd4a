package sleeper

import (
	"errors"
	"time"

	"github.com/nap-k8s/nap/internal/asm"
	x "github.com/nap-k8s/nap/internal/asm/amd64"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// Linux x86-64 system call numbers (native 64-bit ABI, never int 0x80).
const (
	amd64SysRead           = 0
	amd64SysWrite          = 1
	amd64SysClose          = 3
	amd64SysPoll           = 7
	amd64SysRtSigaction    = 13
	amd64SysNanosleep      = 35
	amd64SysClockNanosleep = 230
	amd64SysExitGroup      = 231
	amd64SysPpoll          = 271
	amd64SysOpenat         = 257
	amd64SysSocket         = 41
)

// The live wait's fields raise the slots from MIN, one qword each: MIN, QUIET, MAX,
// WITHIN (see the block live_raise).
const (
	_ = uint(slotQuiet - 8)
	_ = uint(8 - slotQuiet)
	_ = uint(slotMax - 16)
	_ = uint(16 - slotMax)
	_ = uint(slotRequests - 8*(liveFields-1))
	_ = uint(8*(liveFields-1) - slotRequests)
)

// The fixed delay's ALLOW is nap.DefaultAllow after an invalid argument, which the
// programs write as a zero; k xor flagBackground is 1 for flagAdaptive.
const (
	_ = uint(0 - nap.DefaultAllow)
	_ = uint((flagAdaptive ^ flagBackground) - 1)
	_ = uint(1 - (flagAdaptive ^ flagBackground))
)

// Shared by both programs.
const (
	sigTERM        = 15
	saRestorer     = 0x04000000
	nsPerSecond    = 1_000_000_000
	defaultNs      = int64(nap.Default)
	sigsetSize     = 8
	exitInvalid    = nap.ExitInvalid
	exitSignalBase = 128
	stdout         = 1
	stderr         = 2
	clockMonotonic = 1
	pollOut        = 4
	errEAGAIN      = 11
	atFDCWD        = -100
	// The wait's slots, just below the stack the program starts with: MIN, then QUIET,
	// MAX, WITHIN (--requests) and ALLOW at the offsets the word table gives their
	// flags (the first four in the live wait's order); then the count at the start, the verdict's descriptor (negative: none), the
	// exit status, three flag bytes (a fixed delay, --live, and blind), the last
	// readings that saw new connections and requests over kept ones, and the ways to
	// sleep not refused yet (see nap_ts).
	slotsSize    = 96
	slotQuiet    = 8
	slotMax      = 16
	slotRequests = 24
	slotAllow    = 32
	slotStart    = 40
	slotLog      = 48
	slotStatus   = 56
	slotFixed    = 64
	slotNew      = 72
	slotKept     = 80
	slotWays     = 88
	// slotLive is a byte beside the fixed flag: keywordLive once --live is read,
	// liveRead once the live wait is; slotBlind the byte after it.
	slotLive  = slotFixed + 1
	slotBlind = slotFixed + 2
	// sleepWays are the ways nap_ts tries, 16 bits each, the next in the low bits.
	sleepWays = amd64SysNanosleep | amd64SysClockNanosleep<<16 | amd64SysPpoll<<32
	// The verdict's file is opened O_WRONLY|O_APPEND|O_CLOEXEC: never created, never
	// truncated.
	oAppendCloexec = 1 | 0x400 | 0x80000
	pollNs         = int64(nap.PollInterval)
	// readBuf is the adaptive wait's read buffer: nap.SnmpRead bytes and a NUL, or one
	// datagram of a socket dump (nap.DiagRead).
	readBuf = max(nap.SnmpRead+8, nap.DiagRead)
	// listening is the bitmap of listening ports of one reading of the sockets (a bit
	// per port), just below the slots.
	listening = 1 << 16 / 8
	// The socket that reads the sockets: socket(AF_NETLINK, SOCK_RAW|SOCK_CLOEXEC,
	// NETLINK_SOCK_DIAG).
	afNetlink      = 16
	sockRawCloexec = 3 | 0x80000
	// A dump request (nap.DiagRequests), built in the read buffer before each dump:
	// zeros, then its header (length, type and flags) and its non-zero fields.
	diagReqQwords = (nap.DiagRequestLen + 7) / 8
	diagReqHead   = nap.TCPDiagGetSock | nap.NlmFRequestDump<<16
	diagReqExt    = 1 << (nap.InetDiagInfo - 1)
	// socketsNs is how often the sockets are read: at the readings whose clock is a
	// multiple of it.
	socketsNs = nap.SocketsEvery * pollNs
	// The offsets in a socket message (struct nlmsghdr, then struct inet_diag_msg) and
	// in an attribute (struct rtattr, then struct tcp_info).
	msgState    = nap.NlmsgHdrLen + nap.DiagMsgState
	msgSport    = nap.NlmsgHdrLen + nap.DiagMsgSport
	msgAttrs    = nap.NlmsgHdrLen + nap.InetDiagMsgLen
	infoLastRcv = nap.RtaHdrLen + nap.TCPInfoLastDataRecv
	infoSegsIn  = nap.RtaHdrLen + nap.TCPInfoDataSegsIn
	nsPerMs     = int64(time.Millisecond)
)

// The registers, named as in the manual.
var (
	rax, rcx, rdx, rsp, rbp, rsi, rdi = x.RAX, x.RCX, x.RDX, x.RSP, x.RBP, x.RSI, x.RDI
	r8, r9, r10, r11, r12, r13, r14   = x.R8, x.R9, x.R10, x.R11, x.R12, x.R13, x.R14
	r15, rbx                          = x.R15, x.RBX
	eax, ecx, edx, ebx, esi, edi, ebp = x.EAX, x.ECX, x.EDX, x.EBX, x.ESI, x.EDI, x.EBP
	r8d, r9d, r10d, r14d              = x.R8D, x.R9D, x.R10D, x.R14D
	al, bl, bh, cl                    = x.AL, x.BL, x.BH, x.CL
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
	"entry", "help", "flag", "next_arg", "term", "matched", "scale", "bare", "unit", "digits_done", "pad",
	"invalid", "default", "tail", "args_done", "fixed", "fixed_wait", "sleep", "timed", "slept", "done", "adaptive",
	"poll", "new_conns", "last_look", "kept_conns", "traffic", "until_limit", "finish", "exit_edi", "nap_ts",
	"on_signal", "wait", "put_ms", "put_num", "put_wait", "put", "say", "write_all", "count", "unreadable",
	"sockets", "dump_done", "dump", "message", "unreadable_sockets", "listen", "next_message", "next_attr",
	"attr", "live", "live_missing", "live_raise",
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
			// ELF_PLAT_INIT; rax is execve's result, 0), so the exit status (rbp), the
			// argument (r14), the adaptive flag (r8) and oldact (rdx) start 0.
			//
			// The DURATIONs add up in the slot MIN, a flag's value in its own slot (r13
			// points at the slot being added to, r15 at MIN): five qwords pushed first,
			// which nothing writes once the arguments are read (the stack pointer is
			// above them then). ALLOW, WITHIN, MAX, QUIET and MIN start at their defaults
			// (60 s is 30 × 2 s: no imm32 holds it).
			b.MOV(rcx, x.Imm(sleepWays))
			b.PUSH(rcx)
			for range (slotWays - slotStart) / 8 {
				b.PUSH(x.Imm(0)) // the last readings, the flags, the status 0, the descriptor and the count
			}
			b.MOV(eax, x.Imm(int64(nap.DefaultQuiet)))
			b.PUSH(x.Imm(nap.DefaultAllow))
			b.PUSH(x.Imm(0)) // WITHIN: the request signal off
			b.IMUL3(rcx, rax, x.Imm(int64(nap.DefaultMax/nap.DefaultQuiet)))
			b.PUSH(rcx)
			b.PUSH(rax)
			b.PUSH(x.Imm(0))
			b.PUSH(rsp)
			b.POP(r15)
			b.MOV(r13, r15)
			//
			// Signals 15 down to 1 run on_signal, which exits 128+signal (SIGKILL's call
			// fails, harmlessly). A handler (not the default action) is what makes PID 1
			// of a PID namespace hear them. x86-64 cannot deliver to a handler without
			// SA_RESTORER; on_signal never returns, so it is its own restorer. struct
			// sigaction is handler, flags, restorer, mask: the mask overlaps MIN, and
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
			// Drop the sigaction and the slots, then argc and argv[0]; each argument is
			// popped in turn (the slots left behind are free stack). With argc 0
			// (kernels before 5.18), argv[0] is the NULL that ends argv: next_arg finds
			// no argument.
			b.ADD(rsp, x.Imm(3*8+slotsSize))
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
			// A keyword (a word ending in NUL): the whole argument, no number, and not
			// a flag's value. k is 0 for inf, 1 for help, 2 for a flag.
			b.CMP(r11, r14)
			b.J(x.NE, "invalid")
			b.CMP(r13, r15)
			b.J(x.NE, "invalid")
			b.CMP(x.Byte(rsi, 0), x.Imm(1))
			b.J(x.E, "help")
			b.J(x.A, "flag")
			b.MOV(al, x.Byte(rsi, 1)) // c: keywordLive for --live, 0 for inf
			b.OR(x.Byte(r15, slotLive), al)
			b.TEST(al, al)
			b.J(x.NE, "next_arg")
			b.OR(ebp, x.Imm(-1)) // inf: negative until an invalid argument sets 2
		}},
		// A flag: its value, the next argument, goes to its slot (c is its offset),
		// which starts again from 0 (the last flag given wins). r8d counts the flags that
		// make the wait adaptive (k = flagAdaptive, not flagBackground).
		{"flag", "next_arg", func(b *x.Builder) {
			b.MOVZX(eax, x.Byte(rsi, 1))
			b.LEA(r13, x.Mem{Bits: 64, Base: r15, Index: rax, Scale: 1})
			b.AND(x.Qword(r13, 0), x.Imm(0))
			b.MOVZX(eax, x.Byte(rsi, 0))
			b.XOR(al, x.Imm(flagBackground)) // 1 or 0
			b.ADD(r8d, eax)
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
			b.BTS(ebx, x.Imm(8)) // the dot (bh); a second one is invalid
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
			b.ADD(x.Qword(r13, 0), rdx)
			b.J(x.O, "invalid")
			b.CMP(x.Byte(rsi, 0), x.Imm(0))
			b.J(x.NE, "term")
			b.MOV(r13, r15) // the argument ends: DURATIONs again
		}},
		// The message goes out from a stack below the slots, which the wait reads next.
		{"invalid", "default", func(b *x.Builder) { // from the checks above
			b.MOV(rsp, r15)
			b.MOV(rdi, r14) // strlen(arg)
			b.XOR(eax, eax)
			b.PUSH(x.Imm(-1))
			b.POP(rcx)
			b.REPNE_SCASB()
			b.NOT(ecx)
			b.DEC(ecx)
			b.PUSH(rcx)
			b.MOV(esi, x.Addr("msg_invalid"))
			b.PUSH(x.Imm(len(nap.InvalidPrefix)))
			b.POP(rdx)
			b.CALL("say")
			b.MOV(rsi, r14)
			b.POP(rdx)
			b.CALL("say")
			b.MOV(esi, x.Addr("msg_default"))
			b.PUSH(x.Imm(len(nap.InvalidSuffix)))
			b.POP(rdx)
			b.CALL("say")
			b.PUSH(x.Imm(exitInvalid))
			b.POP(rbp)
		}},
		{"default", "fixed_wait", func(b *x.Builder) { // from args_done and invalid
			b.MOV(r12, x.Imm(defaultNs))
			b.AND(x.Qword(r15, slotAllow), x.Imm(0)) // nap.DefaultAllow
			b.AND(x.Byte(r15, slotLive), x.Imm(0))   // after an invalid argument, no live wait
		}},
		// From here the stack is below the slots, which the waits read.
		{"args_done", "fixed", func(b *x.Builder) { // from next_arg
			b.MOV(rsp, r15)
			b.TEST(r14, r14)
			b.J(x.E, "default") // no argument at all
			b.CMP(r13, r15)
			b.J(x.NE, "invalid") // a flag with no value (r14)
			b.MOV(r12, x.Qword(r15, 0))
			b.TEST(ebp, ebp)
			b.J(x.E, "fixed")
			b.PUSH(x.Imm(-1)) // inf: the longest sleep, 2^63-1 ns, again and again
			b.POP(r12)
			b.SHR(r12, x.Imm(1))
			b.JMP("sleep")
		}},
		{"fixed", "fixed_wait", func(b *x.Builder) { // from args_done: adaptive or not, after the live wait
			b.CALL("live")
			b.TEST(r8, r8)
			b.J(x.NE, "adaptive")
		}},
		// --live (nap.ParseLive, nap.Request.Raise), called from fixed: LivePath read once
		// into a buffer below the stack, its four fields pushed, then MIN, QUIET, MAX and
		// WITHIN each raised to its field. Fixed arguments bring no QUIET or MAX of their
		// own; the wait is adaptive (r8) when MAX is not 0 then. A line that cannot be
		// read is said, and leaves the slots alone.
		{"live", "live_missing", func(b *x.Builder) {
			b.CMP(x.Byte(r15, slotLive), x.Imm(0))
			b.J(x.NE, "live_asked")
			b.RET()
			b.Label("live_asked")
			b.TEST(r8, r8)
			b.J(x.NE, "live_open")
			b.AND(x.Qword(r15, slotQuiet), x.Imm(0))
			b.AND(x.Qword(r15, slotMax), x.Imm(0))
			b.Label("live_open")
			b.PUSH(x.Imm(atFDCWD))
			b.POP(rdi)
			b.MOV(esi, x.Addr("live_path"))
			b.XOR(edx, edx) // O_RDONLY
			b.MOV(eax, x.Imm(amd64SysOpenat))
			b.SYSCALL()
			b.TEST(eax, eax)
			b.J(x.S, "live_missing")
			b.MOV(edi, eax)
			b.LEA(rsi, x.Qword(rsp, -128))
			b.PUSH(x.Imm(nap.LiveRead))
			b.POP(rdx)
			b.XOR(eax, eax) // read
			b.SYSCALL()
			b.TEST(eax, eax)
			b.J(x.S, "live_missing")
			b.MOV(x.ByteIndex(rsi, rax), x.Imm(0)) // the text ends here
			b.MOV(edi, x.Addr("live_head"))
			b.PUSH(x.Imm(len(nap.LiveHead)))
			b.POP(rcx)
			b.REPE_CMPSB()
			b.J(x.NE, "live_missing")
			b.MOV(cl, x.Imm(liveFields))
			b.Label("live_field") // a space, then 1 to nap.LiveDigits digits
			b.LODSB()
			b.CMP(al, x.Imm(' '))
			b.J(x.NE, "live_missing")
			b.MOV(rdi, rsi)
			b.XOR(edx, edx)
			b.Label("live_digit")
			b.MOVZX(eax, x.Byte(rsi, 0))
			b.SUB(eax, x.Imm('0'))
			b.CMP(eax, x.Imm(9))
			b.J(x.A, "live_number")
			b.IMUL3(rdx, rdx, x.Imm(10))
			b.ADD(rdx, rax)
			b.INC(rsi)
			b.JMP("live_digit")
			b.Label("live_number") // n digits: LiveDigits-n from 0 to LiveDigits-1
			b.SUB(edi, esi)
			b.ADD(edi, x.Imm(nap.LiveDigits))
			b.CMP(edi, x.Imm(nap.LiveDigits-1))
			b.J(x.A, "live_missing")
			b.IMUL3(rdx, rdx, x.Imm(nsPerMs))
			b.PUSH(rdx)
			b.LOOP("live_field")
			b.MOV(al, x.Byte(rsi, 0)) // then a newline or the end
			b.CMP(al, x.Imm('\n'))
			b.J(x.E, "live_raise")
			b.TEST(al, al)
			b.J(x.E, "live_raise")
		}},
		{"live_raise", "", func(b *x.Builder) { // from live: WITHIN first, at rcx = 4, down to MIN
			b.MOV(cl, x.Imm(liveFields))
			b.Label("live_slot")
			b.POP(rax)
			b.CMP(rax, x.Mem{Bits: 64, Base: r15, Index: rcx, Scale: 8, Disp: -8})
			b.J(x.BE, "live_next")
			b.MOV(x.Mem{Bits: 64, Base: r15, Index: rcx, Scale: 8, Disp: -8}, rax)
			b.Label("live_next")
			b.LOOP("live_slot")
			b.OR(r8, x.Qword(r15, slotMax))
			b.MOV(r12, x.Qword(r15, 0))
			b.MOV(x.Byte(r15, slotLive), x.Imm(liveRead))
			b.RET()
		}},
		{"live_missing", "", func(b *x.Builder) { // from live: the arguments' wait
			b.LEA(rsp, x.Qword(r15, -8))
			b.MOV(esi, x.Addr("msg_live_missing"))
			b.PUSH(x.Imm(len(nap.LiveMissing)))
			b.POP(rdx)
			b.JMP("say") // and return
		}},
		// A fixed delay of r12 ns (none for zero) is an adaptive wait whose MAX is 0, so
		// that it ends at MIN, the delay, with QUIET at its default, its own ALLOW and the
		// request signal at nap.ActiveWithin: it observes, and keeps its exit status (ebp). After an
		// invalid argument ALLOW is the default again.
		{"fixed_wait", "adaptive", func(b *x.Builder) { // from fixed and default
			b.TEST(r12, r12)
			b.J(x.E, "done")
			b.MOV(x.Qword(r15, 0), r12)
			b.MOV(x.Qword(r15, slotQuiet), x.Imm(int64(nap.DefaultQuiet)))
			b.AND(x.Qword(r15, slotMax), x.Imm(0))
			b.MOV(x.Qword(r15, slotRequests), x.Imm(int64(nap.ActiveWithin)))
			b.MOV(x.Dword(r15, slotStatus), ebp)
			b.MOV(x.Byte(r15, slotFixed), x.Imm(1))
		}},
		// One relative sleep on the monotonic clock, of r12 ns, again and again: inf.
		{"sleep", "timed", func(b *x.Builder) { // from args_done and slept
			b.MOV(rax, r12)
			b.XOR(edx, edx)
			b.MOV(ecx, x.Imm(nsPerSecond))
			b.DIV(rcx)
			b.PUSH(rdx)
			b.PUSH(rax)
		}},
		{"timed", "slept", func(b *x.Builder) { // the timespec on the stack
			b.CALL("nap_ts")
		}},
		// nap_ts sleeps the timespec above its return address: nanosleep, and where the
		// kernel refuses it (a seccomp profile), clock_nanosleep(CLOCK_MONOTONIC, 0, ts,
		// NULL), then ppoll(_, 0, ts, NULL): a refused call never ends the delay early.
		// A stop and continue does not end any of them early: the kernel restarts them
		// itself with the original expiry. The remaining time (rsi or r10) is NULL. A
		// way refused is dropped from the ways (a slot), so that it is tried, and said,
		// once.
		{"nap_ts", "", func(b *x.Builder) {
			b.Label("try")
			b.MOVZX(eax, x.Word(r15, slotWays))
			b.PUSH(x.Imm(clockMonotonic)) // ppoll ignores it: it polls no file
			b.POP(rdi)
			b.TEST(eax, eax)
			b.J(x.E, "exit_edi") // every way refused: exit 1 (edi), said on stderr
			b.LEA(rdx, x.Qword(rsp, 8))
			b.CMP(eax, x.Imm(amd64SysNanosleep))
			b.CMOV(x.E, rdi, rdx) // nanosleep's request
			b.XOR(esi, esi)
			b.XOR(r10d, r10d)
			b.SYSCALL()
			b.TEST(eax, eax)
			b.J(x.E, "slept_ts")
			b.MOV(esi, x.Addr("msg_refused"))
			b.PUSH(x.Imm(len(nap.Refused)))
			b.POP(rdx)
			b.CALL("say")
			b.SHR(x.Qword(r15, slotWays), x.Imm(16))
			b.JMP("try")
			b.Label("slept_ts")
			b.RET()
		}},
		{"slept", "done", func(b *x.Builder) { // from timed
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
			b.PUSH(x.Imm(len(nap.Usage)))
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
		// The wait (spec: the package documentation). Registers: rbp the limit (MAX, at
		// least MIN), r13 QUIET, r14 the clock (the readings' sleeps), r9 when the quiet
		// window began, r12 the count then, rbx the count now, r8 the read buffer; MIN,
		// ALLOW (in ns) and the rest stay in their slots (r15), the bitmap of listening
		// ports just below them. The stack moves below the bitmap and the buffer; the
		// timespec of a reading's sleep stays on it. The verdict's head is written first.
		{"adaptive", "poll", func(b *x.Builder) { // from fixed and fixed_wait
			b.MOV(rax, x.Qword(r15, slotRequests)) // WITHIN in whole milliseconds, the kernel's unit
			b.XOR(edx, edx)
			b.MOV(ecx, x.Imm(nsPerMs))
			b.DIV(rcx)
			b.MOV(x.Qword(r15, slotRequests), rax)
			b.MOV(rbp, x.Qword(r15, slotMax))
			b.CMP(rbp, r12)
			b.CMOV(x.B, rbp, r12)
			b.MOV(r13, x.Qword(r15, slotQuiet))
			b.LEA(rsp, x.Qword(r15, -(listening+readBuf)))
			b.MOV(r8, rsp)
			b.PUSH(x.Imm(0)) // when the count's baseline (r12) was taken
			b.PUSH(x.Imm(0))
			b.PUSH(x.Imm(0))
			b.XOR(r14d, r14d)
			b.XOR(r9d, r9d)
			b.PUSH(x.Imm(atFDCWD))
			b.POP(rdi)
			b.MOV(esi, x.Addr("verdict_path"))
			b.MOV(edx, x.Imm(oAppendCloexec))
			b.MOV(eax, x.Imm(amd64SysOpenat))
			b.SYSCALL()
			b.MOV(x.Dword(r15, slotLog), eax)
			b.TEST(eax, eax)
			b.J(x.S, "no_log")
			b.MOV(edi, eax)
			b.MOV(esi, x.Addr("verdict_head"))
			b.PUSH(x.Imm(len(nap.VerdictHead)))
			b.POP(rdx)
			b.CALL("write_all")
			b.Label("no_log")
			b.CALL("count")
			b.MOV(r12, rax)
			b.MOV(x.Qword(r15, slotStart), rax)
		}},
		// Each reading: traffic when the count rose by more than ALLOW since the window
		// began (count*1e9 against ALLOW in ns, unsigned: a count that went back, or one
		// too large to scale, is traffic too). Otherwise the sockets, at every
		// nap.SocketsEvery-th reading and before the wait ends quiet (the window QUIET
		// long, MIN passed): an inbound connection that received data is traffic too. At
		// the limit the wait ends in any case.
		// A reading's sleep is one poll interval, or what is left to the limit if less.
		// Once blind, the readings only count the time.
		{"poll", "until_limit", func(b *x.Builder) {
			b.MOV(eax, x.Imm(pollNs))
			b.MOV(rdx, rbp)
			b.SUB(rdx, r14)
			b.CMP(rdx, rax)
			b.CMOV(x.B, rax, rdx)
			b.MOV(x.Qword(rsp, 8), rax)
			b.ADD(r14, rax)
			b.CALL("nap_ts")
			b.CMP(x.Byte(r15, slotBlind), x.Imm(0))
			b.J(x.NE, "until_limit")
			b.CALL("count")
			b.MOV(rbx, rax)
			b.SUB(rax, r12)
			b.MOV(edx, x.Imm(nsPerSecond))
			b.MUL(rdx)
			b.J(x.B, "new_conns")
			b.CMP(rax, x.Qword(r15, slotAllow))
			b.J(x.A, "new_conns")
			b.MOV(rax, r14) // QUIET without traffic since the baseline: a new one
			b.SUB(rax, x.Qword(rsp, 16))
			b.CMP(rax, r13)
			b.J(x.B, "based")
			b.MOV(x.Qword(rsp, 16), r14)
			b.MOV(r12, rbx)
			b.Label("based")
			b.MOV(rax, r14)
			b.SUB(rax, r9)
			b.CMP(rax, r13)
			b.J(x.B, "due")
			b.CMP(r14, x.Qword(r15, 0)) // MIN
			b.J(x.AE, "last_look")
			b.Label("due")
			b.MOV(rax, r14)
			b.XOR(edx, edx)
			b.MOV(ecx, x.Imm(socketsNs))
			b.DIV(rcx)
			b.TEST(rdx, rdx)
			b.J(x.NE, "until_limit")
			b.CALL("sockets")
			b.J(x.NE, "kept_conns")
		}},
		{"until_limit", "finish", func(b *x.Builder) {
			b.CMP(r14, rbp)
			b.J(x.B, "poll")
		}},
		{"last_look", "kept_conns", func(b *x.Builder) { // quiet, but for the sockets
			b.CALL("sockets")
			b.J(x.E, "finish")
		}},
		// The verdict (nap.Verdict.Tail), built in the read buffer and written whole to
		// its descriptor, if one is open: blind; late, when a reading saw new connections
		// less than QUIET before the end; held, when one saw only requests over kept
		// connections then; or quiet. Then the exit, with the status.
		{"finish", "exit_edi", func(b *x.Builder) { // from until_limit and last_look
			b.MOV(edi, x.Dword(r15, slotLog))
			b.TEST(edi, edi)
			b.J(x.S, "finished")
			b.PUSH(rdi)
			b.MOV(esi, x.Addr("word_blind"))
			b.CMP(x.Byte(r15, slotBlind), x.Imm(0))
			b.J(x.NE, "worded")
			b.MOV(esi, x.Addr("word_quiet"))
			b.TEST(r9, r9)
			b.J(x.E, "worded") // no reading saw traffic
			b.MOV(rax, r14)
			b.SUB(rax, r9)
			b.CMP(rax, r13)
			b.J(x.AE, "worded")
			b.MOV(esi, x.Addr("word_held"))
			b.MOV(rax, x.Qword(r15, slotNew))
			b.TEST(rax, rax)
			b.J(x.E, "worded") // no reading saw new connections
			b.NEG(rax)
			b.ADD(rax, r14)
			b.CMP(rax, r13)
			b.J(x.AE, "worded")
			b.MOV(esi, x.Addr("word_late"))
			b.Label("worded")
			b.MOV(rdi, r8)
			b.CALL("put")
			b.MOV(esi, x.Addr("field_end"))
			b.MOV(rax, r14)
			b.CALL("put_ms")
			b.CMP(x.Byte(r15, slotBlind), x.Imm(0))
			b.J(x.NE, "line_end")
			b.MOV(esi, x.Addr("field_last"))
			b.MOV(rax, r9)
			b.CALL("put_ms")
			b.MOV(esi, x.Addr("field_conns"))
			b.MOV(rax, rbx)
			b.SUB(rax, x.Qword(r15, slotStart))
			b.CALL("put_num")
			b.MOV(esi, x.Addr("field_total"))
			b.MOV(rax, x.Qword(r15, slotStart))
			b.CALL("put_num")
			b.MOV(esi, x.Addr("field_kept"))
			b.MOV(rax, x.Qword(r15, slotKept))
			b.CALL("put_ms")
			b.Label("line_end")
			b.CALL("put_wait")
			b.MOV(al, x.Imm('\n'))
			b.STOSB()
			b.MOV(rdx, rdi)
			b.SUB(rdx, r8)
			b.MOV(rsi, r8)
			b.POP(rdi)
			b.CALL("write_all")
			b.Label("finished")
			b.MOV(edi, x.Dword(r15, slotStatus))
		}},
		// put_ms writes, at rdi, the text at rsi and rax ns in whole milliseconds, then
		// "ms"; put_num the text and rax in decimal; put the text (its length first).
		{"put_ms", "", func(b *x.Builder) {
			b.XOR(edx, edx)
			b.MOV(ecx, x.Imm(nsPerMs))
			b.DIV(rcx)
			b.CALL("put_num")
			b.MOV(eax, x.Imm('m'|'s'<<8))
			b.STOSW()
			b.RET()
		}},
		{"put_num", "", func(b *x.Builder) {
			b.PUSH(rax)
			b.CALL("put")
			b.POP(rax)
			b.PUSH(x.Imm(10))
			b.POP(rcx)
			b.XOR(esi, esi) // the digits, pushed lowest first
			b.Label("digit_out")
			b.XOR(edx, edx)
			b.DIV(rcx)
			b.PUSH(rdx)
			b.INC(esi)
			b.TEST(rax, rax)
			b.J(x.NE, "digit_out")
			b.Label("emit")
			b.POP(rax)
			b.ADD(al, x.Imm('0'))
			b.STOSB()
			b.DEC(esi)
			b.J(x.NE, "emit")
			b.RET()
		}},
		// put_wait writes, with --live, where the wait came from (the live byte).
		{"put_wait", "put", func(b *x.Builder) {
			b.MOV(esi, x.Addr("wait_"+nap.WaitLive))
			b.MOV(al, x.Byte(r15, slotLive))
			b.CMP(al, x.Imm(keywordLive))
			b.J(x.A, "put")
			b.MOV(esi, x.Addr("wait_"+nap.WaitArgs))
			b.J(x.E, "put")
			b.RET() // no --live
		}},
		{"put", "", func(b *x.Builder) {
			b.MOVZX(ecx, x.Byte(rsi, 0))
			b.INC(esi)
			b.REP_MOVSB()
			b.RET()
		}},
		// A reading saw new connections, or (kept_conns) requests over kept ones: it is
		// the last of its kind, and a new window begins there.
		{"new_conns", "traffic", func(b *x.Builder) {
			b.MOV(x.Qword(r15, slotNew), r14)
		}},
		{"kept_conns", "traffic", func(b *x.Builder) {
			b.MOV(x.Qword(r15, slotKept), r14)
		}},
		{"traffic", "until_limit", func(b *x.Builder) { // a new window, from here
			b.MOV(r9, r14)
			b.MOV(r12, rbx)
			b.MOV(x.Qword(rsp, 16), r14)
		}},
		// sockets reads the sockets of the network namespace (see nap.ReadSockets and
		// nap.Sockets.Read) and returns with ZF clear when an inbound connection received
		// data within WITHIN; without --requests, at once with ZF set. Registers: edi the
		// netlink socket, r10 the active connections, rsi the message read, rcx its
		// length, r11 the datagram's end, rdx an attribute, rbx its length (kept for the
		// caller on the stack), the dump's states on the stack. Any failure is
		// unreadable_sockets.
		{"sockets", "dump", func(b *x.Builder) {
			b.XOR(r10d, r10d)
			b.CMP(x.Qword(r15, slotRequests), r10)
			b.J(x.E, "sockets_off")
			b.PUSH(rbx)
			b.MOV(ecx, x.Imm(listening/8)) // no port listens yet
			b.Label("clear")
			b.AND(x.Mem{Bits: 64, Base: r15, Index: rcx, Scale: 8, Disp: -listening - 8}, x.Imm(0))
			b.LOOP("clear")
			b.PUSH(x.Imm(afNetlink))
			b.POP(rdi)
			b.MOV(esi, x.Imm(sockRawCloexec))
			b.PUSH(x.Imm(nap.NetlinkSockDiag))
			b.POP(rdx)
			b.PUSH(x.Imm(amd64SysSocket))
			b.POP(rax)
			b.SYSCALL()
			b.TEST(eax, eax)
			b.J(x.S, "unreadable_sockets")
			b.MOV(edi, eax)
			b.PUSH(x.Imm(1 << nap.TCPListen)) // the first dump's states
		}},
		// A dump: its request (the states on the stack) built in the buffer and written
		// whole, then its datagrams read to NLMSG_DONE.
		{"dump", "message", func(b *x.Builder) { // from sockets and dump_done
			b.PUSH(x.Imm(diagReqQwords))
			b.POP(rcx)
			b.Label("zero_request")
			b.AND(x.Mem{Bits: 64, Base: r8, Index: rcx, Scale: 8, Disp: -8}, x.Imm(0))
			b.LOOP("zero_request")
			b.MOV(x.Dword(r8, 0), x.Imm(nap.DiagRequestLen))
			b.MOV(x.Dword(r8, 4), x.Imm(diagReqHead))
			b.MOV(x.Byte(r8, nap.DiagReqExt), x.Imm(diagReqExt))
			b.MOV(eax, x.Dword(rsp, 0))
			b.MOV(x.Dword(r8, nap.DiagReqStates), eax)
			b.MOV(rsi, r8)
			b.PUSH(x.Imm(nap.DiagRequestLen))
			b.POP(rdx)
			b.PUSH(x.Imm(amd64SysWrite))
			b.POP(rax)
			b.SYSCALL()
			b.CMP(eax, x.Imm(nap.DiagRequestLen))
			b.J(x.NE, "unreadable_sockets")
			b.Label("datagram")
			b.MOV(rsi, r8)
			b.MOV(edx, x.Imm(nap.DiagRead))
			b.XOR(eax, eax) // read
			b.SYSCALL()
			b.TEST(eax, eax)
			b.J(x.LE, "unreadable_sockets")
			b.LEA(r11, x.ByteIndex(r8, rax))
		}},
		// Each message of the datagram: a header within what is left of it; NLMSG_DONE
		// ends the dump, NLMSG_ERROR is unreadable, a socket message is read, any other
		// skipped.
		{"message", "attr", func(b *x.Builder) { // from dump and next_message
			b.MOV(rax, r11)
			b.SUB(rax, rsi)
			b.J(x.E, "datagram") // the datagram is read: the next one
			b.CMP(rax, x.Imm(nap.NlmsgHdrLen))
			b.J(x.B, "unreadable_sockets")
			b.MOV(ecx, x.Dword(rsi, 0))
			b.CMP(ecx, x.Imm(nap.NlmsgHdrLen))
			b.J(x.B, "unreadable_sockets")
			b.CMP(rcx, rax)
			b.J(x.A, "unreadable_sockets")
			b.MOVZX(eax, x.Word(rsi, 4))
			b.CMP(eax, x.Imm(nap.NlmsgDone))
			b.J(x.E, "dump_done")
			b.CMP(eax, x.Imm(nap.NlmsgError))
			b.J(x.E, "unreadable_sockets")
			b.CMP(eax, x.Imm(nap.TCPDiagGetSock))
			b.J(x.NE, "next_message")
			b.CMP(ecx, x.Imm(msgAttrs))
			b.J(x.B, "unreadable_sockets")
			b.MOVZX(eax, x.Word(rsi, msgSport)) // the port as the kernel gives it
			b.CMP(x.Byte(rsi, msgState), x.Imm(nap.TCPListen))
			b.J(x.E, "listen")
			b.CMP(x.Byte(rsi, msgState), x.Imm(nap.TCPEstablished))
			b.J(x.NE, "next_message")
			b.BT(x.Dword(r15, -listening), eax)
			b.J(x.AE, "next_message") // outbound: the pod's own connection to somewhere
			b.LEA(rdx, x.Qword(rsi, msgAttrs))
		}},
		// An inbound connection's attributes, to INET_DIAG_INFO: active when its
		// tcpi_last_data_recv is below WITHIN and it is kept (tcpi_data_segs_in at least
		// nap.KeptSegs, where tcp_info is long enough to have it).
		{"attr", "", func(b *x.Builder) { // from message and next_attr
			b.LEA(rax, x.ByteIndex(rsi, rcx))
			b.SUB(rax, rdx)
			b.CMP(rax, x.Imm(nap.RtaHdrLen))
			b.J(x.B, "unreadable_sockets") // no INET_DIAG_INFO, or a broken attribute
			b.MOVZX(ebx, x.Word(rdx, 0))
			b.CMP(ebx, x.Imm(nap.RtaHdrLen))
			b.J(x.B, "unreadable_sockets")
			b.CMP(rbx, rax)
			b.J(x.A, "unreadable_sockets")
			b.CMP(x.Byte(rdx, 2), x.Imm(nap.InetDiagInfo))
			b.J(x.NE, "next_attr")
			b.CMP(x.Byte(rdx, 3), x.Imm(0))
			b.J(x.NE, "next_attr")
			b.CMP(ebx, x.Imm(infoLastRcv+4))
			b.J(x.B, "next_attr")
			b.CMP(ebx, x.Imm(infoSegsIn+4)) // an older kernel's tcp_info: every connection
			b.J(x.B, "recent")
			b.CMP(x.Dword(rdx, infoSegsIn), x.Imm(nap.KeptSegs))
			b.J(x.B, "next_message") // its first request: a new connection's
			b.Label("recent")
			b.MOV(ebx, x.Dword(rdx, infoLastRcv))
			b.CMP(rbx, x.Qword(r15, slotRequests))
			b.J(x.AE, "next_message")
			b.INC(r10)
			b.JMP("next_message")
		}},
		{"next_attr", "attr", func(b *x.Builder) { // past it, 4-byte aligned, or to the end
			b.ADD(ebx, x.Imm(3))
			b.AND(ebx, x.Imm(-4))
			b.CMP(rbx, rax)
			b.CMOV(x.A, rbx, rax)
			b.ADD(rdx, rbx)
		}},
		{"listen", "next_message", func(b *x.Builder) { // from message
			b.BTS(x.Dword(r15, -listening), eax)
		}},
		{"next_message", "message", func(b *x.Builder) { // past it, 4-byte aligned, or to the end
			b.ADD(ecx, x.Imm(3))
			b.AND(ecx, x.Imm(-4))
			b.MOV(rax, r11)
			b.SUB(rax, rsi)
			b.CMP(rcx, rax)
			b.CMOV(x.A, rcx, rax)
			b.ADD(rsi, rcx)
		}},
		// The established sockets after the listening ones (the states' bit moves from
		// TCP_LISTEN's to TCP_ESTABLISHED's, then out); then the socket is closed.
		{"dump_done", "", func(b *x.Builder) {
			b.SHR(x.Dword(rsp, 0), x.Imm(nap.TCPListen-nap.TCPEstablished))
			b.J(x.NE, "dump")
			b.POP(rax)
			b.PUSH(x.Imm(amd64SysClose))
			b.POP(rax)
			b.SYSCALL()
			b.POP(rbx)
			b.Label("sockets_off")
			b.TEST(r10, r10)
			b.RET()
		}},
		// count reads /proc/net/snmp (one read of up to nap.SnmpRead bytes, into r8) and returns
		// PassiveOpens in rax: see nap.PassiveOpens. Any failure is unreadable.
		{"count", "", func(b *x.Builder) {
			b.PUSH(x.Imm(atFDCWD))
			b.POP(rdi)
			b.MOV(esi, x.Addr("snmp_path"))
			b.XOR(edx, edx) // O_RDONLY
			b.MOV(eax, x.Imm(amd64SysOpenat))
			b.SYSCALL()
			b.TEST(eax, eax)
			b.J(x.S, "unreadable")
			b.MOV(edi, eax)
			b.MOV(rsi, r8)
			b.MOV(edx, x.Imm(nap.SnmpRead))
			b.XOR(eax, eax) // read
			b.SYSCALL()
			b.TEST(eax, eax)
			b.J(x.S, "unreadable")
			b.MOV(x.ByteIndex(r8, rax), x.Imm(0)) // the text ends here
			b.PUSH(x.Imm(amd64SysClose))
			b.POP(rax)
			b.SYSCALL()
			b.MOV(rsi, r8)
			// A line that begins with "Tcp: " and a digit or a minus.
			b.Label("line")
			b.MOV(rdx, rsi)
			b.MOV(edi, x.Addr("tcp_head"))
			b.PUSH(x.Imm(len(tcpHead)))
			b.POP(rcx)
			b.REPE_CMPSB()
			b.J(x.NE, "next_line")
			b.MOV(al, x.Byte(rsi, 0))
			b.CMP(al, x.Imm('-'))
			b.J(x.E, "fields")
			b.SUB(al, x.Imm('0'))
			b.CMP(al, x.Imm(9))
			b.J(x.BE, "fields")
			b.Label("next_line")
			b.MOV(rsi, rdx)
			b.Label("skip")
			b.LODSB()
			b.TEST(al, al)
			b.J(x.E, "unreadable")
			b.CMP(al, x.Imm('\n'))
			b.J(x.NE, "skip")
			b.JMP("line")
			// Past five spaces, the digits of PassiveOpens, wrapping.
			b.Label("fields")
			b.PUSH(x.Imm(5))
			b.POP(rcx)
			b.Label("spaces")
			b.LODSB()
			b.TEST(al, al)
			b.J(x.E, "unreadable")
			b.CMP(al, x.Imm(' '))
			b.J(x.NE, "spaces")
			b.LOOP("spaces")
			b.MOVZX(eax, x.Byte(rsi, 0))
			b.SUB(eax, x.Imm('0'))
			b.CMP(eax, x.Imm(9))
			b.J(x.A, "unreadable") // no digit
			b.Label("number")
			b.IMUL3(rcx, rcx, x.Imm(10))
			b.ADD(rcx, rax)
			b.INC(rsi)
			b.MOVZX(eax, x.Byte(rsi, 0))
			b.SUB(eax, x.Imm('0'))
			b.CMP(eax, x.Imm(9))
			b.J(x.BE, "number")
			b.XCHG(rax, rcx)
			b.RET()
		}},
		// The count or the sockets cannot be read (from count or sockets, whose stack is
		// dropped): blind. An adaptive wait says so and will exit 3; both wait until the
		// limit.
		{"unreadable_sockets", "unreadable_say", func(b *x.Builder) {
			b.MOV(esi, x.Addr("msg_unreadable_sockets"))
			b.PUSH(x.Imm(len(nap.UnreadableSockets)))
			b.POP(rdx)
		}},
		{"unreadable", "until_limit", func(b *x.Builder) {
			b.MOV(esi, x.Addr("msg_unreadable"))
			b.PUSH(x.Imm(len(nap.Unreadable)))
			b.POP(rdx)
			b.Label("unreadable_say")
			b.LEA(rsp, x.Qword(r15, -(listening+readBuf+24)))
			b.MOV(x.Byte(r15, slotBlind), x.Imm(1))
			b.CMP(x.Byte(r15, slotFixed), x.Imm(0))
			b.J(x.NE, "until_limit")
			b.CALL("say")
			b.MOV(x.Byte(r15, slotStatus), x.Imm(nap.ExitUnreadable))
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
