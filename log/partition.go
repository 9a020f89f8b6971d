package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// partition is one ordered, append-only sequence of record batches: a
// directory of segments. One writer at a time appends (under wmu; mu only
// while it assigns offsets and publishes what it wrote); a single
// syncer goroutine makes appends durable, one fsync for every append that
// waits (group commit); readers see offsets below visible.
type partition struct {
	topic string
	id    int32
	dir   string
	l     *Log
	cfg   func() TopicConfig

	syncReq chan struct{} // buffered 1: "there is something to sync"
	stop    chan struct{}
	done    chan struct{}

	// cleanMu serializes compaction passes of this partition (compact.go).
	// It guards no field; it is taken before mu, never while holding it.
	cleanMu sync.Mutex

	// removeMu is held while a retention or compaction pass deletes the
	// partition's files by path after letting go of mu, and by DeleteTopic
	// while it moves the directory away (setting moved): a topic made again
	// under the same name owns those paths from then on, and a pass that
	// chose its victims before the deletion must not delete its files.
	removeMu sync.Mutex
	moved    bool // guarded by removeMu: the directory was moved away

	// startMu serializes DeleteRecords calls of this partition, each of
	// which writes the log start offset checkpoint without holding mu
	// (logstart.go). It guards no field; it is taken before removeMu and mu.
	startMu sync.Mutex

	// wmu makes one write call at a time the partition's writer: it plans
	// under mu, writes the file without mu, then publishes under mu. Taken
	// before mu. Close takes it too, so no write is in flight when the
	// segments close.
	wmu sync.Mutex

	// mu guards every field below. Lock order: Log.mu before partition.mu.
	mu        sync.Mutex
	segments  []*segment // by base offset; the last one is active
	logStart  int64
	next      int64         // next offset to assign
	durable   int64         // offsets below are fsync'ed
	visible   int64         // offsets below are readable
	durableCh chan struct{} // closed when durable moves or the syncer fails
	dataCh    chan struct{} // closed when visible moves or the partition closes
	producers *producerState
	failed    error // sticky write or fsync failure: the partition refuses appends
	closed    bool

	// After a roll fails with a *RollError, none is tried again before
	// rollRetryAt: appends and retention that need one fail fast (see
	// tryRollLocked). The wait doubles with every failure in a row, from
	// rollBackoffMin to rollBackoffMax, and a successful roll resets it.
	rollErr     *RollError // the last roll failed with this (nil once one succeeds)
	rollBackoff time.Duration
	rollRetryAt time.Time
}

// The wait after a failed roll before the next try: a roll that fails for
// want of descriptors or disk space first fsyncs and rewrites the old
// segment's indexes, which an append retrying at once would repeat on an
// already sick disk. Once the cause is gone, a partition rolls again within
// rollBackoffMax.
const (
	rollBackoffMin = 100 * time.Millisecond
	rollBackoffMax = 10 * time.Second
)

func partitionDir(root, topic string, id int32) string {
	return filepath.Join(root, fmt.Sprintf("%s-%d", topic, id))
}

// openPartition opens (or creates) a partition directory and recovers it.
func openPartition(l *Log, topic string, id int32, cfg func() TopicConfig) (*partition, error) {
	p := &partition{
		topic: topic, id: id, dir: partitionDir(l.opts.Dir, topic, id), l: l, cfg: cfg,
		syncReq: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		durableCh: make(chan struct{}), dataCh: make(chan struct{}),
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create partition dir %s: %w", p.dir, err)
	}
	if err := p.recover(); err != nil {
		return nil, err
	}
	go p.syncLoop()
	return p, nil
}

func (p *partition) String() string { return fmt.Sprintf("%s-%d", p.topic, p.id) }

func (p *partition) logger() *slog.Logger {
	return p.l.logger.With("topic", p.topic, "partition", p.id)
}

