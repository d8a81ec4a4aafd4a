//go:build !linux

package nap

import "time"

// ReadSockets reads nothing where there is no NETLINK_SOCK_DIAG: nap runs on Linux only
// (the package builds elsewhere for napctl).
func ReadSockets(within time.Duration) (active uint64, ok bool) { return 0, false }
