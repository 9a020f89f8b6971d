//go:build !linux

package postgres

import (
	"syscall"
	"time"
)

// userTimeoutControl returns nil: TCP_USER_TIMEOUT is Linux's. Elsewhere
// the keepalives and the read watch bound a dead connection.
func userTimeoutControl(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