// recover lists the segments, finishes or discards interrupted compactions,
// checks the tail and rebuilds producer state.
func (p *partition) recover() error {
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return fmt.Errorf("read partition dir %s: %w", p.dir, err)
	}
	var bases []int64
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".cleaned"), strings.HasSuffix(name, ".tmp"):
			// An interrupted compaction or atomic write: the original is intact.
			if err := os.Remove(filepath.Join(p.dir, name)); err != nil {
				return fmt.Errorf("remove leftover %s: %w", name, err)
			}
			p.logger().Info("removed leftover of an interrupted write", "file", name)
		case strings.HasSuffix(name, ".log"):
			base, err := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64)
			if err != nil {
				return fmt.Errorf("segment file %s: name is not an offset", filepath.Join(p.dir, name))
			}
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	now := p.l.now()
	state, from := readProducerSnapshot(p.dir, now)
	if bases, err = p.removeRollLeftovers(entries, bases, from); err != nil {
		return err
	}
	// Batches of the tail count as appended now: their append time is not
	// stored (their timestamps are the producer's), and a producer forgotten
	// too early loses its duplicate check, one kept too long only memory.
	update := func(m batchMeta) { state.update(m, now) }
	apply := func(m batchMeta) {
		if m.BaseOffset >= from {
			update(m)
		}
	}
	for i, base := range bases {
		tail := i == len(bases)-1
		expectNext := base
		if !tail {
			expectNext = bases[i+1]
		}
		s, rec, err := openSegment(p.dir, base, tail, expectNext, apply)
		if err != nil {
			p.closeSegments()
			return err
		}
		if !tail && !rec.rebuiltIndex && from < expectNext {
			// The snapshot predates this sealed segment's end: replay it
			// (apply skips its batches below the snapshot). Every such
			// segment, not only the one holding the snapshot's offset: a
			// missing snapshot counts as one at 0, and one whose writes
			// failed (disk full) lags by as many segments as rolls since.
			if err := s.scanMeta(apply); err != nil {
				s.close()
				p.closeSegments()
				return err
			}
		}
		p.report(s, rec)
		if tail {
			s.cache.Store(p.l.cache)
		}
		p.segments = append(p.segments, s)
	}
	if len(p.segments) == 0 {
		s, err := createSegment(p.dir, 0, now)
		if err != nil {
			return err
		}
		s.cache.Store(p.l.cache)
		p.segments = append(p.segments, s)
		if err := syncDir(p.dir); err != nil {
			return err
		}
	}
	active := p.segments[len(p.segments)-1]
	p.next = active.next
	p.durable, p.visible = p.next, p.next
	if err := p.recoverLogStart(); err != nil {
		p.closeSegments()
		return err
	}
	if from > p.next {
		// The snapshot is ahead of the log (its tail was lost): rebuild from
		// every batch instead of trusting it.
		state = newProducerState()
		for _, s := range p.segments {
			if err := s.scanMeta(update); err != nil {
				p.closeSegments()
				return err
			}
		}
	}
	p.l.metrics.ExpiredProducers.Add(int64(state.expire(now, p.l.opts.ProducerIDExpiration)))
	p.producers = state
	return nil
}

