package httptrack

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// msgHash identifies a messageId of one write key: the first 16 bytes of
// SHA-256(writeKey, 0, messageId). The journal holds hashes, so it holds
// neither write keys nor the ids themselves.
type msgHash [16]byte

func hashID(writeKey, messageID string) msgHash {
	// The input is built on the stack for the usual sizes: no allocation.
	buf := make([]byte, 0, 256)
	buf = append(buf, writeKey...)
	buf = append(buf, 0)
	buf = append(buf, messageID...)
	sum := sha256.Sum256(buf)
	return msgHash(sum[:16])
}

// seen is what the dedup set knows of one messageId: the seq of the request
// that brought it and when it arrived.
type seen struct {
	seq uint64
	at  int64 // unix milliseconds
}

// dedupSet remembers the messageIds of the last window, at most max of
// them, oldest evicted first. It is not safe for concurrent use: the
// Source's mutex guards it.
//
// The map is large and accessed at random, so each access is likely a
// cache miss: a new id costs one lookup and one insert, and eviction reads
// the arrival times from order, touching the map only to delete.
type dedupSet struct {
	window int64 // milliseconds
	max    int
	ids    map[msgHash]seen
	// order holds every add, oldest first, from head on. An id added
	// again (after it expired, or by recovery) appears once more; only
	// the entry whose at matches the map's is its live one.
	order []orderRef
	head  int
}

// orderRef is an add in insertion order.
type orderRef struct {
	h  msgHash
	at int64
}

func newDedupSet(window time.Duration, max int) *dedupSet {
	return &dedupSet{window: window.Milliseconds(), max: max, ids: make(map[msgHash]seen)}
}

// lookup returns what is known of h, if it arrived within the window.
func (d *dedupSet) lookup(h msgHash, now int64) (seen, bool) {
	s, ok := d.ids[h]
	if !ok || now-s.at >= d.window {
		return seen{}, false
	}
	return s, true
}

// futureSkew is how far apart in time the ids are assumed to be added in
// the order they arrive (requests received at once may be enqueued in
// another order). An id dated more than futureSkew after the time of an id
// added later was dated in the future (the clock was ahead, and was set
// right since): eviction dates it futureSkew after that later time, so it
// expires a window after the clock's return, not a window after its date,
// yet never before a window after it truly arrived.
const futureSkew = time.Minute

// add remembers h, then evicts what is too old or too many.
func (d *dedupSet) add(h msgHash, s seen) {
	d.put(h, s)
	d.evict(s.at)
}

// put remembers h without evicting: call evict after a run of puts.
func (d *dedupSet) put(h msgHash, s seen) {
	d.ids[h] = s
	d.order = append(d.order, orderRef{h: h, at: s.at})
}

// evict forgets what is too many, oldest added first, and what arrived a
// window or more before now, the time of the latest add. An id at the head
// of the order dated after now+futureSkew is dated again (see futureSkew).
func (d *dedupSet) evict(now int64) {
	for d.head < len(d.order) {
		r := d.order[d.head]
		over := len(d.ids) > d.max
		if !over && r.at > now+futureSkew.Milliseconds() {
			if s, ok := d.ids[r.h]; ok && s.at == r.at {
				s.at = now + futureSkew.Milliseconds()
				d.ids[r.h] = s
				d.order = append(d.order, orderRef{h: r.h, at: s.at})
			}
			d.head++
			continue
		}
		if !over && now-r.at < d.window {
			break
		}
		if s, ok := d.ids[r.h]; ok && s.at == r.at {
			delete(d.ids, r.h)
		}
		d.head++
	}
	// Reclaim the evicted prefix once it is half the slice.
	if d.head > 1024 && d.head*2 > len(d.order) {
		d.order = append(d.order[:0], d.order[d.head:]...)
		d.head = 0
	}
}

func (d *dedupSet) len() int { return len(d.ids) }

