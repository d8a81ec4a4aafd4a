package sleeper

import (
	a "github.com/nap-k8s/nap/internal/asm/arm64"
	"github.com/nap-k8s/nap/sleeper/nap"
)

// Linux arm64 system call numbers (the generic table).
const (
	arm64SysOpenat         = 56
	arm64SysClose          = 57
	arm64SysRead           = 63
	arm64SysWrite          = 64
	arm64SysPpoll          = 73
	arm64SysExitGroup      = 94
	arm64SysNanosleep      = 101
	arm64SysClockNanosleep = 115
	arm64SysRtSigaction    = 134
	arm64SysSocket         = 198
)

// The arm64 program tells a flag's slot (c) by its order: QUIET < MAX < WITHIN < ALLOW.
const (
	_ = uint(slotMax - slotQuiet - 1)
	_ = uint(slotRequests - slotMax - 1)
	_ = uint(slotAllow - slotRequests - 1)
)

// liveBelow is how far below the stack the arm64 program reads the live wait: below the
// four fields it pushes meanwhile, and the zeros after the text.
const liveBelow = 192

// portMap is the arm64 program's map of listening ports in one reading of the sockets:
// a byte per port, non-zero when a socket listens there.
const portMap = 1 << 16

// arm64SleepCalls are the ways to sleep, in the order tried (see sleep_timespec).
var arm64SleepCalls = []byte{arm64SysNanosleep, arm64SysClockNanosleep, arm64SysPpoll, 0}

// The registers.
var (
	x0, x1, x2, x3, x4, x5, x6, x7  = a.X0, a.X1, a.X2, a.X3, a.X4, a.X5, a.X6, a.X7
	x8, x9, x10, x11, x12, x13, x14 = a.X8, a.X9, a.X10, a.X11, a.X12, a.X13, a.X14
	x15, x16, x17, x19, x20, x21    = a.X15, a.X16, a.X17, a.X19, a.X20, a.X21
	x22, x23, x24, xzr, sp          = a.X22, a.X23, a.X24, a.XZR, a.SP
	x25, x26, x27, x28, x29, x30    = a.X25, a.X26, a.X27, a.X28, a.X29, a.X30
	x18                             = a.X18
	w1, w2, w3, w4, w5, w6, w7, w8  = a.W1, a.W2, a.W3, a.W4, a.W5, a.W6, a.W7, a.W8
	w12, w13, w14, w29              = a.W12, a.W13, a.W14, a.W29
)

// movImm sets rd to v with a MOVZ and a MOVK for each further non-zero 16 bits.
func movImm(b *a.Builder, rd a.Reg, v uint64) {
	b.MOVZ(rd, uint16(v), 0)
	for shift := uint(16); shift < 64; shift += 16 {
		if part := uint16(v >> shift); part != 0 {
			b.MOVK(rd, part, shift)
		}
	}
}

