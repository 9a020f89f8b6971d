package mysql

import (
	"syscall"
	"time"
)

// tcpUserTimeout is Linux's TCP_USER_TIMEOUT socket option (syscall has
// no name for it).
const tcpUserTimeout = 0x12

// setUserTimeout makes the kernel fail the connection when data it sent,
// keepalive probes included, stays unacknowledged for timeout.
func setUserTimeout(c syscall.RawConn, timeout time.Duration) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, int(timeout.Milliseconds()))
	})
	if err != nil {
		return err
	}
	return serr
}