// removeRollLeftovers removes, durably, what a roll that never completed
// (the process killed, or the power lost, before the roll finished or
// removed what it had created) left of the new segment, and returns the
// bases of the segments that remain. bases are the sorted bases of the .log
// files among entries, snapshot the offset of the producer snapshot.
//
// A roll seals the old segment, then creates the new segment's .log, .index
// and .timeindex, empty, fsyncs the directory and writes the producer
// snapshot at the new base; so a crash before that fsync can leave any of
// the three files, and any can be missing. These are leftovers:
//
//   - index files whose .log is missing: indexes are hints, the .log is the
//     truth (a crash while retention or a failed roll removes a segment,
//     .log first, leaves them too);
//   - an empty newest .log, with its index files, unless the producer
//     snapshot is at its base (the roll completed and no append followed:
//     it is the active segment), when the segment before it holds sound
//     batches without gaps from its base up to or past the empty one's
//     base. Past it: the old segment took appends after a failed roll whose
//     cleanup the crash undid, and keeping the empty segment would hide
//     them and hand their offsets out again.
//
// A leftover holds no record; the segment before it, sealed by the roll,
// becomes the active one again. An empty newest .log that stays (the roll
// completed, or its base lies past a gap, where compaction dropped the
// last records before it, and holds the log's end offset) gets its
// directory entry fsync'ed, as a completed roll leaves it. A newest .log
// that holds any byte is data: the tail check of openSegment deals with it.
func (p *partition) removeRollLeftovers(entries []os.DirEntry, bases []int64, snapshot int64) ([]int64, error) {
	var gone []string
	remove := func(name, what string) error {
		err := os.Remove(filepath.Join(p.dir, name))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("remove %s, %s: %w", filepath.Join(p.dir, name), what, err)
		}
		gone = append(gone, name)
		return nil
	}
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if ext != ".index" && ext != ".timeindex" {
			continue
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(name, ext), 10, 64)
		if err != nil || slices.Contains(bases, base) {
			continue
		}
		if err := remove(name, "an index without its segment"); err != nil {
			return bases, err
		}
	}
	if n := len(bases); n >= 2 {
		base := bases[n-1]
		fi, err := os.Stat(filepath.Join(p.dir, segmentName(base, ".log")))
		if err != nil {
			return bases, fmt.Errorf("stat segment %s: %w", filepath.Join(p.dir, segmentName(base, ".log")), err)
		}
		if fi.Size() == 0 {
			leftover := false
			if snapshot != base {
				end, err := gaplessEnd(p.dir, bases[n-2])
				if err != nil {
					return bases, err
				}
				leftover = end >= base
			}
			if leftover {
				for _, ext := range []string{".log", ".index", ".timeindex"} {
					if err := remove(segmentName(base, ext), "the empty segment of a roll that did not complete"); err != nil {
						return bases, err
					}
				}
				bases = bases[:n-1]
			} else if err := syncDir(p.dir); err != nil {
				return bases, err
			}
		}
	}
	if len(gone) == 0 {
		return bases, nil
	}
	if err := syncDir(p.dir); err != nil {
		return bases, err
	}
	p.logger().Warn("removed the files of a segment roll that did not complete (a crash during a roll, or during the removal of a segment); no record was in them",
		"files", gone)
	return bases, nil
}