// programARM64 writes nap for arm64, in the shape of programAMD64. Register use:
//
//	x19  the next argv slot            x20  total nanoseconds
//	x22  the last argument read        x21  odd after inf; else 2 and up after --live
//	x23  exit status                   x6   10
//	x24  the next way to sleep; before it, non-zero when a flag makes the wait adaptive
//	x5   the descriptor write_all writes to
//	x25, x26, x27, x18  QUIET, MAX, ALLOW, WITHIN (from their defaults); x29 the slot (c) a flag's
//	value goes to, 0 for none, x28 MIN meanwhile (the value adds up in x20)
//	per term: x10 number start, x11 number end, x9 text, x12 word table, x13 k, x14 c
//	(the unit is c*10^k ns), x15 the number, x16 digit count, x17 1 after the dot,
//	x7 carry, x8 scratch.
func programARM64(b *a.Builder, words []byte) {
	data(b, words, 4, datum{"sleep_calls", arm64SleepCalls})

	b.Label("entry")
	// Linux starts a process with every general register zero (arm64 start_thread), so
	// the total (x20), the inf flag (x21), the exit status (x23) and oldact (x2) start 0.
	//
	// Signals 15 down to 1 run on_signal, which exits 128+signal (a handler is what
	// makes PID 1 hear them; SIGKILL's call fails, harmlessly). struct sigaction is
	// handler, flags, restorer, mask: only handler and flags (0) are written; restorer
	// and mask overlap argc and argv[0]. With flags 0 the restorer is unused (arm64
	// returns through the vDSO), and the mask only applies while on_signal runs, which
	// exits at once.
	b.ADR(x1, "on_signal")
	b.STP(x1, xzr, sp, -16, true)
	b.ADDi(x1, sp, 0)
	b.MOVZ(x3, sigsetSize, 0)
	b.MOVZ(x8, arm64SysRtSigaction, 0)
	b.MOVZ(x9, sigTERM, 0)
	b.Label("sigaction")
	b.MOV(x0, x9)
	b.SVC(0)
	b.SUBSi(x9, x9, 1)
	b.Bcond(a.NE, "sigaction")

	// argv from argv[1], above the sigaction, argc and argv[0]; with argc 0 (kernels
	// before 5.18) from argv[0], the NULL that ends argv: no argument.
	b.MOVZ(x6, 10, 0)
	movImm(b, x25, uint64(nap.DefaultQuiet))
	movImm(b, x26, uint64(nap.DefaultMax))
	b.ADDi(x19, sp, 16+8)
	b.LDR(x1, sp, 16)
	b.CBZ(x1, "next_arg")
	b.ADDi(x19, x19, 8)

	b.Label("next_arg")
	b.LDRpost(x1, x19, 8)
	b.CBZ(x1, "args_done")
	b.MOV(x22, x1)
	b.MOV(x9, x1)

	// A term: a number [0-9.]* and a word from the table.
	b.Label("term")
	b.MOV(x10, x9)
	b.Label("scan")
	b.LDRBpost(w1, x9, 1)
	b.CMPi(w1, '.')
	b.Bcond(a.EQ, "scan")
	b.SUBi(w1, w1, '0')
	b.CMPi(w1, 9)
	b.Bcond(a.LS, "scan")
	b.SUBi(x11, x9, 1) // number end = word start

	b.ADR(x12, "words")
	b.Label("word")
	b.LDRBpost(w2, x12, 1)
	b.CBZ(w2, "bare") // end of the table
	b.MOV(x9, x11)
	b.Label("compare") // stops at the argument's NUL at the latest
	b.LDRBpost(w3, x12, 1)
	b.LDRBpost(w4, x9, 1)
	b.SUBi(w2, w2, 1)
	b.CMP(w3, w4)
	b.Bcond(a.NE, "skip")
	b.CBNZ(w2, "compare")
	b.B("matched")
	b.Label("skip")
	b.ADD(x12, x12, x2)
	b.ADDi(x12, x12, 2) // k and c
	b.B("word")

	b.Label("matched") // x9: after the word; x12: its k and c
	b.LDURB(w1, x9, -1)
	b.CBNZ(w1, "unit")
	// A keyword (a word ending in NUL): the whole argument, no number, and not a
	// flag's value. k is 0 for inf and --live (c keywordLive), 1 for help, 2 for a flag.
	b.CMP(x11, x22)
	b.Bcond(a.NE, "invalid")
	b.CBNZ(x29, "invalid")
	b.LDRB(w13, x12, 0)
	b.CMPi(w13, 1)
	b.Bcond(a.EQ, "help")
	b.Bcond(a.HI, "flag")
	b.LDRB(w1, x12, 1)
	b.CBNZ(w1, "live_flag")
	b.MOVZ(x21, 1, 0) // inf
	b.B("next_arg")
	b.Label("live_flag") // --live: x21 stays odd after inf
	b.ADDi(x21, x21, 2)
	b.B("next_arg")
	// A flag: its value, the next argument, adds up in x20 from 0, MIN aside in x28.
	b.Label("flag")
	b.LDRB(w29, x12, 1)
	b.MOV(x28, x20)
	b.MOV(x20, xzr)
	b.CMPi(w13, flagAdaptive)
	b.CSEL(x24, x6, x24, a.EQ) // adaptive (not 0), unless --allow (flagBackground)
	b.B("next_arg")

	// No word after the number: it counts seconds (the table ends with their k and c),
	// and must be the whole argument (a later term sees the same text and no word).
	b.Label("bare")
	b.MOV(x9, x11)
	b.CMP(x10, x22)
	b.Bcond(a.NE, "invalid")

	// From matched (a unit) or bare. Head: the digits down to whole nanoseconds,
	// checked acc = acc*10 + digit.
	b.Label("unit")
	b.LDRB(w13, x12, 0)
	b.LDRB(w14, x12, 1)
	b.MOV(x5, x10)
	b.MOV(x15, xzr)
	b.MOV(x16, xzr)
	b.MOV(x17, xzr)
	b.MOV(x7, xzr) // no carry
	b.Label("digit")
	b.CMP(x5, x11)
	b.Bcond(a.HS, "digits_done")
	b.LDRBpost(w1, x5, 1)
	b.SUBSi(w1, w1, '0')
	b.Bcond(a.PL, "head")
	b.CBNZ(x17, "invalid") // a second dot
	b.MOVZ(x17, 1, 0)
	b.B("digit")
	b.Label("head")
	b.SUBS(x13, x13, x17) // after the dot each digit uses one power of ten of the unit
	b.Bcond(a.LT, "tail")
	b.ADDi(x16, x16, 1)
	b.UMULH(x8, x15, x6)
	b.CBNZ(x8, "invalid")
	b.MUL(x15, x15, x6)
	b.TBNZ(x15, 63, "invalid")
	b.ADDS(x15, x15, x1)
	b.Bcond(a.MI, "invalid")
	b.B("digit")

	b.Label("digits_done")
	b.CBZ(x16, "invalid") // no digit at all
	b.Label("pad")        // unused powers of ten scale the unit: c*10^k
	b.SUBSi(x13, x13, 1)
	b.Bcond(a.MI, "scale")
	b.MUL(x14, x14, x6)
	b.B("pad")

	// Tail: the digits below a nanosecond. floor(c * 0.tail) is the carry of the long
	// multiplication c*tail, computed right to left.
	b.Label("tail") // x5 is one past the first tail digit
	b.Label("tail_digit")
	b.LDRBpre(w1, x11, -1)
	b.SUBSi(w1, w1, '0')
	b.Bcond(a.MI, "invalid") // a second dot
	b.MADD(w1, w1, w14, w7)
	b.UDIV(w7, w1, w6)
	b.CMP(x11, x5)
	b.Bcond(a.HS, "tail_digit")

	b.Label("scale") // total += acc*c*10^k + carry, checked
	b.UMULH(x1, x15, x14)
	b.CBNZ(x1, "invalid")
	b.MUL(x15, x15, x14)
	b.TBNZ(x15, 63, "invalid")
	b.ADDS(x15, x15, x7)
	b.Bcond(a.MI, "invalid")
	b.ADDS(x20, x20, x15)
	b.Bcond(a.VS, "invalid")
	b.LDRB(w1, x9, 0)
	b.CBNZ(w1, "term")
	// The argument ends. A flag's value goes to its slot (the last flag wins), and
	// MIN back to x20.
	b.CBZ(x29, "next_arg")
	b.CMPi(x29, slotMax)
	b.CSEL(x25, x20, x25, a.LO)
	b.CSEL(x26, x20, x26, a.EQ)
	b.CMPi(x29, slotRequests) // QUIET < MAX < WITHIN < ALLOW
	b.CSEL(x18, x20, x18, a.EQ)
	b.CSEL(x27, x20, x27, a.HI)
	b.MOV(x20, x28)
	b.MOV(x29, xzr)
	b.B("next_arg")

	b.Label("args_done")
	b.CBZ(x22, "default")  // no argument at all
	b.CBNZ(x29, "invalid") // a flag with no value (x22)
	b.TBNZ(a.W21, 0, "inf")
	b.CBZ(x21, "live_done")
	// --live (nap.ParseLive, nap.Request.Raise): LivePath read once into a buffer below
	// the stack, its four fields pushed, then MIN (x20), QUIET (x25), MAX (x26) and
	// WITHIN (x18) each raised to its field. Fixed arguments bring no QUIET or MAX of
	// their own; the wait is adaptive (x24) when MAX is not 0 then. x21 is 1 once the
	// live wait is read; a line that cannot be read is said, and leaves x21 even. x10
	// keeps the stack pointer, x7 1e6 (ns per ms).
	b.CBNZ(x24, "live_open")
	b.MOV(x25, xzr)
	b.MOV(x26, xzr)
	b.Label("live_open")
	b.ADDi(x10, sp, 0)
	b.MOVN(x0, uint16(^atFDCWD), 0)
	b.ADR(x1, "live_path")
	b.MOV(x2, xzr) // O_RDONLY
	b.MOVZ(x8, arm64SysOpenat, 0)
	b.SVC(0)
	b.TBNZ(x0, 63, "live_missing")
	b.SUBi(x1, sp, liveBelow)
	b.MOVZ(x2, nap.LiveRead, 0)
	b.MOVZ(x8, arm64SysRead, 0)
	b.SVC(0)
	b.TBNZ(x0, 63, "live_missing")
	b.ADD(x9, x1, x0)
	b.STP(xzr, xzr, x9, 0, false) // the text ends here
	b.LDR(x2, x1, 0)              // the head and the first field's space, at once
	b.ADR(x3, "live_head")
	b.LDR(x3, x3, 0)
	b.CMP(x2, x3)
	b.Bcond(a.NE, "live_missing")
	b.ADDi(x1, x1, uint32(len(nap.LiveHead)))
	b.MOVZ(x4, liveFields, 0)
	movImm(b, x7, uint64(nsPerMs))
	b.Label("live_field") // a space, then 1 to nap.LiveDigits digits
	b.LDRBpost(w2, x1, 1)
	b.CMPi(w2, ' ')
	b.Bcond(a.NE, "live_missing")
	b.MOV(x3, x1)
	b.MOV(x5, xzr)
	b.Label("live_digit")
	b.LDRB(w2, x1, 0)
	b.SUBi(w2, w2, '0')
	b.CMPi(w2, 9)
	b.Bcond(a.HI, "live_number")
	b.MADD(x5, x5, x6, x2)
	b.ADDi(x1, x1, 1)
	b.B("live_digit")
	b.Label("live_number")
	b.SUB(x2, x1, x3)
	b.SUBi(x2, x2, 1)
	b.CMPi(x2, nap.LiveDigits-1)
	b.Bcond(a.HI, "live_missing")
	b.MUL(x5, x5, x7)
	b.STP(x5, xzr, sp, -16, true)
	b.SUBSi(x4, x4, 1)
	b.Bcond(a.NE, "live_field")
	b.LDRB(w2, x1, 0) // then a newline or the end
	b.CMPi(w2, '\n')
	b.Bcond(a.EQ, "live_raise")
	b.CBNZ(w2, "live_missing")
	b.Label("live_raise") // WITHIN first, down to MIN
	for _, r := range []a.Reg{x18, x26, x25, x20} {
		b.LDRpost(x2, sp, 16)
		b.CMP(r, x2)
		b.CSEL(r, x2, r, a.LO)
	}
	b.CMPi(x26, 0)
	b.CSEL(x24, x6, x24, a.NE)
	b.MOVZ(x21, 1, 0)
	b.B("live_done")
	b.Label("live_missing")
	b.ADDi(sp, x10, 0)
	b.ADR(x1, "msg_live_missing")
	b.MOVZ(x2, uint16(len(nap.LiveMissing)), 0)
	b.BL("say")
	b.Label("live_done")
	b.CBNZ(x24, "adaptive")
	// A fixed delay of x20 ns (none for zero) is an adaptive wait whose MAX is 0, so
	// that it ends at MIN, the delay, with QUIET at its default, its own ALLOW (the
	// default after an invalid argument) and the request signal at nap.ActiveWithin: it
	// observes, and keeps its exit status (x23). x24 0 marks it.
	b.Label("fixed_wait") // from default too
	b.CBZ(x20, "exit")
	movImm(b, x25, uint64(nap.DefaultQuiet))
	b.MOV(x26, xzr)
	movImm(b, x18, uint64(nap.ActiveWithin))
	b.MOV(x24, xzr)
	b.B("adaptive")
	b.Label("inf")
	b.ADR(x24, "sleep_calls")
	b.MOVN(x20, 0x8000, 48) // inf: the longest sleep, 2^63-1 ns, again and again

	// One relative sleep on the monotonic clock, of x20 ns, again and again: inf.
	b.Label("sleep")
	b.MOVZ(x1, nsPerSecond&0xFFFF, 0)
	b.MOVK(x1, nsPerSecond>>16, 16)
	b.UDIV(x2, x20, x1)
	b.MSUB(x3, x2, x1, x20)
	b.STP(x2, x3, sp, -16, true)
	b.BL("nap_ts")
	b.CBNZ(x21, "sleep")
	b.Label("exit")
	b.MOV(x0, x23)
	b.Label("exit_x0")
	b.MOVZ(x8, arm64SysExitGroup, 0)
	b.SVC(0)
	b.BRK(0)          // exit_group denied (a seccomp profile): nothing may run on
	b.Label("cannot") // every way refused, said on stderr
	b.MOVZ(x0, nap.ExitCannotSleep, 0)
	b.B("exit_x0")

	// nap_ts sleeps the timespec at sp: nanosleep, and where the kernel refuses it (a
	// seccomp profile), clock_nanosleep(CLOCK_MONOTONIC, 0, ts, NULL), then ppoll(_, 0,
	// ts, NULL): a refused call never ends the delay early. A stop and continue does
	// not end any of them early: the kernel restarts them itself with the original
	// expiry. The return address waits in x29 (say is called from here). x24 points at
	// the way to try: a way refused is dropped, so that it is tried, and said, once.
	b.Label("nap_ts")
	b.MOV(x29, x30)
	b.Label("try")
	b.LDRB(w8, x24, 0)
	b.CBZ(w8, "cannot")
	b.MOVZ(x0, clockMonotonic, 0) // ppoll ignores it: it polls no file
	b.ADDi(x2, sp, 0)
	b.CMPi(w8, arm64SysNanosleep)
	b.CSEL(x0, x2, x0, a.EQ) // nanosleep's request
	b.MOV(x1, xzr)
	b.MOV(x3, xzr)
	b.SVC(0)
	b.CBZ(x0, "slept")
	b.ADR(x1, "msg_refused")
	b.MOVZ(x2, uint16(len(nap.Refused)), 0)
	b.BL("say")
	b.ADDi(x24, x24, 1)
	b.B("try")
	b.Label("slept")
	b.MOV(x30, x29)
	b.RET()

	// The wait (spec: the package documentation). Registers: x20 MIN, x25 QUIET, x26
	// the limit (MAX, at least MIN), x27 ALLOW in ns, x22 the clock (the readings'
	// sleeps), x19 when the quiet window began, x28 the count then, x29 the count now,
	// x16 the read buffer, x14 the map of listening ports above it, x15 1e9, x17 one
	// poll interval, x21 the verdict's descriptor (negative: none), x24 0 for a fixed
	// delay (then the ways to sleep, see nap_ts), x23 the exit status; x19 is -1 once
	// blind. On the stack, above the timespec of a reading's sleep: the last readings
	// that saw new connections and requests over kept ones, the count at the start, and
	// x24 (0 for a fixed delay). The system calls keep every register but x0.
	// The verdict's head is written first.
	b.Label("adaptive")
	movImm(b, x2, uint64(nsPerMs)) // WITHIN in whole milliseconds, the kernel's unit
	b.UDIV(x18, x18, x2)
	b.CMP(x26, x20)
	b.CSEL(x26, x20, x26, a.LO)
	b.SUBi(sp, sp, (readBuf+portMap)&^0xFFF)
	b.SUBi(sp, sp, (readBuf+portMap)&0xFFF)
	b.ADDi(x16, sp, 0)
	b.ADDi(x14, x16, readBuf)
	movImm(b, x17, uint64(pollNs))
	movImm(b, x15, nsPerSecond)
	b.STP(x21, xzr, sp, -16, true) // --live's state (x21: 0 none, 1 read, even not); when the count's baseline (x28) was taken
	b.STP(xzr, x24, sp, -16, true) // the count at the start, a fixed delay or not
	b.STP(xzr, xzr, sp, -16, true) // the last readings with new and kept connections
	b.STP(xzr, x17, sp, -16, true) // {0 s, pollNs}
	b.ADR(x24, "sleep_calls")
	b.MOV(x22, xzr)
	b.MOV(x19, xzr)
	b.MOVN(x0, uint16(^atFDCWD), 0)
	b.ADR(x1, "verdict_path")
	movImm(b, x2, oAppendCloexec)
	b.MOVZ(x8, arm64SysOpenat, 0)
	b.SVC(0)
	b.MOV(x21, x0)
	b.TBNZ(x0, 63, "no_log")
	b.MOV(x5, x0)
	b.ADR(x1, "verdict_head")
	b.MOVZ(x2, uint16(len(nap.VerdictHead)), 0)
	b.BL("write_all")
	b.Label("no_log")
	b.BL("count")
	b.MOV(x28, x1)
	b.STR(x1, sp, 32)
	// Each reading: traffic when the count rose by more than ALLOW since the window
	// began (count*1e9 against ALLOW in ns, unsigned: a count that went back, or one
	// too large to scale, is traffic too). Otherwise the sockets, at every
	// nap.SocketsEvery-th reading and before the wait ends quiet (the window QUIET long,
	// MIN passed): an inbound connection that received data is traffic too. At the
	// limit the wait ends in any case. A reading's sleep is one poll interval, or what
	// is left to the limit if less. Once blind, the readings only count the time.
	b.Label("poll")
	b.SUB(x2, x26, x22)
	b.CMP(x2, x17)
	b.CSEL(x2, x2, x17, a.LO)
	b.STR(x2, sp, 8)
	b.ADD(x22, x22, x2)
	b.BL("nap_ts")
	b.ADDi(x2, x19, 1)
	b.CBZ(x2, "until_limit") // blind
	b.BL("count")
	b.MOV(x29, x1)
	b.SUB(x2, x1, x28)
	b.UMULH(x3, x2, x15)
	b.CBNZ(x3, "new_conns")
	b.MUL(x2, x2, x15)
	b.CMP(x2, x27)
	b.Bcond(a.HI, "new_conns")
	b.LDR(x3, sp, 56) // QUIET without traffic since the baseline: a new one
	b.SUB(x3, x22, x3)
	b.CMP(x3, x25)
	b.Bcond(a.LO, "based")
	b.STR(x22, sp, 56)
	b.MOV(x28, x29)
	b.Label("based")
	b.SUB(x2, x22, x19)
	b.CMP(x2, x25)
	b.Bcond(a.LO, "due")
	b.CMP(x22, x20)
	b.Bcond(a.HS, "last_look")
	b.Label("due")
	movImm(b, x2, uint64(socketsNs))
	b.UDIV(x3, x22, x2)
	b.MSUB(x3, x3, x2, x22)
	b.CBNZ(x3, "until_limit")
	b.BL("sockets")
	b.CBNZ(x1, "kept_conns")
	b.Label("until_limit")
	b.CMP(x22, x26)
	b.Bcond(a.LO, "poll")
	b.B("finish")
	b.Label("last_look") // quiet, but for the sockets
	b.BL("sockets")
	b.CBZ(x1, "finish")
	// A reading saw requests over kept connections, or (new_conns) new connections: it
	// is the last of its kind, and a new window begins there.
	b.Label("kept_conns")
	b.STR(x22, sp, 24)
	b.B("traffic")
	b.Label("new_conns")
	b.STR(x22, sp, 16)
	b.Label("traffic") // a new window, from here
	b.MOV(x19, x22)
	b.MOV(x28, x29)
	b.STR(x22, sp, 56)
	b.B("until_limit")

	// The verdict (nap.Verdict.Tail), built in the read buffer (x9 the next byte) and
	// written whole to its descriptor, if one is open: blind; late, when a reading saw
	// new connections less than QUIET before the end; held, when one saw only requests
	// over kept connections then; or quiet. Then the exit, with the status.
	b.Label("finish")
	b.TBNZ(x21, 63, "exit")
	b.ADDi(x3, x19, 1)
	b.ADR(x1, "word_blind")
	b.CBZ(x3, "worded")
	b.ADR(x1, "word_quiet")
	b.CBZ(x19, "worded") // no reading saw traffic
	b.SUB(x2, x22, x19)
	b.CMP(x2, x25)
	b.Bcond(a.HS, "worded")
	b.ADR(x1, "word_held")
	b.LDR(x3, sp, 16)
	b.CBZ(x3, "worded") // no reading saw new connections
	b.SUB(x2, x22, x3)
	b.CMP(x2, x25)
	b.Bcond(a.HS, "worded")
	b.ADR(x1, "word_late")
	b.Label("worded")
	b.MOV(x9, x16)
	b.BL("put")
	movImm(b, x11, uint64(nsPerMs))
	b.ADR(x1, "field_end")
	b.UDIV(x2, x22, x11)
	b.BL("put_ms")
	b.ADDi(x3, x19, 1)
	b.CBZ(x3, "line_end") // blind
	b.ADR(x1, "field_last")
	b.UDIV(x2, x19, x11)
	b.BL("put_ms")
	b.LDR(x10, sp, 32)
	b.ADR(x1, "field_conns")
	b.SUB(x2, x29, x10)
	b.BL("put_num")
	b.ADR(x1, "field_total")
	b.MOV(x2, x10)
	b.BL("put_num")
	b.ADR(x1, "field_kept")
	b.LDR(x2, sp, 24)
	b.UDIV(x2, x2, x11)
	b.BL("put_ms")
	b.Label("line_end") // with --live, where the wait came from
	b.LDR(x3, sp, 48)
	b.CBZ(x3, "line_feed")
	b.ADR(x1, "wait_"+nap.WaitLive)
	b.TBNZ(w3, 0, "wait_word")
	b.ADR(x1, "wait_"+nap.WaitArgs)
	b.Label("wait_word")
	b.BL("put")
	b.Label("line_feed")
	b.MOVZ(w3, '\n', 0)
	b.STRBpost(w3, x9, 1)
	b.MOV(x5, x21)
	b.MOV(x1, x16)
	b.SUB(x2, x9, x16)
	b.BL("write_all")
	b.B("exit")

	// put_ms is put_num, then "ms"; put_num is put, then x2 in decimal; put writes at x9
	// the text at x1 (its length first). Registers: x3, x4, x7, x8, and x12 and x13
	// for the return addresses.
	b.Label("put_ms")
	b.MOV(x12, x30)
	b.BL("put_num")
	b.MOVZ(w3, 'm', 0)
	b.STRBpost(w3, x9, 1)
	b.MOVZ(w3, 's', 0)
	b.STRBpost(w3, x9, 1)
	b.MOV(x30, x12)
	b.RET()
	b.Label("put_num")
	b.MOV(x13, x30)
	b.BL("put")
	b.MOV(x30, x13)
	b.MOV(x7, x2) // the digits' count, to find the end
	b.Label("digit_count")
	b.UDIV(x7, x7, x6)
	b.ADDi(x9, x9, 1)
	b.CBNZ(x7, "digit_count")
	b.MOV(x3, x9)
	b.Label("digit_out") // right to left
	b.UDIV(x7, x2, x6)
	b.MSUB(x8, x7, x6, x2)
	b.ADDi(w8, w8, '0')
	b.STRBpre(w8, x3, -1)
	b.MOV(x2, x7)
	b.CBNZ(x2, "digit_out")
	b.RET()
	b.Label("put")
	b.LDRBpost(w3, x1, 1)
	b.Label("put_text")
	b.LDRBpost(w4, x1, 1)
	b.STRBpost(w4, x9, 1)
	b.SUBSi(w3, w3, 1)
	b.Bcond(a.NE, "put_text")
	b.RET()

	// sockets reads the sockets of the network namespace (see nap.ReadSockets and
	// nap.Sockets.Read) and returns in x1 the inbound connections that received data
	// within WITHIN (x18, in milliseconds); without --requests, 0 at once. Registers: x9
	// the netlink socket, x5 the dump's states, x10 the message read, x12 its length, x11 the
	// datagram's end, x13 an attribute, x3 its length or the port, x7 the count. Any
	// failure is unreadable_sockets.
	b.Label("sockets")
	b.MOV(x7, xzr)
	b.CBZ(x18, "sockets_off")
	b.SUBi(x3, x14, 16) // no port listens yet
	b.MOVZ(x4, portMap/16, 0)
	b.Label("clear")
	b.STP(xzr, xzr, x3, 16, true)
	b.SUBSi(x4, x4, 1)
	b.Bcond(a.NE, "clear")
	b.MOVZ(x0, afNetlink, 0)
	movImm(b, x1, sockRawCloexec)
	b.MOVZ(x2, nap.NetlinkSockDiag, 0)
	b.MOVZ(x8, arm64SysSocket, 0)
	b.Label("diag_socket")
	b.SVC(0)
	b.TBNZ(x0, 63, "unreadable_sockets")
	b.MOV(x9, x0)
	b.MOVZ(x5, 1<<nap.TCPListen, 0) // the first dump's states
	// A dump: its request (nap.DiagRequests, the states in x5) built in the buffer and
	// written whole, then its datagrams read to NLMSG_DONE.
	b.Label("dump")
	for off := int32(0); off < nap.DiagRequestLen; off += 16 {
		b.STP(xzr, xzr, x16, off, false)
	}
	b.MOVZ(x2, nap.DiagRequestLen, 0)
	b.STR(w2, x16, 0)
	b.MOVZ(x2, nap.TCPDiagGetSock, 0)
	b.MOVK(x2, nap.NlmFRequestDump, 16)
	b.STR(w2, x16, 4)
	b.MOVZ(x2, 1<<(nap.InetDiagInfo-1), 0)
	b.STRB(w2, x16, nap.DiagReqExt)
	b.STR(w5, x16, nap.DiagReqStates)
	b.MOV(x0, x9)
	b.MOV(x1, x16)
	b.MOVZ(x2, nap.DiagRequestLen, 0)
	b.MOVZ(x8, arm64SysWrite, 0)
	b.SVC(0)
	b.CMPi(x0, nap.DiagRequestLen)
	b.Bcond(a.NE, "unreadable_sockets")
	b.Label("datagram")
	b.MOV(x0, x9)
	b.MOV(x1, x16)
	movImm(b, x2, nap.DiagRead)
	b.MOVZ(x8, arm64SysRead, 0)
	b.SVC(0)
	b.CMPi(x0, 0)
	b.Bcond(a.LE, "unreadable_sockets")
	b.MOV(x10, x16)
	b.ADD(x11, x16, x0)
	// Each message of the datagram: a header within what is left of it; NLMSG_DONE
	// ends the dump, NLMSG_ERROR is unreadable, a socket message is read, any other
	// skipped.
	b.Label("message")
	b.SUBS(x2, x11, x10)
	b.Bcond(a.EQ, "datagram") // the datagram is read: the next one
	b.CMPi(x2, nap.NlmsgHdrLen)
	b.Bcond(a.LO, "unreadable_sockets")
	b.LDR(w12, x10, 0)
	b.CMPi(x12, nap.NlmsgHdrLen)
	b.Bcond(a.LO, "unreadable_sockets")
	b.CMP(x12, x2)
	b.Bcond(a.HI, "unreadable_sockets")
	b.LDRH(w3, x10, 4)
	b.CMPi(w3, nap.NlmsgDone)
	b.Bcond(a.EQ, "dump_done")
	b.CMPi(w3, nap.NlmsgError)
	b.Bcond(a.EQ, "unreadable_sockets")
	b.CMPi(w3, nap.TCPDiagGetSock)
	b.Bcond(a.NE, "next_message")
	b.CMPi(x12, msgAttrs)
	b.Bcond(a.LO, "unreadable_sockets")
	b.LDRH(w3, x10, msgSport) // the port as the kernel gives it
	b.LDRB(w4, x10, msgState)
	b.CMPi(w4, nap.TCPListen)
	b.Bcond(a.EQ, "listen")
	b.CMPi(w4, nap.TCPEstablished)
	b.Bcond(a.NE, "next_message")
	b.LDRBr(w4, x14, x3)
	b.CBZ(w4, "next_message") // outbound: the pod's own connection to somewhere
	b.ADDi(x13, x10, msgAttrs)
	// An inbound connection's attributes, to INET_DIAG_INFO: active when its
	// tcpi_last_data_recv is below WITHIN and it is kept (tcpi_data_segs_in at least
	// nap.KeptSegs, where tcp_info is long enough to have it).
	b.Label("attr")
	b.ADD(x2, x10, x12)
	b.SUB(x2, x2, x13)
	b.CMPi(x2, nap.RtaHdrLen)
	b.Bcond(a.LO, "unreadable_sockets") // no INET_DIAG_INFO, or a broken attribute
	b.LDRH(w3, x13, 0)
	b.CMPi(w3, nap.RtaHdrLen)
	b.Bcond(a.LO, "unreadable_sockets")
	b.CMP(x3, x2)
	b.Bcond(a.HI, "unreadable_sockets")
	b.LDRH(w4, x13, 2)
	b.CMPi(w4, nap.InetDiagInfo)
	b.Bcond(a.NE, "next_attr")
	b.CMPi(w3, infoLastRcv+4)
	b.Bcond(a.LO, "next_attr")
	b.CMPi(w3, infoSegsIn+4) // an older kernel's tcp_info: every connection
	b.Bcond(a.LO, "recent")
	b.LDR(w4, x13, infoSegsIn)
	b.CMPi(w4, nap.KeptSegs)
	b.Bcond(a.LO, "next_message") // its first request: a new connection's
	b.Label("recent")
	b.LDR(w4, x13, infoLastRcv)
	b.CMP(x4, x18)
	b.Bcond(a.HS, "next_message")
	b.ADDi(x7, x7, 1)
	b.B("next_message")
	b.Label("next_attr") // past it, 4-byte aligned, or to the end
	b.ADDi(x3, x3, 3)
	b.ANDi(x3, x3, ^uint64(3))
	b.CMP(x3, x2)
	b.CSEL(x3, x2, x3, a.HI)
	b.ADD(x13, x13, x3)
	b.B("attr")
	b.Label("listen")
	b.MOVZ(w4, 1, 0)
	b.STRBr(w4, x14, x3)
	b.Label("next_message") // past it, 4-byte aligned, or to the end
	b.ADDi(x12, x12, 3)
	b.ANDi(x12, x12, ^uint64(3))
	b.SUB(x2, x11, x10)
	b.CMP(x12, x2)
	b.CSEL(x12, x2, x12, a.HI)
	b.ADD(x10, x10, x12)
	b.B("message")
	// The established sockets after the listening ones; then the socket is closed.
	b.Label("dump_done")
	b.CMPi(x5, 1<<nap.TCPEstablished)
	b.MOVZ(x5, 1<<nap.TCPEstablished, 0)
	b.Bcond(a.NE, "dump")
	b.MOV(x0, x9)
	b.MOVZ(x8, arm64SysClose, 0)
	b.Label("diag_close")
	b.SVC(0)
	b.Label("sockets_off")
	b.MOV(x1, x7)
	b.RET()

	// count reads /proc/net/snmp (one read of up to nap.SnmpRead bytes, into x16) and returns
	// PassiveOpens in x1: see nap.PassiveOpens. Any failure is unreadable.
	b.Label("count")
	b.MOVN(x0, uint16(^atFDCWD), 0)
	b.ADR(x1, "snmp_path")
	b.MOV(x2, xzr) // O_RDONLY
	b.MOVZ(x8, arm64SysOpenat, 0)
	b.SVC(0)
	b.TBNZ(x0, 63, "unreadable")
	b.MOV(x4, x0)
	b.MOV(x1, x16)
	b.MOVZ(x2, nap.SnmpRead, 0)
	b.MOVZ(x8, arm64SysRead, 0)
	b.SVC(0)
	b.TBNZ(x0, 63, "unreadable")
	b.ADD(x1, x16, x0)
	b.STP(xzr, xzr, x1, 0, false) // the text ends here
	b.MOV(x0, x4)
	b.MOVZ(x8, arm64SysClose, 0)
	b.SVC(0)
	b.MOV(x9, x16)
	// A line that begins with "Tcp: " and a digit or a minus.
	b.Label("line")
	b.MOV(x10, x9)
	b.ADR(x12, "tcp_head")
	b.MOVZ(x2, uint16(len(tcpHead)), 0)
	b.Label("tcp_cmp")
	b.LDRBpost(w3, x12, 1)
	b.LDRBpost(w1, x9, 1)
	b.CMP(w3, w1)
	b.Bcond(a.NE, "next_line")
	b.SUBSi(x2, x2, 1)
	b.Bcond(a.NE, "tcp_cmp")
	b.LDRB(w1, x9, 0)
	b.CMPi(w1, '-')
	b.Bcond(a.EQ, "fields")
	b.SUBi(w1, w1, '0')
	b.CMPi(w1, 9)
	b.Bcond(a.LS, "fields")
	b.Label("next_line")
	b.MOV(x9, x10)
	b.Label("skip_line")
	b.LDRBpost(w1, x9, 1)
	b.CBZ(w1, "unreadable")
	b.CMPi(w1, '\n')
	b.Bcond(a.NE, "skip_line")
	b.B("line")
	// Past five spaces, the digits of PassiveOpens, wrapping.
	b.Label("fields")
	b.MOVZ(x2, 5, 0)
	b.Label("spaces")
	b.LDRBpost(w1, x9, 1)
	b.CBZ(w1, "unreadable")
	b.CMPi(w1, ' ')
	b.Bcond(a.NE, "spaces")
	b.SUBSi(x2, x2, 1)
	b.Bcond(a.NE, "spaces")
	b.MOV(x1, xzr)
	b.LDRB(w3, x9, 0)
	b.SUBi(w3, w3, '0')
	b.CMPi(w3, 9)
	b.Bcond(a.HI, "unreadable") // no digit
	b.Label("number")
	b.MADD(x1, x1, x6, x3)
	b.LDRBpre(w3, x9, 1)
	b.SUBi(w3, w3, '0')
	b.CMPi(w3, 9)
	b.Bcond(a.LS, "number")
	b.RET()

	// The count or the sockets cannot be read: blind. An adaptive wait says so and will
	// exit 3; both wait until the limit.
	b.Label("unreadable_sockets")
	b.ADR(x1, "msg_unreadable_sockets")
	b.MOVZ(x2, uint16(len(nap.UnreadableSockets)), 0)
	b.B("unreadable_say")
	b.Label("unreadable")
	b.ADR(x1, "msg_unreadable")
	b.MOVZ(x2, uint16(len(nap.Unreadable)), 0)
	b.Label("unreadable_say")
	b.MOVN(x19, 0, 0) // blind
	b.LDR(x3, sp, 40)
	b.CBZ(x3, "until_limit") // a fixed delay says nothing
	b.BL("say")
	b.MOVZ(x23, nap.ExitUnreadable, 0)
	b.B("until_limit")

	b.Label("invalid") // prefix, the argument, suffix
	b.SUBi(x1, x22, 1)
	b.Label("strlen")
	b.LDRBpre(w2, x1, 1)
	b.CBNZ(w2, "strlen")
	b.SUB(x7, x1, x22)
	b.ADR(x1, "msg_invalid")
	b.MOVZ(x2, uint16(len(nap.InvalidPrefix)), 0)
	b.BL("say")
	b.MOV(x1, x22)
	b.MOV(x2, x7)
	b.BL("say")
	b.ADR(x1, "msg_default")
	b.MOVZ(x2, uint16(len(nap.InvalidSuffix)), 0)
	b.BL("say")
	b.MOVZ(x23, exitInvalid, 0)
	b.Label("default")
	b.MOV(x21, xzr)
	b.MOV(x27, xzr) // nap.DefaultAllow
	b.MOVZ(x20, uint16(defaultNs&0xFFFF), 0)
	b.MOVK(x20, uint16(defaultNs>>16&0xFFFF), 16)
	b.MOVK(x20, uint16(defaultNs>>32), 32)
	b.B("fixed_wait")

	b.Label("help")
	b.MOVZ(x5, stdout, 0)
	b.ADR(x1, "usage")
	b.MOVZ(x2, uint16(len(nap.Usage)), 0)
	b.BL("write_all")
	b.B("exit")

	// say writes x2 bytes from x1 to stderr; write_all to the descriptor in x5. A short
	// write goes on with the rest; a full non-blocking pipe is waited for with ppoll (as
	// the reference's runtime does); an error gives up the message, never the sleep.
	b.Label("say")
	b.MOVZ(x5, stderr, 0)
	b.Label("write_all")
	b.MOV(x0, x5)
	b.MOVZ(x8, arm64SysWrite, 0)
	b.SVC(0)
	b.ADDi(x4, x0, errEAGAIN)
	b.CBZ(x4, "wait")
	b.CMPi(x0, 0)
	b.Bcond(a.LE, "written")
	b.ADD(x1, x1, x0)
	b.SUBS(x2, x2, x0)
	b.Bcond(a.NE, "write_all")
	b.Label("written")
	b.RET()
	b.Label("wait") // ppoll({fd, POLLOUT}, 1, NULL, NULL)
	b.MOV(x9, x1)
	b.MOV(x10, x2)
	b.MOVZ(x4, pollOut, 32)
	b.ADD(x4, x4, x5)
	b.STP(x4, xzr, sp, -16, false)
	b.SUBi(x0, sp, 16)
	b.MOVZ(x1, 1, 0)
	b.MOV(x2, xzr)
	b.MOV(x3, xzr)
	b.MOVZ(x8, arm64SysPpoll, 0)
	b.SVC(0)
	b.MOV(x1, x9)
	b.MOV(x2, x10)
	b.B("write_all")

	// on_signal is the handler of signals 1 to 15: the signal number comes in x0.
	b.Label("on_signal")
	b.ADDi(x0, x0, exitSignalBase)
	b.B("exit_x0")
}
