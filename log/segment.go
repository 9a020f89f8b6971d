package log

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A segment is one file of a partition's log, named after the first offset it
// holds (its base), with its two sparse indexes beside it. Only the newest
// segment of a partition (the active one) is appended to; the others are
// immutable until retention deletes them or compaction replaces them.
type segment struct {
	base int64
	dir  string
	f    *os.File
	idxF *os.File
	tidx *os.File

	// The fields below change only while the partition's mutex is held, and
	// only on the active segment.
	size       int64 // bytes of whole batches in the file
	next       int64 // offset after the segment's last record
	maxTs      int64 // largest record timestamp, -1 if empty
	maxTsRel   uint32
	created    time.Time
	index      []offsetEntry
	timeIndex  []timeEntry
	sinceIndex int64

	refs atomic.Int32 // the partition's reference plus one per reader

	// verified is the file position below which every batch was checked
	// whole (CRC included) by this process: it wrote them after checking
	// them (or building them), or a read checked them. Reads do not check
	// those CRCs again. It only grows, from 0 at open, and only over
	// batches that follow each other from the start of the file.
	verified atomic.Int64

	// cache holds batches appended to this segment while it is active;
	// nil once sealed, so that reads of a sealed segment (compaction's
	// above all) see the file as it is.
	cache atomic.Pointer[tailCache]
}

func segmentName(base int64, ext string) string { return fmt.Sprintf("%020d%s", base, ext) }

func (s *segment) path(ext string) string { return filepath.Join(s.dir, segmentName(s.base, ext)) }

