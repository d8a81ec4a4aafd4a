package nap

import (
	"syscall"
	"time"
)

// ReadSockets is one reading of the request signal: a NETLINK_SOCK_DIAG socket, the
// two DiagRequests each written and its dump read (reads of DiagRead bytes) to its
// end, the socket closed. active counts the inbound connections that received data
// less than within (in whole milliseconds) before. ok is false when any step fails: the
// socket refused (seccomp, gVisor, qemu-user), a write or read that fails, a dump Read
// cannot understand.
func ReadSockets(within time.Duration) (active uint64, ok bool) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, NetlinkSockDiag)
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	s := Sockets{Within: uint64(within.Milliseconds())}
	buf := make([]byte, DiagRead)
	for _, req := range DiagRequests {
		if n, err := syscall.Write(fd, req[:]); err != nil || n != len(req) {
			return 0, false
		}
		for done := false; !done; {
			n, err := syscall.Read(fd, buf)
			if err != nil || n <= 0 {
				return 0, false
			}
			if done, ok = s.Read(buf[:n]); !ok {
				return 0, false
			}
		}
	}
	return s.Active, true
}
