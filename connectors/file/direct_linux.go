//go:build linux

package file

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// openDirectFD opens path for writing with O_DIRECT, or returns
// errDirectUnsupported when its file system has no direct I/O (EINVAL, as
// tmpfs before Linux 6.6).
func openDirectFD(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_DIRECT, 0)
	if errors.Is(err, syscall.EINVAL) {
		return nil, errDirectUnsupported
	}
	if err != nil {
		return nil, fmt.Errorf("open %s for direct writes: %w", path, err)
	}
	return f, nil
}
