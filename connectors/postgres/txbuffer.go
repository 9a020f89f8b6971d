package postgres

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// defaultStreamMemory is how many bytes of streamed, not yet committed
// transactions the connector holds in memory, over all of them; beyond
// it, each transaction that grows goes on in a temporary file.
const defaultStreamMemory = 64 << 20

// txBuffer holds the changes of one large transaction that the server
// streams while it is in progress (pgoutput protocol 2, streaming on),
// until its stream commit replays them as one transaction or its stream
// abort drops them. Entries are the pgoutput messages with the
// transaction id taken out (so they read as protocol 1 messages), each
// with its LSN and the id of the (sub)transaction that made it. The first
// ones live in memory; once the connector's budget is spent, the rest go
// to a temporary file, in order:
//
//	[8 lsn][4 xid][4 length][length bytes of message] ...
//
// A subtransaction's abort (ROLLBACK TO SAVEPOINT) marks its id, and its
// entries are skipped on replay.
type txBuffer struct {
	mem      []txEntry
	memBytes int
	file     *os.File // nil until the buffer spills
	w        *bufio.Writer
	aborted  map[uint32]bool
}

type txEntry struct {
	lsn  uint64
	xid  uint32
	data []byte
}

// add appends a message; spill says it goes to the file.
func (b *txBuffer) add(lsn uint64, xid uint32, data []byte, spill bool) error {
	if b.file == nil && !spill {
		b.mem = append(b.mem, txEntry{lsn: lsn, xid: xid, data: append([]byte(nil), data...)})
		b.memBytes += len(data)
		return nil
	}
	if b.file == nil {
		f, err := os.CreateTemp("", "tributary-pg-stream-*")
		if err != nil {
			return fmt.Errorf("spill a streamed transaction to a temporary file: %w", err)
		}
		os.Remove(f.Name()) // unnamed: gone when closed, even after a crash
		b.file, b.w = f, bufio.NewWriterSize(f, 1<<16)
	}
	var hdr [16]byte
	binary.BigEndian.PutUint64(hdr[0:], lsn)
	binary.BigEndian.PutUint32(hdr[8:], xid)
	binary.BigEndian.PutUint32(hdr[12:], uint32(len(data)))
	if _, err := b.w.Write(hdr[:]); err != nil {
		return fmt.Errorf("spill a streamed transaction: %w", err)
	}
	if _, err := b.w.Write(data); err != nil {
		return fmt.Errorf("spill a streamed transaction: %w", err)
	}
	return nil
}

// abortSub drops a subtransaction's entries.
func (b *txBuffer) abortSub(xid uint32) {
	if b.aborted == nil {
		b.aborted = map[uint32]bool{}
	}
	b.aborted[xid] = true
}

// replay calls fn with every entry of a subtransaction that was not
// aborted, in order.
func (b *txBuffer) replay(fn func(lsn uint64, data []byte) error) error {
	for _, e := range b.mem {
		if b.aborted[e.xid] {
			continue
		}
		if err := fn(e.lsn, e.data); err != nil {
			return err
		}
	}
	if b.file == nil {
		return nil
	}
	if err := b.w.Flush(); err != nil {
		return fmt.Errorf("spill a streamed transaction: %w", err)
	}
	if _, err := b.file.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read back a streamed transaction: %w", err)
	}
	r := bufio.NewReaderSize(b.file, 1<<16)
	var hdr [16]byte
	var data []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read back a streamed transaction: %w", err)
		}
		n := binary.BigEndian.Uint32(hdr[12:])
		if cap(data) < int(n) {
			data = make([]byte, n)
		}
		data = data[:n]
		if _, err := io.ReadFull(r, data); err != nil {
			return fmt.Errorf("read back a streamed transaction: %w", err)
		}
		if b.aborted[binary.BigEndian.Uint32(hdr[8:])] {
			continue
		}
		if err := fn(binary.BigEndian.Uint64(hdr[0:]), data); err != nil {
			return err
		}
	}
}

// close releases the buffer's file.
func (b *txBuffer) close() {
	if b.file != nil {
		b.file.Close()
		b.file = nil
	}
	b.mem = nil
}
