package sleeper

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// gdbStub speaks the few packets of GDB's remote protocol that TestNoArgv needs to the
// stub of qemu-user (-g PORT), which holds the guest before its first instruction:
// read and write memory and the stack pointer, then detach.
type gdbStub struct {
	conn net.Conn
	r    *bufio.Reader
}

// startUnderGDBStub starts cmd (qemu-user and its guest, perhaps behind chroot ROOT)
// with qemu's stub listening, and connects to it: on a loopback TCP port, or with unix
// on a Unix socket. A guest whose sockets are read needs the Unix socket: in its network
// namespace the stub's TCP connection would be one of its inbound connections, and an
// active one. A guest the test detaches from needs TCP: after a detach, qemu 7.2 still
// reports the guest's signals to the stub, and a write to a closed Unix socket raises
// SIGPIPE (the guest's, then), where TCP's first one does not.
func startUnderGDBStub(cmd *exec.Cmd, unix bool) (*gdbStub, error) {
	at := slices.IndexFunc(cmd.Args, func(a string) bool { return strings.HasPrefix(filepath.Base(a), "qemu") })
	if at < 0 {
		return nil, fmt.Errorf("no qemu-user in %q", cmd.Args)
	}
	network, addr, stub := "tcp", "", ""
	if unix {
		root := "/"
		if filepath.Base(cmd.Args[0]) == "chroot" {
			root = cmd.Args[1]
		}
		dir, err := os.MkdirTemp(root, "gdb-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		addr = filepath.Join(dir, "stub.sock")
		inside, err := filepath.Rel(root, addr)
		if err != nil {
			return nil, err
		}
		network, stub = "unix", "/"+inside
	} else {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		addr, stub = fmt.Sprintf("127.0.0.1:%d", port), strconv.Itoa(port)
	}
	cmd.Args = slices.Insert(cmd.Args, at+1, "-g", stub)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout(network, addr, time.Second)
		if err == nil {
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			return &gdbStub{conn: conn, r: bufio.NewReader(conn)}, nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("qemu's gdb stub: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// call sends one packet and returns the reply's data.
func (g *gdbStub) call(data string) (string, error) {
	var sum byte
	for i := range len(data) {
		sum += data[i]
	}
	if _, err := fmt.Fprintf(g.conn, "$%s#%02x", data, sum); err != nil {
		return "", err
	}
	for {
		c, err := g.r.ReadByte()
		if err != nil {
			return "", err
		}
		switch c {
		case '+', '-': // acknowledgements
			continue
		case '$':
			reply, err := g.r.ReadString('#')
			if err != nil {
				return "", err
			}
			if _, err := g.r.Discard(2); err != nil { // the checksum
				return "", err
			}
			if _, err := g.conn.Write([]byte("+")); err != nil {
				return "", err
			}
			reply = strings.TrimSuffix(reply, "#")
			if strings.HasPrefix(reply, "E") && len(reply) == 3 {
				return "", fmt.Errorf("stub: %s for %q", reply, data)
			}
			return reply, nil
		}
	}
}

// aarch64SP is the stack pointer's number in the stub's register list (x0..x30, sp).
const aarch64SP = 31

// dropArgvARM64 does dropArgv's rewrite on an arm64 guest held by the stub, then lets
// it run.
func (g *gdbStub) dropArgvARM64() error {
	defer g.conn.Close()
	if _, err := g.call("?"); err != nil {
		return err
	}
	regs, err := g.call("g")
	if err != nil {
		return err
	}
	raw, err := hex.DecodeString(regs)
	if err != nil || len(raw) < (aarch64SP+1)*8 {
		return fmt.Errorf("registers %q: %v", regs, err)
	}
	sp := binary.LittleEndian.Uint64(raw[aarch64SP*8:])
	argc, err := g.call(fmt.Sprintf("m%x,8", sp))
	if err != nil {
		return err
	}
	if argc != "0100000000000000" {
		return fmt.Errorf("argc %s, want 1 to drop", argc)
	}
	sp += 8
	if reply, err := g.call(fmt.Sprintf("M%x,8:0000000000000000", sp)); err != nil || reply != "OK" {
		return errors.Join(err, fmt.Errorf("writing argc: %q", reply))
	}
	binary.LittleEndian.PutUint64(raw[aarch64SP*8:], sp)
	if reply, err := g.call("G" + hex.EncodeToString(raw)); err != nil || reply != "OK" {
		return errors.Join(err, fmt.Errorf("writing sp: %q", reply))
	}
	_, err = g.call("D") // detach: the guest runs
	return err
}

// The registers' numbers in the stub's list: x0, and pc after x0..x30 and sp.
const (
	aarch64X0 = 0
	aarch64PC = 32
)

// serveSockets runs an arm64 guest held by the stub to its end, standing in for the one
// call qemu-user cannot pass on: socket(AF_NETLINK, ..., NETLINK_SOCK_DIAG), which it
// refuses (EPROTONOSUPPORT). At the program's socket call (its address socketPC) the
// guest gets fd, a socket the test opened in the guest's network namespace and gave it;
// at its close (closePC) nothing is closed, for the next reading. Every other call runs
// as qemu-user runs it, and the guest reads and writes the socket itself. A signal the
// guest gets is passed on to it.
func (g *gdbStub) serveSockets(socketPC, closePC uint64, fd int) error {
	defer g.conn.Close()
	g.conn.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := g.call("?"); err != nil {
		return err
	}
	for _, pc := range []uint64{socketPC, closePC} {
		if reply, err := g.call(fmt.Sprintf("Z0,%x,4", pc)); err != nil || reply != "OK" {
			return errors.Join(err, fmt.Errorf("breakpoint at %#x: %q", pc, reply))
		}
	}
	resume := "c"
	for {
		reply, err := g.call(resume)
		if err != nil {
			return err
		}
		resume = "c"
		switch {
		case strings.HasPrefix(reply, "W"), strings.HasPrefix(reply, "X"):
			return nil // exited, or killed
		case len(reply) < 3 || (reply[0] != 'T' && reply[0] != 'S'):
			return fmt.Errorf("stop reply %q", reply)
		}
		if sig := reply[1:3]; sig != "05" { // a signal for the guest, not a breakpoint
			resume = "C" + sig
			continue
		}
		regs, err := g.call("g") // qemu 7.2's stub has no p or P packet
		if err != nil {
			return err
		}
		raw, err := hex.DecodeString(regs)
		if err != nil || len(raw) < (aarch64PC+1)*8 {
			return fmt.Errorf("registers %q: %v", regs, err)
		}
		pc := binary.LittleEndian.Uint64(raw[aarch64PC*8:])
		x0 := uint64(fd)
		switch pc {
		case socketPC:
		case closePC:
			x0 = 0
		default:
			return fmt.Errorf("stopped at %#x, no breakpoint of ours", pc)
		}
		binary.LittleEndian.PutUint64(raw[aarch64X0*8:], x0)
		binary.LittleEndian.PutUint64(raw[aarch64PC*8:], pc+4)
		if reply, err := g.call("G" + hex.EncodeToString(raw)); err != nil || reply != "OK" {
			return errors.Join(err, fmt.Errorf("writing registers: %q", reply))
		}
	}
}
