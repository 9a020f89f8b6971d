//go:build !linux

package file

import "os"

// openDirectFD returns errDirectUnsupported: direct I/O is used on Linux
// only (see direct_linux.go).
func openDirectFD(string) (*os.File, error) { return nil, errDirectUnsupported }
