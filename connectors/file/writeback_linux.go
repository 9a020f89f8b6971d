//go:build linux && (amd64 || arm64)

package file

import (
	"errors"
	"syscall"
)

// startWriteback asks the kernel to start writing the n bytes of f at off
// to the disk (sync_file_range with SYNC_FILE_RANGE_WRITE) and returns
// without waiting for them. Write calls it for each chunk as it goes, so
// that the disk works while the next chunk is formatted and the fsync at
// the end of the batch waits only for the rest. It promises no
// durability: only the fsync does. Files that cannot (a wrapped file, a
// file system without support) are skipped.
func startWriteback(f appendFile, off, n int64) error {
	const syncFileRangeWrite = 2 // SYNC_FILE_RANGE_WRITE
	return rangeCall(f, syscall.SYS_SYNC_FILE_RANGE, off, n, syncFileRangeWrite)
}

// dropCached tells the kernel that the n bytes of f at off, already
// fsync'ed, will not be read again soon (posix_fadvise POSIX_FADV_DONTNEED):
// their clean page-cache pages are freed. Write calls it for the pages it
// wrote once they are fsync'ed (dropEvery bytes or more at a time): nobody
// in the worker reads the file back, so its pages would only crowd the
// page cache, and the pages freed are the ones the kernel hands out next,
// warm, instead of fresh ones. On a VM with free page reporting (virtio-balloon), fresh pages cost
// the host a fault each: writing 1 GiB to a new file measured 1.5-2.1
// CPU-s there, 0.3-0.45 with the pages of each fsync'ed 16 MiB dropped. It
// changes no data and promises nothing; files that cannot (a wrapped file)
// are skipped.
func dropCached(f appendFile, off, n int64) error {
	const fadvDontNeed = 4 // POSIX_FADV_DONTNEED
	return rangeCall(f, syscall.SYS_FADVISE64, off, n, fadvDontNeed)
}

// rangeCall makes the system call trap(fd, off, n, arg) on f's descriptor,
// both calls above having that shape. Files without a descriptor (a
// wrapped file) and empty ranges are skipped; so are the errors that mean
// the file system or file cannot (ENOSYS, EINVAL, ESPIPE): both calls are
// hints that promise nothing.
func rangeCall(f appendFile, trap uintptr, off, n int64, arg uintptr) error {
	sc, ok := f.(syscall.Conn)
	if !ok || n <= 0 {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(trap, fd, uintptr(off), uintptr(n), arg, 0, 0)
	}); err != nil {
		return err
	}
	if errno != 0 && !errors.Is(errno, syscall.ENOSYS) && !errors.Is(errno, syscall.EINVAL) && !errors.Is(errno, syscall.ESPIPE) {
		return errno
	}
	return nil
}
