//go:build linux && (amd64 || arm64)

package log

import (
	"os"
	"syscall"
)

// startWriteback asks the kernel to start writing n bytes of f at off to
// the disk (sync_file_range with SYNC_FILE_RANGE_WRITE) without waiting for
// them, so that the disk works while the next batch is planned and the
// fdatasync that follows waits only for the rest. It promises nothing about
// durability (only the fdatasync does) and so ignores errors: a file
// system without support just leaves the work to the fdatasync.
func startWriteback(f *os.File, off, n int64) {
	if n <= 0 {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	const syncFileRangeWrite = 2 // SYNC_FILE_RANGE_WRITE
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, fd, uintptr(off), uintptr(n), syncFileRangeWrite, 0, 0)
	})
}