// createSegment starts an empty segment at base.
func createSegment(dir string, base int64, now time.Time) (*segment, error) {
	s := &segment{base: base, dir: dir, next: base, maxTs: -1, created: now}
	var err error
	if s.f, err = os.OpenFile(s.path(".log"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
		return nil, fmt.Errorf("create segment %s: %w", s.path(".log"), err)
	}
	if err := s.openIndexFiles(true); err != nil {
		s.f.Close()
		return nil, err
	}
	s.refs.Store(1)
	return s, nil
}

func (s *segment) openIndexFiles(truncate bool) error {
	flags := os.O_RDWR | os.O_CREATE
	if truncate {
		flags |= os.O_TRUNC
	}
	var err error
	if s.idxF, err = os.OpenFile(s.path(".index"), flags, 0o644); err != nil {
		return fmt.Errorf("open index %s: %w", s.path(".index"), err)
	}
	if s.tidx, err = os.OpenFile(s.path(".timeindex"), flags, 0o644); err != nil {
		s.idxF.Close()
		return fmt.Errorf("open time index %s: %w", s.path(".timeindex"), err)
	}
	return nil
}

// recovery says what opening a segment found and did.
type recovery struct {
	truncatedAt    int64 // -1 when nothing was truncated
	truncatedBytes int64
	reason         string
	rebuiltIndex   bool
	corrupt        *CorruptionError // damage left in place (not at the tail)
}

// openSegment opens an existing segment. A tail segment (the newest of its
// partition) is checked batch by batch: its torn end is truncated and its
// indexes rebuilt. Other segments trust their indexes when they check out and
// rebuild them otherwise. onBatch, if set, sees every sound batch of a scan.
func openSegment(dir string, base int64, tail bool, expectNext int64, onBatch func(batchMeta)) (*segment, recovery, error) {
	rec := recovery{truncatedAt: -1}
	s := &segment{base: base, dir: dir, maxTs: -1}
	var err error
	if s.f, err = os.OpenFile(s.path(".log"), os.O_RDWR, 0o644); err != nil {
		return nil, rec, fmt.Errorf("open segment %s: %w", s.path(".log"), err)
	}
	fi, err := s.f.Stat()
	if err != nil {
		s.f.Close()
		return nil, rec, fmt.Errorf("stat segment %s: %w", s.path(".log"), err)
	}
	s.size = fi.Size()
	s.refs.Store(1)

	if !tail {
		idx, ierr := readOffsetIndex(s.path(".index"), s.size)
		tidx, terr := readTimeIndex(s.path(".timeindex"))
		if ierr == nil && terr == nil && s.indexLooksRight(idx) && s.timeIndexLooksRight(idx, tidx) {
			s.index, s.timeIndex = idx, tidx
			if n := len(tidx); n > 0 {
				s.maxTs, s.maxTsRel = tidx[n-1].ts, tidx[n-1].rel
			}
			s.next = expectNext
			if err := s.openIndexFiles(false); err != nil {
				s.f.Close()
				return nil, rec, err
			}
			return s, rec, nil
		}
	}
	rec.rebuiltIndex = true
	bound := int64(math.MaxInt64)
	if !tail {
		bound = expectNext
	}
	if err := s.rebuild(tail, bound, &rec, onBatch); err != nil {
		s.f.Close()
		return nil, rec, err
	}
	if s.created.IsZero() {
		s.created = time.Now()
	}
	if !tail {
		s.addTimeEntry()
	}
	if err := s.openIndexFiles(true); err != nil {
		s.f.Close()
		return nil, rec, err
	}
	if err := s.writeIndexFiles(); err != nil {
		s.close()
		return nil, rec, err
	}
	return s, rec, nil
}

// indexLooksRight checks that the first index entry is the segment's first
// batch and that the last one points at a batch that starts where the entry
// says, with the offset it says. Damage to the entries in between shows when
// a reader uses them (see checkedIter), which then scans from the start.
func (s *segment) indexLooksRight(idx []offsetEntry) bool {
	if len(idx) == 0 {
		return s.size == 0
	}
	if idx[0].pos != 0 {
		return false
	}
	e := idx[len(idx)-1]
	var p [batchLengthPrefix]byte
	if _, err := s.f.ReadAt(p[:], int64(e.pos)); err != nil {
		return false
	}
	base, size := frameLength(p[:])
	return base == s.base+int64(e.rel) && size >= batchHeaderSize && int64(e.pos)+int64(size) <= s.size
}

// timeIndexLooksRight checks the last time index entry, which holds the
// segment's largest timestamp (a sealed segment always ends its time index
// with it): the batch ending at the entry's offset must have that max
// timestamp, and no batch after it a larger one. This reads the segment from
// the index entry before that batch to its end, which is short unless
// timestamps went backwards. Damage to earlier entries shows when
// offsetForTime uses them.
func (s *segment) timeIndexLooksRight(idx []offsetEntry, tidx []timeEntry) bool {
	if len(tidx) == 0 {
		return s.size == 0
	}
	e := tidx[len(tidx)-1]
	it := s.iter(lookupOffset(idx, e.rel), s.size)
	found := false
	for {
		raw, _, err := it.next()
		if err == io.EOF {
			return found
		}
		if err != nil {
			return false
		}
		_, meta, reason := checkBatch(raw)
		if reason != "" || meta.MaxTimestamp > e.ts {
			return false
		}
		if meta.LastOffset == s.base+int64(e.rel) && meta.MaxTimestamp == e.ts {
			found = true
		}
	}
}

// rebuild walks every batch of the file, checking CRCs and offsets, and
// recomputes the indexes, next offset and max timestamp. Batches must hold
// offsets below bound (the next segment's base). On a tail segment a torn
// or damaged end is truncated; damage followed by sound batches is
// corruption in the middle and is left for readers to report.
func (s *segment) rebuild(tail bool, bound int64, rec *recovery, onBatch func(batchMeta)) error {
	s.index, s.timeIndex, s.sinceIndex = nil, nil, 0
	s.next, s.maxTs = s.base, -1
	// damage is the first of the damaged batches just skipped, before a
	// sound batch has been accepted after them; skipped counts them. Their
	// offsets are unknown, so the batch after them may start past s.next,
	// by at most what that many batches can hold.
	var damage *CorruptionError
	skipped := int64(0)
	it := s.iter(0, s.size)
	for {
		raw, pos, err := it.next()
		if err == io.EOF {
			break
		}
		var reason string
		var meta batchMeta
		var frameOK bool
		if err != nil {
			reason = err.Error()
		} else {
			frameOK = true
			_, meta, reason = checkBatch(raw)
			// The CRC does not cover the base offset: check it against the
			// batches around it.
			switch {
			case reason != "":
			case meta.BaseOffset < s.next:
				reason = fmt.Sprintf("base offset %d is below the expected %d", meta.BaseOffset, s.next)
			case tail && damage == nil && meta.BaseOffset != s.next:
				// The newest segment only ever had appends, which leave no
				// gaps (compaction never touches it).
				reason = fmt.Sprintf("base offset %d, expected %d", meta.BaseOffset, s.next)
			case damage != nil && meta.BaseOffset-s.next > skipped*math.MaxInt32:
				reason = fmt.Sprintf("base offset %d jumps past the expected %d", meta.BaseOffset, s.next)
			case meta.LastOffset >= bound:
				reason = fmt.Sprintf("batch holds offsets %d..%d, at or past the next segment's base %d", meta.BaseOffset, meta.LastOffset, bound)
			case meta.LastOffset-s.base > math.MaxUint32:
				reason = fmt.Sprintf("batch holds offsets %d..%d, past what a segment at %d can index", meta.BaseOffset, meta.LastOffset, s.base)
			}
		}
		if reason != "" {
			if frameOK && s.soundBatchAt(pos+int64(len(raw))) {
				// A damaged batch with sound ones after it is not a torn
				// tail; keep everything and let reads report it. The next
				// sound batch gets an index entry, so reads past the damage
				// need not cross it.
				if damage == nil {
					damage = &CorruptionError{Path: s.path(".log"), Position: pos, Offset: s.next, Reason: reason}
				}
				skipped++
				it.pos = pos + int64(len(raw))
				s.sinceIndex = indexIntervalBytes
				continue
			}
			if damage == nil {
				damage = &CorruptionError{Path: s.path(".log"), Position: pos, Offset: s.next, Reason: reason}
			}
			break
		}
		if damage != nil {
			rec.corrupt, damage, skipped = damage, nil, 0
		}
		if s.size > 0 && pos == 0 && s.created.IsZero() {
			s.created = time.UnixMilli(meta.FirstTs)
		}
		s.track(meta, pos)
		if onBatch != nil {
			onBatch(meta)
		}
	}
	if damage == nil {
		return nil
	}
	if !tail {
		rec.corrupt = damage
		return nil
	}
	// Damage that no accepted batch follows is the torn tail: cut it off
	// from where it starts.
	pos := damage.Position
	rec.truncatedAt, rec.truncatedBytes, rec.reason = pos, s.size-pos, damage.Reason
	if err := s.f.Truncate(pos); err != nil {
		return fmt.Errorf("truncate segment %s at %d: %w", s.path(".log"), pos, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("sync segment %s: %w", s.path(".log"), err)
	}
	s.size = pos
	return nil
}

// soundBatchAt reports whether a whole, CRC-valid batch starts at pos.
func (s *segment) soundBatchAt(pos int64) bool {
	it := s.iter(pos, s.size)
	raw, _, err := it.next()
	if err != nil {
		return false
	}
	_, _, reason := checkBatch(raw)
	return reason == ""
}

// track updates the in-memory indexes for a batch written at pos and reports
// which index entries it added. Entries are only ever appended, so a reader
// may search a slice it took under the partition lock without further locking.
func (s *segment) track(meta batchMeta, pos int64) (newIdx, newTime bool) {
	if pos == 0 || s.sinceIndex >= indexIntervalBytes {
		e := offsetEntry{rel: uint32(meta.BaseOffset - s.base), pos: uint32(pos)}
		if n := len(s.index); n == 0 || e.rel > s.index[n-1].rel {
			s.index = append(s.index, e)
			newIdx = true
		}
		s.sinceIndex = 0
	}
	s.sinceIndex += int64(meta.Size)
	if meta.MaxTimestamp > s.maxTs {
		s.maxTs = meta.MaxTimestamp
		s.maxTsRel = uint32(meta.LastOffset - s.base)
	}
	if newIdx {
		newTime = s.addTimeEntry()
	}
	s.next = meta.LastOffset + 1
	return newIdx, newTime
}

// addTimeEntry records the current max timestamp in the time index when it
// rose since the last entry. The index lags between entries, which is safe:
// each entry only claims that nothing up to its offset is newer.
func (s *segment) addTimeEntry() bool {
	if s.maxTs < 0 {
		return false
	}
	n := len(s.timeIndex)
	if n > 0 && (s.maxTs <= s.timeIndex[n-1].ts || s.maxTsRel <= s.timeIndex[n-1].rel) {
		return false
	}
	s.timeIndex = append(s.timeIndex, timeEntry{ts: s.maxTs, rel: s.maxTsRel})
	return true
}

func (s *segment) writeIndexFiles() error {
	buf := make([]byte, 0, len(s.index)*indexEntrySize)
	for _, e := range s.index {
		buf = append(buf, encodeOffsetEntry(e)...)
	}
	if _, err := s.idxF.WriteAt(buf, 0); err != nil {
		return fmt.Errorf("write index %s: %w", s.path(".index"), err)
	}
	if err := s.idxF.Truncate(int64(len(buf))); err != nil {
		return fmt.Errorf("truncate index %s: %w", s.path(".index"), err)
	}
	tbuf := make([]byte, 0, len(s.timeIndex)*timeIndexEntrySize)
	for _, e := range s.timeIndex {
		tbuf = append(tbuf, encodeTimeEntry(e)...)
	}
	if _, err := s.tidx.WriteAt(tbuf, 0); err != nil {
		return fmt.Errorf("write time index %s: %w", s.path(".timeindex"), err)
	}
	if err := s.tidx.Truncate(int64(len(tbuf))); err != nil {
		return fmt.Errorf("truncate time index %s: %w", s.path(".timeindex"), err)
	}
	return nil
}

// writeAt writes one batch (its base offset already set) at pos, the end
// of the segment's written bytes. It does not sync and changes no field:
// the partition's single writer calls it without the partition lock, and
// commit makes the batch part of the segment afterwards. On a short write
// the file is cut back to pos, so it never holds half a batch.
func (s *segment) writeAt(b []byte, pos int64) error {
	if _, err := s.f.WriteAt(b, pos); err != nil {
		_ = s.f.Truncate(pos)
		return fmt.Errorf("write segment %s at %d: %w", s.path(".log"), pos, err)
	}
	return nil
}

// commit adds the batch writeAt wrote at pos (n bytes, described by meta)
// to the segment: size, verified watermark and in-memory indexes. It is
// called under the partition lock, in file order.
func (s *segment) commit(meta batchMeta, pos, n int64) {
	s.size = pos + n
	s.markVerified(pos, s.size) // every append checked its batch (or built it)
	s.track(meta, pos)
}

// writeIndexTail writes the index entries from the given lengths of the
// in-memory indexes on to their ends. Only the partition's writer calls
// it, so it may read the indexes without the partition lock.
func (s *segment) writeIndexTail(fromIdx, fromTime int) error {
	if n := len(s.index); n > fromIdx {
		buf := make([]byte, 0, (n-fromIdx)*indexEntrySize)
		for _, e := range s.index[fromIdx:] {
			buf = append(buf, encodeOffsetEntry(e)...)
		}
		if _, err := s.idxF.WriteAt(buf, int64(fromIdx)*indexEntrySize); err != nil {
			return fmt.Errorf("write index %s: %w", s.path(".index"), err)
		}
	}
	if n := len(s.timeIndex); n > fromTime {
		buf := make([]byte, 0, (n-fromTime)*timeIndexEntrySize)
		for _, e := range s.timeIndex[fromTime:] {
			buf = append(buf, encodeTimeEntry(e)...)
		}
		if _, err := s.tidx.WriteAt(buf, int64(fromTime)*timeIndexEntrySize); err != nil {
			return fmt.Errorf("write time index %s: %w", s.path(".timeindex"), err)
		}
	}
	return nil
}

// syncData makes the segment's data durable.
func (s *segment) syncData() error {
	if err := fdatasync(s.f); err != nil {
		return fmt.Errorf("sync segment %s: %w", s.path(".log"), err)
	}
	return nil
}

// seal makes a segment that will get no more appends fully durable: its
// data, then its indexes rewritten from memory.
func (s *segment) seal() error {
	if err := s.syncAll(); err != nil {
		return err
	}
	return s.sealIndexes()
}

// syncAll fsyncs the segment's data file, size included. After a failure
// the state of its pages is unknown: the partition must turn read-only.
func (s *segment) syncAll() error {
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("sync segment %s: %w", s.path(".log"), err)
	}
	return nil
}

// sealIndexes rewrites both indexes whole from memory, with a last time
// index entry for the segment's largest timestamp, and fsyncs them. A
// failure may be retried: the next try rewrites every byte (no page a
// failed writeback left marked clean is relied on), and the index files of
// a segment are read back only once it is sealed (recovery rebuilds those
// of the newest segment).
func (s *segment) sealIndexes() error {
	s.addTimeEntry()
	if err := s.writeIndexFiles(); err != nil {
		return err
	}
	for _, f := range []*os.File{s.idxF, s.tidx} {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", f.Name(), err)
		}
	}
	return nil
}