// gaplessEnd reads the segment at base in dir from its start and returns
// the offset after the last of its sound batches that follow each other
// without a gap in their offsets, as only appends (never compaction) leave
// them.
func gaplessEnd(dir string, base int64) (int64, error) {
	s := &segment{base: base, dir: dir}
	f, err := os.Open(s.path(".log"))
	if err != nil {
		return 0, fmt.Errorf("open segment %s: %w", s.path(".log"), err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat segment %s: %w", s.path(".log"), err)
	}
	s.f = f
	next := base
	it := s.iter(0, fi.Size())
	for {
		raw, _, err := it.next()
		if err != nil {
			return next, nil // the end, or damage: the batches before it count
		}
		_, meta, reason := checkBatch(raw)
		if reason != "" || meta.BaseOffset != next {
			return next, nil
		}
		next = meta.LastOffset + 1
	}
}

// report logs and counts what recovery did to a segment.
func (p *partition) report(s *segment, rec recovery) {
	if rec.truncatedAt >= 0 {
		p.logger().Warn("truncated torn tail of segment",
			"file", s.path(".log"), "position", rec.truncatedAt, "bytes", rec.truncatedBytes, "reason", rec.reason)
		p.l.metrics.TailTruncations.Add(1)
		p.l.metrics.TruncatedBytes.Add(rec.truncatedBytes)
	}
	if rec.corrupt != nil {
		p.logger().Error("segment holds a corrupt batch; reads that reach it will fail", "error", rec.corrupt)
		p.l.metrics.CorruptBatches.Add(1)
	}
}

func (p *partition) closeSegments() {
	for _, s := range p.segments {
		s.release()
	}
	p.segments = nil
}

// scanMeta calls fn for every sound batch of a sealed segment.
func (s *segment) scanMeta(fn func(batchMeta)) error {
	it := s.iter(0, s.size)
	for {
		raw, _, err := it.next()
		if err != nil {
			return nil // the end, or damage that reads will report
		}
		_, meta, reason := checkBatch(raw)
		if reason != "" {
			return nil
		}
		fn(meta)
	}
}

// appendBatches appends encoded batches in order, as one unit, and returns
// the base offset of each. With fsync on (the default) it returns only once
// every batch is durable.
func (p *partition) appendBatches(ctx context.Context, batches [][]byte) ([]int64, error) {
	bases, end, err := p.write(batches, writeOwned)
	if end >= 0 {
		if _, werr := p.waitDurable(ctx, end); werr != nil {
			return nil, werr
		}
	}
	if err != nil {
		return nil, err
	}
	return bases, nil
}

// write appends encoded batches in order without waiting for durability:
// offsets are assigned and the bytes are in the OS when it returns. end is
// the offset every written batch lies below (wait for it with waitDurable),
// or -1 when nothing needs waiting for. An error after some batches were
// written comes with their end, so the caller can still wait for them.
//
// how says who built the batches and whether their CRCs are checked yet.
func (p *partition) write(batches [][]byte, how writeKind) (bases []int64, end int64, err error) {
	if len(batches) == 0 {
		return nil, -1, nil
	}
	owned := how == writeOwned
	cfg := p.cfg()
	metas := make([]batchMeta, len(batches))
	check := checkBatch
	if how != writeUnchecked {
		check = batchHeader
	}
	for i, b := range batches {
		_, meta, reason := check(b)
		if reason != "" {
			return nil, -1, fmt.Errorf("%w: %s", ErrUnsupportedBatch, reason)
		}
		if cfg.MaxMessageBytes > 0 && int64(len(b)) > cfg.MaxMessageBytes {
			return nil, -1, fmt.Errorf("%w: %d bytes, max.message.bytes of %s is %d", ErrRecordTooLarge, len(b), p.topic, cfg.MaxMessageBytes)
		}
		metas[i] = meta
	}
	bases = make([]int64, len(batches))
	now := p.l.now()

	// Two locks: wmu makes this the partition's only writer for the whole
	// call; mu is held only to plan a run of batches (offsets, positions,
	// producer checks, rolls) and to publish it once written, so readers
	// and the syncer never wait for the write itself. Published state
	// (segment size and indexes, next, producer state) moves only in file
	// order and only over bytes already written.
	p.wmu.Lock()
	defer p.wmu.Unlock()
	end = -1
	var records, bytes int64
	// aged: a roll due by segment.ms only failed (or waits out its
	// backoff) in this call: the rest of the call goes into the active
	// segment as far as it fits, without trying again.
	aged := false
	run := make([]plannedBatch, 0, len(batches))
	for i := 0; i < len(batches); {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, -1, ErrClosed
		}
		if p.failed != nil {
			p.mu.Unlock()
			return nil, -1, fmt.Errorf("partition %s is read-only after an I/O failure: %w", p, p.failed)
		}
		active := p.segments[len(p.segments)-1]
		next, pos := p.next, active.size
		run = run[:0]
		var refused error
	plan:
		for ; i < len(batches); i++ {
			b, meta := batches[i], metas[i]
			if meta.Producer.ID >= 0 {
				for _, r := range run {
					if r.meta.Producer.ID == meta.Producer.ID {
						// Its check needs the state after r: publish the run first.
						break plan
					}
				}
			}
			if base, dup, err := p.producers.check(meta.Producer, meta.NumRecords); err != nil {
				refused = err
				break
			} else if dup {
				// A retry of a batch already appended: its offsets may not be
				// durable yet, so the caller still waits for the end.
				bases[i] = base
				p.l.metrics.DuplicateBatches.Add(1)
				continue
			}
			if why := rollDue(cfg, active, pos, next, int64(len(b)), meta, now, aged); why != "" {
				if len(run) > 0 {
					break // the run goes to this segment; the next one rolls
				}
				var re *RollError
				if err := p.tryRollLocked(now, why); err == nil {
					active = p.segments[len(p.segments)-1]
					pos = active.size
				} else if why == rollAged && errors.As(err, &re) {
					// The batch fits: it goes into the active segment,
					// which a failed roll leaves as it was. The roll is
					// tried again after the backoff.
					aged = true
				} else {
					p.mu.Unlock()
					// Runs this call wrote before stay written: wait for them.
					return nil, end, err
				}
			}
			setBaseOffset(b, next)
			if cfg.LogAppendTime {
				b = withLogAppendTime(b, now)
				meta.MaxTimestamp = now.UnixMilli() // indexes and retention go by the append time
			}
			meta.BaseOffset, meta.LastOffset = next, next+int64(meta.LastOffset-meta.BaseOffset)
			run = append(run, plannedBatch{b: b, meta: meta, pos: pos})
			bases[i] = next
			next = meta.LastOffset + 1
			pos += int64(len(b))
		}
		p.mu.Unlock()

		written, werr := p.writeRun(active, run)

		p.mu.Lock()
		fromIdx, fromTime := len(active.index), len(active.timeIndex)
		for _, r := range run[:written] {
			active.commit(r.meta, r.pos, int64(len(r.b)))
			if owned {
				active.cache.Load().put(active, r.pos, r.b)
			}
			p.producers.update(r.meta, now)
			p.next = r.meta.LastOffset + 1
			records += int64(r.meta.NumRecords)
			bytes += int64(len(r.b))
		}
		if werr != nil {
			p.failed = werr
			p.mu.Unlock()
			return nil, -1, werr
		}
		if p.l.opts.FlushInterval > 0 {
			p.advanceVisibleLocked(p.next)
		}
		end = p.next
		p.mu.Unlock()

		if err := active.writeIndexTail(fromIdx, fromTime); err != nil {
			// Not fatal: the index files of the active segment are never
			// read back (recovery rebuilds them, a roll rewrites them whole
			// before it fsyncs them), and the data is written.
			p.logger().Warn("write index entries of the active segment; the roll rewrites them", "error", err)
		}
		if refused != nil {
			p.kickSyncer()
			return nil, end, refused
		}
	}
	p.l.metrics.RecordsAppended.Add(records)
	p.l.metrics.BytesAppended.Add(bytes)
	p.l.metrics.Batches.Add(int64(len(batches)))
	if p.l.opts.FlushInterval > 0 {
		return bases, -1, nil
	}
	p.kickSyncer()
	return bases, end, nil
}