// The dedup journal keeps the dedup set across restarts. It is a file of
// entries, one per accepted request, after an 8-byte magic:
//
//	magic    "TRHTDJ1\n"
//	entry    length uint32 BE | crc32c(payload) uint32 BE | payload
//	payload  seq uint64 BE | received unix ms int64 BE | 16-byte hash ...
//
// An entry is appended before its request's records are handed to the
// worker, so that any stored position covers only requests whose entries
// are in the file. On Open, the entries of requests after the stored
// position (their clients got no 200 and will retry; their records may or
// may not be in the log, and keeping the ids could lose the retried events)
// and those older than the window are dropped (an entry dated after now,
// from a clock that was ahead, is dated now), and the file is rewritten
// atomically (tmp, fsync, rename, fsync dir). A torn tail, from a crash in
// the middle of a write, ends the file there; so does a corrupt entry,
// which is logged as corruption, and the ids after it are forgotten (they
// may then be accepted twice: at least once, never lost). Writes reach the
// page cache at once and the disk within a second (the journal's own
// goroutine fsyncs it once a second when it was written): a process crash
// loses nothing, a machine crash may forget the last second of ids, which
// can then be accepted twice (at least once, never lost).
const journalMagic = "TRHTDJ1\n"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// appendJournalEntry appends the entry of one request to b.
func appendJournalEntry(b []byte, seq uint64, at int64, hashes []msgHash) []byte {
	n := 16 + 16*len(hashes)
	start := len(b)
	b = append(b, make([]byte, 8+n)...)
	p := b[start+8:]
	binary.BigEndian.PutUint64(p[0:], seq)
	binary.BigEndian.PutUint64(p[8:], uint64(at))
	for i, h := range hashes {
		copy(p[16+16*i:], h[:])
	}
	binary.BigEndian.PutUint32(b[start:], uint32(n))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(p, crcTable))
	return b
}

// journal is the open dedup journal. The goroutine that calls Read (and
// Open and Close, which never run with it) writes and compacts it; its own
// syncer goroutine fsyncs it every syncEvery, so that an fsync never holds
// up a Read. Lock order: syncMu, then mu.
type journal struct {
	path string
	size int64 // bytes in the file; the Read goroutine's

	// syncMu is held across an fsync, so that compact and close do not
	// close the file under it.
	syncMu sync.Mutex

	mu      sync.Mutex // guards the fields below
	f       *os.File
	dirty   bool  // written since the last fsync
	syncErr error // a background fsync's failure, returned by the next write

	stop chan struct{} // closed by close: the syncer returns
	done chan struct{} // closed when the syncer has returned
}

// syncEvery is how often the journal is fsynced while it is written.
const syncEvery = time.Second

func newJournal(path string, f *os.File, size int64) *journal {
	j := &journal{path: path, f: f, size: size, stop: make(chan struct{}), done: make(chan struct{})}
	go j.syncLoop()
	return j
}

// syncLoop fsyncs the journal every syncEvery when it was written, until
// close.
func (j *journal) syncLoop() {
	defer close(j.done)
	t := time.NewTicker(syncEvery)
	defer t.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-t.C:
			if err := j.sync(); err != nil {
				j.mu.Lock()
				j.syncErr = err
				j.mu.Unlock()
			}
		}
	}
}

// recovery says what loadJournal cut off the end of a journal file.
type recovery struct {
	offset  int64 // where the cut starts, from the start of the file
	dropped int64 // bytes dropped from there
	// corrupt is true when a bad entry is followed by more bytes than it
	// claims, so it is not the torn tail of a crash during a write.
	corrupt bool
}

func (r recovery) String() string {
	if r.dropped == 0 {
		return ""
	}
	if r.corrupt {
		return fmt.Sprintf("the journal is corrupt at offset %d: dropped the %d bytes from there; messageIds they held may be accepted again (at least once, never lost)", r.offset, r.dropped)
	}
	return fmt.Sprintf("dropped a torn tail of %d bytes at offset %d, left by a crash during a write", r.dropped, r.offset)
}