func (s *segment) acquire() { s.refs.Add(1) }

// release drops one reference; the last one closes the files.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.close()
	}
}

func (s *segment) close() {
	s.f.Close()
	if s.idxF != nil {
		s.idxF.Close()
	}
	if s.tidx != nil {
		s.tidx.Close()
	}
}

// remove deletes the segment's files; open readers keep their view until
// they release it.
func (s *segment) remove() error { return removeSegmentFiles(s.dir, s.base) }

// removeSegmentFiles deletes the files of the segment at base in dir, those
// that exist.
func removeSegmentFiles(dir string, base int64) error {
	var errs []error
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		if err := os.Remove(filepath.Join(dir, segmentName(base, ext))); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// batchIter walks the batches of a segment from a byte position. The slices
// it returns stay valid (until the readBuffers they came from are released,
// when pool is set): batches from the tail cache never change.
type batchIter struct {
	s      *segment
	pos    int64 // file position of the next batch
	end    int64 // stop before this position
	buf    []byte
	bufPos int64
	want   int          // bytes to read at once when the buffer runs out (readChunk when 0)
	pool   *readBuffers // when set, buffers come from the read pool and are kept here

	hdr [batchHeaderSize]byte // a header read on its own (not in buf)
}

const readChunk = 256 << 10

func (s *segment) iter(pos, end int64) *batchIter { return &batchIter{s: s, pos: pos, end: end} }

// errTornFrame marks a batch whose frame runs past the end of the data.
var errTornFrame = errors.New("torn batch: frame runs past the end of the segment")

// next returns the raw bytes of the batch at it.pos and advances past it.
// It returns io.EOF at the end, errTornFrame when a frame is cut short, and a
// descriptive error when the frame length itself is impossible.
func (it *batchIter) next() ([]byte, int64, error) {
	f, err := it.peek()
	if err != nil {
		return nil, f.pos, err
	}
	if f.raw != nil {
		return f.raw, f.pos, nil
	}
	raw, err := it.window(f.pos, f.size)
	if err != nil {
		return nil, f.pos, err
	}
	return raw, f.pos, nil
}

// frame is a batch that peek located: where it is, how big, and its header.
type frame struct {
	pos  int64
	size int
	hdr  []byte // the first batchHeaderSize bytes; valid until the next peek
	raw  []byte // the whole batch when it came from the tail cache, else nil
}

// peek locates the batch at it.pos and advances past it, reading only its
// header (window reads the rest when it is wanted). Errors are next's.
func (it *batchIter) peek() (frame, error) {
	pos := it.pos
	f := frame{pos: pos}
	if pos >= it.end {
		return f, io.EOF
	}
	if it.end-pos < batchLengthPrefix {
		return f, errTornFrame
	}
	if b := it.s.cache.Load().get(it.s, pos); b != nil && pos+int64(len(b)) <= it.end && len(b) >= batchHeaderSize {
		it.pos = pos + int64(len(b))
		f.size, f.hdr, f.raw = len(b), b[:batchHeaderSize], b
		return f, nil
	}
	buffered := func(n int) []byte {
		if pos >= it.bufPos && pos+int64(n) <= it.bufPos+int64(len(it.buf)) {
			return it.buf[pos-it.bufPos:][:n]
		}
		return nil
	}
	readHeader := func(need int) ([]byte, error) {
		n, err := it.s.f.ReadAt(it.hdr[:min(int64(batchHeaderSize), it.end-pos)], pos)
		if n < need {
			if err == nil || err == io.EOF {
				err = errTornFrame
			}
			return nil, fmt.Errorf("read segment %s at %d: %w", it.s.path(".log"), pos, err)
		}
		return it.hdr[:n], nil
	}
	p := buffered(batchLengthPrefix)
	if p == nil {
		var err error
		if p, err = readHeader(batchLengthPrefix); err != nil {
			return f, err
		}
	}
	_, size := frameLength(p)
	if size < batchHeaderSize {
		return f, fmt.Errorf("impossible batch length %d", size-batchLengthPrefix)
	}
	if pos+int64(size) > it.end {
		return f, errTornFrame
	}
	h := buffered(batchHeaderSize)
	if h == nil {
		if len(p) >= batchHeaderSize && &p[0] == &it.hdr[0] {
			h = p[:batchHeaderSize]
		} else {
			var err error
			if h, err = readHeader(batchHeaderSize); err != nil {
				return f, err
			}
		}
	}
	it.pos = pos + int64(size)
	f.size, f.hdr = size, h
	return f, nil
}

// window returns n bytes at pos, reading a new chunk when the buffer does not
// hold them.
func (it *batchIter) window(pos int64, n int) ([]byte, error) {
	if pos >= it.bufPos && pos+int64(n) <= it.bufPos+int64(len(it.buf)) {
		off := pos - it.bufPos
		return it.buf[off : off+int64(n)], nil
	}
	chunk := it.want
	if chunk <= 0 {
		chunk = readChunk
	}
	want := int64(max(n, chunk))
	if rest := it.end - pos; want > rest {
		want = rest
	}
	var buf []byte
	if it.pool != nil {
		buf = it.pool.get(int(want))
	} else {
		buf = make([]byte, want)
	}
	m, err := it.s.f.ReadAt(buf, pos)
	if m < n {
		if err == nil || err == io.EOF {
			err = errTornFrame
		}
		return nil, fmt.Errorf("read segment %s at %d: %w", it.s.path(".log"), pos, err)
	}
	it.buf, it.bufPos = buf[:m], pos
	return it.buf[:n], nil
}

// checkedBatch is a sound batch handed out by a checkedIter.
type checkedBatch struct {
	raw  []byte // nil while only the header is read
	pos  int64
	kb   kmsg.RecordBatch
	meta batchMeta
}

// checkedIter walks the sound batches of a segment in order and checks
// their offsets, which the CRC does not cover: every batch starts after the
// one before it ends (gaps are allowed: compaction leaves them), the first
// one where the offset index entry it started from says, and none holds
// offsets both below and at or past bound (the next segment's base, or the
// log end for the active segment). A batch is handed out only once the batch
// after it (or the end of the segment) confirms its offsets, so a damaged
// base offset shows as a *CorruptionError, never as records at the wrong
// offsets. A start from an index entry that does not check out falls back to
// a scan from the start of the segment: indexes are hints.
//
// The batch that confirms the one handed out is read only up to its header
// until it is wanted (its CRC covers none of what the confirmation uses):
// a reader that stops there, at the end of its byte budget (see
// pendingSize), never reads or checks the rest of it. Every batch is read
// whole and CRC-checked before it is handed out, and before its offsets
// count against the batch before it, so what is reported for damaged data
// is what a whole read of each batch in turn reports.
type checkedIter struct {
	s            *segment
	it           *batchIter
	size         int64
	expect       int64 // lowest base offset the next batch may have
	exact        bool  // the next batch must start at expect: an index entry says so
	restarted    bool
	bound        int64
	sealed       bool // no batch may start at or past bound (not so in the active segment, whose unflushed batches lie past the readable end)
	pending      *checkedBatch
	pendingExact bool  // pending is the batch an index entry pointed at
	floor        int64 // lowest base offset pending could have had
	err          error
}

// checkedIter starts at the indexed batch at or before offset (idx and size
// as a reader's view holds them). sealed says bound is the next segment's
// base rather than the readable end of the active segment.
func (s *segment) checkedIter(idx []offsetEntry, size, offset, bound int64, sealed bool) *checkedIter {
	c := &checkedIter{s: s, size: size, expect: s.base, bound: bound, sealed: sealed}
	if offset > s.base {
		if e, ok := lookupEntry(idx, uint32(min(offset-s.base, math.MaxUint32))); ok {
			c.it, c.expect, c.exact = s.iter(int64(e.pos), size), s.base+int64(e.rel), true
			return c
		}
	}
	c.it = s.iter(0, size)
	return c
}

// setWant tells the iterator how many bytes its caller means to read from
// here on, so that one read of the file fetches them.
func (c *checkedIter) setWant(n int) { c.it.want = n }

// usePool makes the iterator read into buffers from the read pool, kept in
// bufs (see readBuffers).
func (c *checkedIter) usePool(bufs *readBuffers) { c.it.pool = bufs }

// pendingSize is the size of the batch the next call of next returns, when
// it is known (0 when not).
func (c *checkedIter) pendingSize() int {
	if c.pending == nil {
		return 0
	}
	return c.pending.meta.Size
}

// markVerified records that the batch at [pos, end) was checked whole; the
// watermark moves only when the batch starts at or below it.
func (s *segment) markVerified(pos, end int64) {
	for {
		v := s.verified.Load()
		if pos > v || end <= v || s.verified.CompareAndSwap(v, end) {
			return
		}
	}
}

// load reads the rest of a batch peek located and checks its CRC (unless
// this process checked it before: see segment.verified); the returned
// reason is empty when it is sound.
func (c *checkedIter) load(b *checkedBatch) string {
	raw, err := c.it.window(b.pos, b.meta.Size)
	if err != nil {
		return err.Error()
	}
	if end := b.pos + int64(len(raw)); end > c.s.verified.Load() {
		if got := crc32.Checksum(raw[batchCRCStart:], castagnoli); int32(got) != b.kb.CRC {
			return fmt.Sprintf("crc32c mismatch: stored %08x, computed %08x", uint32(b.kb.CRC), got)
		}
		c.s.markVerified(b.pos, end)
	}
	b.raw, b.kb.Records = raw, raw[batchHeaderSize:]
	return ""
}

// offsetsWrong reports whether a batch's offsets fail a check of next.
func (c *checkedIter) offsetsWrong(m batchMeta) bool {
	return (c.exact && m.BaseOffset != c.expect) || m.BaseOffset < c.expect ||
		(m.BaseOffset < c.bound && m.LastOffset >= c.bound) || (c.sealed && m.BaseOffset >= c.bound)
}

// next returns the next sound batch, io.EOF at the end of the segment, or a
// *CorruptionError; after an error it returns the same error again.
func (c *checkedIter) next() (checkedBatch, error) {
	for {
		if p := c.pending; p != nil && p.raw == nil {
			if reason := c.load(p); reason != "" {
				c.pending = nil
				if c.pendingExact && !c.restarted {
					c.restart()
					continue
				}
				c.err = &CorruptionError{Path: c.s.path(".log"), Position: p.pos, Offset: c.floor, Reason: reason}
				continue
			}
		}
		if c.err != nil {
			if p := c.pending; p != nil {
				c.pending = nil
				return *p, nil
			}
			return checkedBatch{}, c.err
		}
		f, err := c.it.peek()
		if err == io.EOF {
			c.err = io.EOF
			continue
		}
		pos := f.pos
		var b checkedBatch
		var reason string
		if err != nil {
			reason = err.Error()
		} else {
			b = checkedBatch{raw: f.raw, pos: pos}
			b.kb, b.meta, reason = headerOf(f.hdr, f.size)
			if f.raw != nil {
				b.kb.Records = f.raw[batchHeaderSize:]
			}
			if reason == "" && f.raw == nil && c.offsetsWrong(b.meta) {
				// A batch is checked whole before its offsets are.
				reason = c.load(&b)
			}
		}
		m := b.meta
		switch {
		case reason != "":
		case c.exact && m.BaseOffset != c.expect:
			reason = fmt.Sprintf("base offset %d, but the offset index puts offset %d here", m.BaseOffset, c.expect)
		case m.BaseOffset < c.expect && c.pending != nil && m.BaseOffset > c.floor+(c.pending.meta.LastOffset-c.pending.meta.BaseOffset):
			// One of the two base offsets is damaged: either this one is
			// too low, or the one before was raised (it could have held
			// offsets from floor on). Neither batch is handed out.
			p := c.pending
			c.pending = nil
			c.err = &CorruptionError{Path: c.s.path(".log"), Position: p.pos, Offset: c.floor,
				Reason: fmt.Sprintf("batch holds offsets %d..%d, but the next batch (at byte %d) starts at offset %d", p.meta.BaseOffset, p.meta.LastOffset, pos, m.BaseOffset)}
			continue
		case m.BaseOffset < c.expect:
			reason = fmt.Sprintf("base offset %d is below %d", m.BaseOffset, c.expect)
		case m.BaseOffset < c.bound && m.LastOffset >= c.bound, c.sealed && m.BaseOffset >= c.bound:
			reason = fmt.Sprintf("batch holds offsets %d..%d, across the segment's end at offset %d", m.BaseOffset, m.LastOffset, c.bound)
		}
		if reason != "" {
			if c.exact && !c.restarted {
				// The index entry or the batch it points at is damaged:
				// scan from the start, which reaches that batch in order.
				c.restart()
				continue
			}
			c.err = &CorruptionError{Path: c.s.path(".log"), Position: pos, Offset: c.expect, Reason: reason}
			continue
		}
		p := c.pending
		c.pending, c.pendingExact, c.floor = &b, c.exact, c.expect
		c.expect, c.exact = m.LastOffset+1, false
		if p != nil {
			return *p, nil
		}
	}
}

// restart scans again from the start of the segment, once: the index entry
// the iterator started from, or the batch it points at, is damaged.
func (c *checkedIter) restart() {
	want, pool := c.it.want, c.it.pool
	c.it, c.expect, c.exact, c.restarted = c.s.iter(0, c.size), c.s.base, false, true
	c.it.want, c.it.pool = want, pool
	c.pending = nil
}

// decodeChecked verifies a raw batch and decodes its header, turning damage
// into a CorruptionError that names the file and position.
func (s *segment) decodeChecked(raw []byte, pos, expect int64) (kmsg.RecordBatch, batchMeta, error) {
	kb, meta, reason := checkBatch(raw)
	if reason != "" {
		return kb, meta, &CorruptionError{Path: s.path(".log"), Position: pos, Offset: expect, Reason: reason}
	}
	return kb, meta, nil
}

func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