// Why a segment rolls, as logged with a failed roll. A roll due by size or
// by the offset range is needed: the batch cannot go into the active
// segment, so the append fails when the roll does. One due by time
// (segment.ms), or by retention of an expired active segment, is
// housekeeping: when it fails, appends go on into the active segment.
// (Kafka also rolls when a segment's index is full, segment.index.bytes;
// here indexes are not preallocated and have no such limit: a segment's
// positions fit in uint32 since segment.bytes is at most MaxInt32.)
const (
	rollFull    = "segment.bytes" // the batch does not fit the active segment
	rollOffsets = "offset range"  // its offsets, relative to the base, would not fit int32
	rollAged    = "segment.ms"    // the active segment is old enough; the batch fits
	rollExpired = "retention.ms"  // retention rolls an active segment that expired whole
)

// rollDue says why the active segment, of which pos bytes are planned,
// must roll before a batch of size bytes (meta) that would get offsets
// from next, or "" when it takes the batch. An empty segment never rolls.
// aged means a roll due by segment.ms failed in this write: it is not due
// again.
func rollDue(cfg TopicConfig, active *segment, pos, next, size int64, meta batchMeta, now time.Time, aged bool) string {
	switch {
	case pos == 0:
		return ""
	case pos+size > cfg.SegmentBytes:
		return rollFull
	case next+(meta.LastOffset-meta.BaseOffset)-active.base > math.MaxInt32: // indexes hold offsets relative to the base
		return rollOffsets
	case !aged && now.Sub(active.created) > msDuration(cfg.SegmentMs):
		return rollAged
	}
	return ""
}

// plannedBatch is a batch of a write with its offsets assigned (meta) and
// its position in the active segment.
type plannedBatch struct {
	b    []byte
	meta batchMeta
	pos  int64
}

