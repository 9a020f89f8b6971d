package file

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
	"unsafe"
)

// directBlock is the alignment of direct writes: their memory, file offset
// and length are multiples of it. 4096 is a multiple of the logical block
// size of the disks and file systems Linux does direct I/O on (512 or
// 4096); where it is not enough, the first direct write fails with EINVAL
// and the file falls back to the page cache.
const directBlock = 4096

// directBufSize is the size of a directFile's buffer, and so of its
// direct writes: large enough that the disk sees big sequential writes.
const directBufSize = 1 << 20

// useDirect says whether Open tries direct I/O; a var for the benchmark and
// the tests that compare it with writes through the page cache.
var useDirect = true

// directFile appends to a file with direct I/O (O_DIRECT): whole blocks go
// from its buffer to the disk without passing through the page cache, and
// only the partial block at the end of each synced batch is written through
// the page cache. The sink never reads its file back, so its pages only cost:
// writing 1 GiB of 1 KiB lines in 12 MiB batches measured 0.22-0.27 CPU-s
// of the whole machine (the kernel's writeback included) on the 2-vCPU VM of
// bench/engine, against 0.55-0.62 through the page cache with the pages
// dropped after each fsync (2026-11-30).
//
// Write only buffers, writing each block as it fills; Sync writes the rest
// (the partial block through the page cache, at its place in the file) and
// fsyncs. Its buffer starts at a block boundary of the file, so a partial
// block written at one Sync is written again, whole, by a later direct write
// with the bytes after it. Rewriting those bytes with the same values is
// safe however a crash cuts the write; and the kernel writes back and drops
// the page-cache page of a range before a direct write to it, so the two
// kinds of writes never see each other's stale data.
type directFile struct {
	f      *os.File // opened without O_DIRECT: the partial blocks, fsync, truncate, reads
	direct *os.File // the same file opened with O_DIRECT; nil after falling back
	path   string
	buf    []byte // directBufSize bytes aligned to directBlock
	n      int    // bytes of buf in use
	base   int64  // file offset of buf[0], a multiple of directBlock
}

// openDirect opens path, size bytes long, for appending with direct I/O. It
// returns errDirectUnsupported when the system or file system cannot.
func openDirect(path string, size int64) (*directFile, error) {
	direct, err := openDirectFD(path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		direct.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	d := &directFile{f: f, direct: direct, path: path, buf: alignedBuffer(directBufSize, directBlock)}
	if err := d.startAt(size); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// errDirectUnsupported is openDirectFD's error where the system or the file
// system has no direct I/O.
var errDirectUnsupported = errors.New("direct I/O is not supported here")

// alignedBuffer returns n bytes whose address is a multiple of align (a
// power of two).
func alignedBuffer(n, align int) []byte {
	b := make([]byte, n+align)
	skip := (align - int(uintptr(unsafe.Pointer(&b[0]))&uintptr(align-1))) & (align - 1)
	return b[skip : skip+n : skip+n]
}

// startAt sets the file's end to size: the buffer starts at the block that
// holds it, with the bytes of that block before size read from the file.
func (d *directFile) startAt(size int64) error {
	d.base = size &^ (directBlock - 1)
	d.n = int(size - d.base)
	if d.n == 0 {
		return nil
	}
	if _, err := d.f.ReadAt(d.buf[:d.n], d.base); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("read the last block of %s: %w", d.path, err)
	}
	return nil
}

// Write appends p to the buffer, writing it to the file each time it is
// full. Bytes written are in the file only after Sync.
func (d *directFile) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		c := copy(d.buf[d.n:], p)
		d.n += c
		if d.n == len(d.buf) {
			if err := d.writeBlocks(); err != nil {
				d.n -= c // not taken: the caller cuts the file back
				return written, err
			}
		}
		p = p[c:]
		written += c
	}
	return written, nil
}

// writeBlocks writes the whole blocks of the buffer to the file and moves
// the partial block after them to the buffer's start.
func (d *directFile) writeBlocks() error {
	whole := d.n &^ (directBlock - 1)
	if whole == 0 {
		return nil
	}
	if err := d.writeAt(d.buf[:whole], d.base); err != nil {
		return err
	}
	d.base += int64(whole)
	d.n = copy(d.buf, d.buf[whole:d.n])
	return nil
}

// writeAt writes whole blocks at a block-aligned offset: directly, or
// through the page cache once direct writes failed with EINVAL (an
// alignment the disk or file system refuses), for good.
func (d *directFile) writeAt(b []byte, off int64) error {
	if d.direct != nil {
		_, err := d.direct.WriteAt(b, off)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EINVAL) {
			return err
		}
		slog.Warn("file sink: the file system refused a direct write; writing through the page cache from now on",
			"path", d.path, "error", err)
		d.direct.Close()
		d.direct = nil
	}
	_, err := d.f.WriteAt(b, off)
	return err
}

// Sync writes what is buffered, the partial block at the end through the
// page cache, and fsyncs the file.
func (d *directFile) Sync() error {
	if err := d.writeBlocks(); err != nil {
		return err
	}
	if d.n > 0 {
		if _, err := d.f.WriteAt(d.buf[:d.n], d.base); err != nil {
			return err
		}
	}
	return d.f.Sync()
}

// Truncate cuts the file to size, dropping what is buffered, and goes on
// from there.
func (d *directFile) Truncate(size int64) error {
	if err := d.f.Truncate(size); err != nil {
		return err
	}
	return d.startAt(size)
}

// Close closes the file; what was written since the last Sync may be lost.
func (d *directFile) Close() error {
	var err error
	if d.direct != nil {
		err = d.direct.Close()
	}
	return errors.Join(err, d.f.Close())
}
