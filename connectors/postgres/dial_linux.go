//go:build linux

package postgres

import (
	"strings"
	"syscall"
	"time"
)

// tcpUserTimeout is Linux's TCP_USER_TIMEOUT (the same on every
// architecture; the syscall package lacks it on some).
const tcpUserTimeout = 0x12

// userTimeoutControl returns a dialer Control function that sets
// TCP_USER_TIMEOUT: how long sent data may stay unacknowledged before the
// kernel fails the connection.
func userTimeoutControl(d time.Duration) func(network, address string, c syscall.RawConn) error {
	ms := int(d.Milliseconds())
	return func(network, _ string, c syscall.RawConn) error {
		if !strings.HasPrefix(network, "tcp") {
			return nil // a Unix socket
		}
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, ms)
		}); err != nil {
			return err
		}
		return serr
	}
}