// writeRun writes a planned run of batches to s, which only the caller
// (holding wmu) writes to, and with Options.StartWriteback starts the
// kernel's writeback of them. It returns how many were written whole
// before an error.
func (p *partition) writeRun(s *segment, run []plannedBatch) (int, error) {
	for k, r := range run {
		if err := s.writeAt(r.b, r.pos); err != nil {
			return k, err
		}
	}
	if n := len(run); n > 0 && p.l.opts.StartWriteback {
		first, last := run[0], run[n-1]
		startWriteback(s.f, first.pos, last.pos+int64(len(last.b))-first.pos)
	}
	return len(run), nil
}

// writeKind says what write may assume of the batches it is given.
type writeKind int

const (
	// writeUnchecked batches come from outside: write checks their CRCs.
	writeUnchecked writeKind = iota
	// writeChecked batches come from outside and their CRCs were checked;
	// they are the caller's again once write returns.
	writeChecked
	// writeOwned batches were built by the log and nobody changes them
	// after the append: the tail cache may keep them for readers.
	writeOwned
)

// kickSyncer asks the syncer for a round.
func (p *partition) kickSyncer() {
	select {
	case p.syncReq <- struct{}{}:
	default:
	}
}

// waitDurable blocks until every offset below end is durable.
func (p *partition) waitDurable(ctx context.Context, end int64) (int64, error) {
	for {
		p.mu.Lock()
		durable, failed, ch := p.durable, p.failed, p.durableCh
		p.mu.Unlock()
		if durable >= end {
			return durable, nil
		}
		if failed != nil {
			return durable, fmt.Errorf("partition %s: %w", p, failed)
		}
		select {
		case p.syncReq <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return durable, fmt.Errorf("wait for fsync of %s: %w", p, ctx.Err())
		}
	}
}

func (p *partition) advanceVisibleLocked(to int64) {
	if to > p.visible {
		p.visible = to
		close(p.dataCh)
		p.dataCh = make(chan struct{})
	}
}

// rollLocked seals the active segment (its data and indexes fsync'ed) and
// starts a new one, so that only the newest segment can ever hold a torn
// tail. It also snapshots producer state at the new base.
//
// A roll can fail for want of a file descriptor or of disk space, which may
// come back. Every step is undone or harmless until the new segment is in
// place, so such a failure returns a *RollError and leaves the partition as
// it was: the old segment stays active (its data fsync'ed; sealing its
// indexes again is harmless), and whatever the roll created of the new
// segment is removed again, durably, before the old segment takes another
// append (a leftover empty segment at p.next would make recovery read those
// appends as crossing into it). Any other error leaves the disk in a state
// the partition cannot vouch for: the caller makes it read-only
// (rollFailedLocked).
func (p *partition) rollLocked(now time.Time) error {
	old := p.segments[len(p.segments)-1]
	base := p.next
	retry := func(err error) error { return &RollError{Partition: p.String(), Base: base, Err: err} }
	if err := old.syncAll(); err != nil {
		return err // fsyncgate: never retried
	}
	if err := old.sealIndexes(); err != nil {
		return retry(err)
	}
	// The directory is opened before any file is created, so that removing
	// what a failed create left behind can be made durable without another
	// descriptor.
	d, err := os.Open(p.dir)
	if err != nil {
		return retry(fmt.Errorf("open dir %s: %w", p.dir, err))
	}
	s, err := createSegment(p.dir, base, now)
	if err != nil {
		// createSegment closed what it opened; remove what it created.
		rerr := removeSegmentFiles(p.dir, base)
		if rerr == nil {
			rerr = d.Sync()
		}
		d.Close()
		if rerr != nil {
			return fmt.Errorf("%w; then remove its files: %w", err, rerr)
		}
		return retry(err)
	}
	err = d.Sync()
	d.Close()
	if err != nil {
		s.release()
		return fmt.Errorf("sync dir %s: %w", p.dir, err)
	}
	s.cache.Store(p.l.cache)
	old.cache.Store(nil)
	p.segments = append(p.segments, s)
	if err := p.producers.writeSnapshot(p.dir, p.next); err != nil {
		p.logger().Warn("write producer snapshot", "error", err)
	}
	p.l.metrics.SegmentsRolled.Add(1)
	if p.rollErr != nil {
		p.logger().Info("rolled a new segment again", "base_offset", base, "after", p.rollErr.Err)
		p.rollErr, p.rollBackoff, p.rollRetryAt = nil, 0, time.Time{}
	}
	return nil
}

