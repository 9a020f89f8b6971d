//go:build !linux

package mysql

import (
	"syscall"
	"time"
)

// setUserTimeout does nothing outside Linux: keepalives alone bound the
// wait for an unanswering peer there.
func setUserTimeout(syscall.RawConn, time.Duration) error { return nil }