// loadJournal reads the journal at path into d, keeping the entries with a
// seq up to maxSeq that are within the window at now, then rewrites the
// file with just those and opens it for appending. An entry dated after
// now (written while the clock was ahead) is dated now: nothing arrived
// later than now, so its id is remembered for at least its window, and it
// expires a window from now instead of a window after its date. A missing file is an
// empty journal. A torn tail (a crash in the middle of a write) or a
// corrupt entry ends the file there; the recovery says what was dropped.
func loadJournal(path string, d *dedupSet, maxSeq uint64, now int64) (*journal, recovery, error) {
	var rec recovery
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data = nil
	case err != nil:
		return nil, rec, fmt.Errorf("read dedup journal %s: %w", path, err)
	case len(data) < len(journalMagic) || string(data[:len(journalMagic)]) != journalMagic:
		return nil, rec, fmt.Errorf("read dedup journal %s: not a dedup journal (bad magic); move it away to start with an empty dedup set", path)
	default:
		data = data[len(journalMagic):]
	}
	type entry struct {
		seq uint64
		at  int64
		ids []byte
	}
	var keep []entry
	off := 0
	for off < len(data) {
		rest := len(data) - off
		if rest < 8 {
			rec = recovery{offset: int64(off + len(journalMagic)), dropped: int64(rest)}
			break
		}
		n := int(binary.BigEndian.Uint32(data[off:]))
		sum := binary.BigEndian.Uint32(data[off+4:])
		if n < 16 || (n-16)%16 != 0 || n > rest-8 || crc32.Checksum(data[off+8:off+8+n], crcTable) != sum {
			// A write cut short leaves a last entry that ends the file or
			// reaches past its end, or zeros where the file system had
			// not written the data yet; a bad entry with more after it
			// is corruption.
			torn := (n >= 16 && (n-16)%16 == 0 && n >= rest-8) || allZero(data[off:])
			rec = recovery{offset: int64(off + len(journalMagic)), dropped: int64(rest), corrupt: !torn}
			break
		}
		p := data[off+8 : off+8+n]
		e := entry{seq: binary.BigEndian.Uint64(p), at: int64(binary.BigEndian.Uint64(p[8:])), ids: p[16:]}
		e.at = min(e.at, now)
		if e.seq <= maxSeq && now-e.at < d.window {
			keep = append(keep, e)
		}
		off += 8 + n
	}
	// Rebuild the set and the file from the kept entries, oldest first.
	buf := []byte(journalMagic)
	var hashes []msgHash
	for _, e := range keep {
		hashes = hashes[:0]
		for i := 0; i+16 <= len(e.ids); i += 16 {
			var h msgHash
			copy(h[:], e.ids[i:])
			if _, dup := d.ids[h]; dup {
				continue
			}
			// Evicted once all are in: the entries need not be in the
			// order of their dates (the clock may have been set back).
			d.put(h, seen{seq: e.seq, at: e.at})
			hashes = append(hashes, h)
		}
		if len(hashes) > 0 {
			buf = appendJournalEntry(buf, e.seq, e.at, hashes)
		}
	}
	d.evict(now)
	if err := writeFileAtomic(path, buf); err != nil {
		return nil, rec, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, rec, fmt.Errorf("open dedup journal %s: %w", path, err)
	}
	return newJournal(path, f, int64(len(buf))), rec, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// write appends entries to the journal file. It fails when the last
// background fsync did.
func (j *journal) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	j.mu.Lock()
	f, err := j.f, j.syncErr
	j.mu.Unlock()
	if err != nil {
		return err
	}
	n, err := f.Write(b)
	j.size += int64(n)
	j.mu.Lock()
	j.dirty = true
	j.mu.Unlock()
	if err != nil {
		return fmt.Errorf("append to dedup journal %s: %w", j.path, err)
	}
	return nil
}

// sync fsyncs the file if it was written since the last sync.
func (j *journal) sync() error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	f, dirty := j.f, j.dirty
	j.dirty = false
	j.mu.Unlock()
	if !dirty {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync dedup journal %s: %w", j.path, err)
	}
	return nil
}

// compaction returns the content of a journal holding the set d only,
// one entry per id, oldest first.
func compaction(d *dedupSet) []byte {
	buf := make([]byte, 0, len(journalMagic)+d.len()*40)
	buf = append(buf, journalMagic...)
	for _, r := range d.order[d.head:] {
		s, ok := d.ids[r.h]
		if !ok || s.at != r.at {
			continue // evicted, or added again later
		}
		buf = appendJournalEntry(buf, s.seq, s.at, []msgHash{r.h})
	}
	return buf
}

// compact replaces the journal with buf, a compaction. Entries written to
// the journal after the compaction was taken must be written again after
// compact returns (an id found twice on load counts once).
func (j *journal) compact(buf []byte) error {
	if err := writeFileAtomic(j.path, buf); err != nil {
		return err
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("reopen dedup journal %s: %w", j.path, err)
	}
	j.syncMu.Lock()
	j.mu.Lock()
	old := j.f
	j.f = f
	j.dirty = false
	j.mu.Unlock()
	old.Close()
	j.syncMu.Unlock()
	j.size = int64(len(buf))
	return nil
}

// close stops the syncer, fsyncs and closes the file.
func (j *journal) close() error {
	close(j.stop)
	<-j.done
	err := j.sync()
	if cerr := j.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close dedup journal %s: %w", j.path, cerr)
	}
	return err
}

// writeFileAtomic publishes data at path: write a temporary file, fsync,
// rename over path, fsync the directory.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write dedup journal %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write dedup journal %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync dedup journal %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close dedup journal %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("publish dedup journal %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