// tryRollLocked rolls (rollLocked) at time now, for the reason why (one of
// the roll* reasons), unless a roll failed with a *RollError less than the
// backoff ago: then it returns at once, without touching the disk, a
// *RollError with Deferred set that carries the last failure's cause and
// says when the next try is. The first append (or retention pass) that
// wants a roll from then on tries it again.
//
// A wait longer than the backoff (plus rollBackoffMax of slack for a now
// read before the writer got wmu) means the clock (Options.Now) went back
// since the last try: then the roll is tried, so that a clock set back by
// an hour does not hold rolls back for an hour.
func (p *partition) tryRollLocked(now time.Time, why string) error {
	if last := p.rollErr; last != nil && now.Before(p.rollRetryAt) && p.rollRetryAt.Sub(now) <= p.rollBackoff+rollBackoffMax {
		return &RollError{Partition: p.String(), Base: p.next, Err: last.Err, RetryAt: p.rollRetryAt, Deferred: true}
	}
	if err := p.rollLocked(now); err != nil {
		return p.rollFailedLocked(err, now, why)
	}
	return nil
}

// rollFailedLocked handles an error of rollLocked, tried at time now for
// the reason why, and returns it: a *RollError leaves the partition
// writable and starts (or doubles) the wait before the next try, whose
// time it notes in the error; it is logged, at Warn, when it is the first
// of a row (one line per run of failures, whatever wanted the roll: the
// caller does not log it again). Any other error makes the partition
// read-only. Every failed try is counted.
func (p *partition) rollFailedLocked(err error, now time.Time, why string) error {
	p.l.metrics.RollFailures.Add(1)
	var re *RollError
	if !errors.As(err, &re) {
		p.failed = err
		p.logger().Error("roll to a new segment failed; partition is now read-only", "error", err)
		return err
	}
	p.rollBackoff = min(max(2*p.rollBackoff, rollBackoffMin), rollBackoffMax)
	p.rollRetryAt = now.Add(p.rollBackoff)
	re.RetryAt = p.rollRetryAt
	if p.rollErr == nil {
		p.logger().Warn("roll to a new segment failed; appends that fit the active segment go on into it (also when the roll is due by segment.ms only), those that need a new segment fail until a roll succeeds; tried again after a backoff of up to "+rollBackoffMax.String(),
			"reason", why, "error", err, "retry_at", p.rollRetryAt)
	}
	p.rollErr = re
	return err
}

// syncLoop is the partition's only fsync caller. Each round covers every
// append written before it started.
func (p *partition) syncLoop() {
	defer close(p.done)
	var tick <-chan time.Time
	if d := p.l.opts.FlushInterval; d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-p.syncReq:
		case <-tick:
		case <-p.stop:
			p.syncOnce()
			return
		}
		p.syncOnce()
	}
}

func (p *partition) syncOnce() {
	p.mu.Lock()
	target := p.next
	if target == p.durable || p.failed != nil {
		p.mu.Unlock()
		return
	}
	active := p.segments[len(p.segments)-1]
	active.acquire()
	p.mu.Unlock()

	start := time.Now()
	err := active.syncData()
	active.release()
	p.l.metrics.observeFsync(time.Since(start))

	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		// After a failed fsync the page cache state is unknown: never retry
		// and acknowledge (the fsyncgate lesson); refuse further appends.
		p.failed = err
		p.logger().Error("fsync failed; partition is now read-only", "error", err)
	} else if target > p.durable {
		p.durable = target
		p.advanceVisibleLocked(target)
	}
	close(p.durableCh)
	p.durableCh = make(chan struct{})
}

