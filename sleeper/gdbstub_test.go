//go:build linux && amd64

package sleeper

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os/exec"
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

// startUnderGDBStub starts cmd (qemu-user and its guest) with qemu's stub on a loopback
// port and connects to it.
func startUnderGDBStub(cmd *exec.Cmd) (*gdbStub, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd.Args = append([]string{cmd.Args[0], "-g", strconv.Itoa(port)}, cmd.Args[1:]...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
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
