package arm64

import "fmt"

// Reg is a general-purpose register: 64-bit (X) or 32-bit (W). Number 31 is the zero
// register or the stack pointer, as the instruction decides; SP and XZR say which the
// program means, and encoders reject the wrong one.
type Reg struct {
	num  uint8
	is64 bool
	sp   bool // number 31 read as the stack pointer
}

// The registers.
var (
	X0, X1, X2, X3, X4, X5, X6, X7         = Reg{0, true, false}, Reg{1, true, false}, Reg{2, true, false}, Reg{3, true, false}, Reg{4, true, false}, Reg{5, true, false}, Reg{6, true, false}, Reg{7, true, false}
	X8, X9, X10, X11, X12, X13, X14, X15   = Reg{8, true, false}, Reg{9, true, false}, Reg{10, true, false}, Reg{11, true, false}, Reg{12, true, false}, Reg{13, true, false}, Reg{14, true, false}, Reg{15, true, false}
	X16, X17, X19, X20, X21, X22, X23, X24 = Reg{16, true, false}, Reg{17, true, false}, Reg{19, true, false}, Reg{20, true, false}, Reg{21, true, false}, Reg{22, true, false}, Reg{23, true, false}, Reg{24, true, false}
	X18                                    = Reg{18, true, false} // the platform register: Linux leaves it to the program
	X25, X26, X27, X28, X29, X30           = Reg{25, true, false}, Reg{26, true, false}, Reg{27, true, false}, Reg{28, true, false}, Reg{29, true, false}, Reg{30, true, false}
	XZR                                    = Reg{31, true, false}
	SP                                     = Reg{31, true, true}

	W0, W1, W2, W3, W4, W5, W6, W7         = Reg{0, false, false}, Reg{1, false, false}, Reg{2, false, false}, Reg{3, false, false}, Reg{4, false, false}, Reg{5, false, false}, Reg{6, false, false}, Reg{7, false, false}
	W8, W9, W10, W11, W12, W13, W14, W15   = Reg{8, false, false}, Reg{9, false, false}, Reg{10, false, false}, Reg{11, false, false}, Reg{12, false, false}, Reg{13, false, false}, Reg{14, false, false}, Reg{15, false, false}
	W16, W17, W19, W20, W21, W22, W23, WZR = Reg{16, false, false}, Reg{17, false, false}, Reg{19, false, false}, Reg{20, false, false}, Reg{21, false, false}, Reg{22, false, false}, Reg{23, false, false}, Reg{31, false, false}
	W29                                    = Reg{29, false, false}
)

func (r Reg) String() string {
	switch {
	case r.num == 31 && r.sp:
		if r.is64 {
			return "sp"
		}
		return "wsp"
	case r.num == 31:
		if r.is64 {
			return "xzr"
		}
		return "wzr"
	case r.is64:
		return fmt.Sprintf("x%d", r.num)
	}
	return fmt.Sprintf("w%d", r.num)
}

// Is64 tells whether r is an X register.
func (r Reg) Is64() bool { return r.is64 }

// Cond is a condition code.
type Cond uint8

// The condition codes.
const (
	EQ Cond = iota
	NE
	HS
	LO
	MI
	PL
	VS
	VC
	HI
	LS
	GE
	LT
	GT
	LE
	AL
	NV // encodes as AL: always
)

var condNames = [...]string{"eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al", "nv"}

func (c Cond) String() string { return condNames[c&15] }

// Invert returns the opposite condition.
func (c Cond) Invert() Cond { return c ^ 1 }