// view is a reader's consistent picture of the partition: the segments that
// may hold offsets from a start, each referenced, and the bounds.
type view struct {
	segs     []*segment
	sizes    []int64
	indexes  [][]offsetEntry
	times    [][]timeEntry
	maxTs    []int64
	start    int64
	end      int64
	next     int64 // the end of what is written, readable or not (maxTs counts it)
	waitData chan struct{}
}

func (v *view) release() {
	for _, s := range v.segs {
		s.release()
	}
}

// snapshot takes a view of the segments that may hold offset and later ones.
func (p *partition) snapshot(offset int64) (*view, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	v := &view{start: p.logStart, end: p.visible, next: p.next, waitData: p.dataCh}
	i := sort.Search(len(p.segments), func(i int) bool { return p.segments[i].base > offset }) - 1
	if i < 0 {
		i = 0
	}
	for _, s := range p.segments[i:] {
		s.acquire()
		v.segs = append(v.segs, s)
		v.sizes = append(v.sizes, s.size)
		v.indexes = append(v.indexes, s.index)
		v.times = append(v.times, s.timeIndex)
		v.maxTs = append(v.maxTs, s.maxTs)
	}
	return v, nil
}

// ReadResult is what one read of a partition returns.
type ReadResult struct {
	// Records may share their byte slices with other readers (the tail
	// cache hands the same batch to each): treat them as read-only.
	Records        []Record
	NextOffset     int64 // where the next read should start
	HighWatermark  int64 // offset after the last readable record
	LogStartOffset int64
}

// rawBatch is a stored batch as it sits on disk.
type rawBatch struct {
	bytes []byte
	kb    kmsg.RecordBatch // checked header; Records aliases bytes
	meta  batchMeta
	path  string // the segment file and the batch's position in it
	pos   int64
}

// readBatches returns stored batches holding offsets from offset on, up to
// about maxBytes (always at least one batch when any is readable), all below
// the visible end. It does not wait.
//
// With pool set, the file is read into buffers from the read pool, which
// pool keeps (see readBuffers); else into fresh ones.
func (p *partition) readBatches(offset int64, maxBytes int, pool *readBuffers) ([]rawBatch, *view, error) {
	v, err := p.snapshot(offset)
	if err != nil {
		return nil, nil, err
	}
	if offset < v.start || offset > v.end {
		v.release()
		return nil, v, fmt.Errorf("%w: offset %d of %s is outside [%d, %d]", ErrOffsetOutOfRange, offset, p, v.start, v.end)
	}
	defer v.release()
	var out []rawBatch
	total := 0
	for i, s := range v.segs {
		if offset >= v.end {
			break
		}
		bound, sealed := v.end, false
		if i+1 < len(v.segs) {
			bound, sealed = v.segs[i+1].base, true
		}
		it := s.checkedIter(v.indexes[i], v.sizes[i], offset, bound, sealed)
		if pool != nil {
			it.usePool(pool)
		}
		for offset < v.end {
			// Stop before the next batch when it is known not to fit:
			// then only its header was read.
			if n := it.pendingSize(); total > 0 && n > 0 && total+n > maxBytes {
				return out, v, nil
			}
			it.setWant(max(maxBytes-total, 1))
			b, err := it.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if len(out) > 0 {
					return out, v, nil // hand out what came before; the next read reports it
				}
				return nil, v, err
			}
			meta, raw := b.meta, b.raw
			if meta.LastOffset < offset {
				continue
			}
			if meta.BaseOffset >= v.end {
				break
			}
			if total > 0 && total+len(raw) > maxBytes {
				return out, v, nil
			}
			out = append(out, rawBatch{bytes: raw, kb: b.kb, meta: meta, path: s.path(".log"), pos: b.pos})
			total += len(raw)
			offset = meta.LastOffset + 1
		}
		if total >= maxBytes {
			break
		}
	}
	return out, v, nil
}

// removeFiles runs remove, which deletes files of the partition by path,
// unless its topic was deleted and its directory moved away meanwhile (see
// removeMu): the files went with it, and the path may be another topic's.
func (p *partition) removeFiles(remove func() error) error {
	p.removeMu.Lock()
	defer p.removeMu.Unlock()
	if p.moved {
		return nil
	}
	return remove()
}
