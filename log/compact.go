package log

// Compaction of topics whose cleanup.policy contains compact (compact, or
// compact,delete), on the model of Kafka's log cleaner.
//
// # What a pass keeps
//
// A pass works on the cleanable part of a partition: its sealed segments
// (never the active one) that lie wholly below the durable end and, with
// min.compaction.lag.ms, before the first segment holding a record younger
// than that lag (by record timestamp, as Kafka). Every record there survives
// except:
//
//   - a record with a later record of the same key in the dirty section
//     (below): the latest record per key wins;
//   - a tombstone (nil value) more than delete.retention.ms past both its
//     timestamp (its append time on LogAppendTime topics) and the pass that
//     first saw it (cleanMark), as Kafka keeps tombstones since its cleaner
//     first met them: one appended late with an old timestamp still stays
//     long enough for a consumer behind the head to read it;
//   - a record without a key, as Kafka's cleaner does (appends to compacted
//     topics refuse them; older ones exist when a topic's policy changed).
//
// Offsets never change. A batch that loses some records is re-encoded with
// kmsg holding only the survivors, keeping its base offset, last offset
// delta, first timestamp, each record's offset and timestamp deltas, its
// producer id, epoch and base sequence and its compression codec, with a new
// CRC; a batch that loses all of them is dropped. Reads therefore meet gaps:
// a read from an offset inside one returns the next surviving record.
// Control batches are kept as they are. Idempotent producer state lives in
// producer.snapshot, written whenever a segment is sealed, so dropped
// batches do not matter to it; only should that file be lost is a producer
// whose batches were all cleaned away unknown again and has to start over
// (Kafka keeps each producer's last batch, emptied, for this case).
//
// A segment left without any batch is deleted, except the first segment of
// a compact-only topic: it stays as an empty file so that the log start
// offset never moves (a consumer there would otherwise get an out-of-range
// error). With compact,delete the log start offset is retention's to move,
// and an empty first segment (no timestamp to expire by) would hold
// retention back forever, so it goes too.
//
// # Clean and dirty
//
// The file cleaner-offset-checkpoint in the partition directory holds the
// offset below which the log is clean: the end of the last pass. Below it,
// every key occurs at most once, so a pass maps key -> latest offset only
// for the dirty section (from the checkpoint to the end of the cleanable
// segments) and still cleans the whole cleanable part. A pass runs when
// dirty bytes / cleanable bytes reaches min.cleanable.dirty.ratio; a missing
// or unreadable checkpoint makes everything dirty, which only costs work
// (and the tombstones' first sight, below, moves to the next pass: they
// stay longer). After the offset it holds the last passes' marks (end and
// time), which date when the cleaner first saw each tombstone.
// The map holds every distinct key of the dirty section in memory (Kafka
// bounds it with log.cleaner.dedupe.buffer.size; this build does not).
//
// # Concurrency and crashes
//
// Appends and reads go on during a pass. The pass takes references to the
// segments under the partition lock and reads them without it. Each
// segment that changes is written to <base>.log.cleaned, with
// <base>.index.cleaned and <base>.timeindex.cleaned, all fsync'ed; then,
// under the lock and briefly, the old index files are removed, the
// .log.cleaned file is renamed over <base>.log and the new segment takes
// the old one's place; readers holding the old one keep reading its open
// file until they release it. Once the directory is fsync'ed the indexes
// take their names. Segments are swapped in offset order, each durable
// before the next, so a tombstone is never gone from disk while an older
// value of its key is still there. A crash at any point leaves either the
// old file or the new one under <base>.log, both correct: recovery deletes
// *.cleaned leftovers and rebuilds missing indexes. The checkpoint is
// written last.
//
// Lock order: partition.cleanMu, then partition.mu.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	cleanerCheckpointFile = "cleaner-offset-checkpoint"
	// cleanerCheckpointVersion 1 adds the pass marks to version 0's offset.
	cleanerCheckpointVersion = 1
	// maxCleanMarks bounds the pass marks kept (see cleanMark).
	maxCleanMarks = 32
	cleanedSuffix = ".cleaned"
)

// codecConfigName maps a batch's codec bits to the compression.type name
// that compressors is keyed by.
var codecConfigName = map[kgo.CompressionCodecType]string{
	kgo.CodecGzip:   "gzip",
	kgo.CodecSnappy: "snappy",
	kgo.CodecLz4:    "lz4",
	kgo.CodecZstd:   "zstd",
}

// Compact runs a cleaning pass on every partition of every topic whose
// cleanup.policy contains compact and whose dirty ratio has reached the
// topic's min.cleanable.dirty.ratio. The background loop calls it every
// Options.CleanerInterval; calling it directly is safe too, since passes
// over one partition are serialized. It returns early when ctx ends. Errors
// are logged per partition rather than returned, so one damaged partition
// does not hold back the others.
func (l *Log) Compact(ctx context.Context) {
	for _, t := range l.topicList() {
		for _, p := range t.parts {
			if ctx.Err() != nil {
				return
			}
			if !p.cfg().Compact {
				continue
			}
			if _, err := p.compact(ctx, l.now(), false); err != nil && ctx.Err() == nil {
				l.logger.Error("compaction failed", "topic", p.topic, "partition", p.id, "error", err)
			}
		}
	}
}

// cleanStats describes one cleaning pass of a partition.
type cleanStats struct {
	ran           bool // the ratio was reached, or the pass was forced
	dirtyRatio    float64
	segments      int // segments rewritten or deleted
	recordsBefore int64
	recordsAfter  int64
	bytesBefore   int64
	bytesAfter    int64
	superseded    int64 // records with a later record of their key
	tombstones    int64 // tombstones past delete.retention.ms
	keyless       int64 // records without a key
	cleanOffset   int64 // the checkpoint written
}

func (st *cleanStats) add(d cleanStats) {
	st.recordsBefore += d.recordsBefore
	st.recordsAfter += d.recordsAfter
	st.bytesBefore += d.bytesBefore
	st.bytesAfter += d.bytesAfter
	st.superseded += d.superseded
	st.tombstones += d.tombstones
	st.keyless += d.keyless
}

// compact runs one cleaning pass at time now (the clock tombstones are aged
// by). Without force it does nothing unless the dirty ratio has reached
// min.cleanable.dirty.ratio; with force it cleans whatever is cleanable,
// even with nothing dirty (tombstones may have expired). It returns what the
// pass did; on an error, the segments swapped before it stay cleaned and
// the checkpoint is not moved.
func (p *partition) compact(ctx context.Context, now time.Time, force bool) (cleanStats, error) {
	p.cleanMu.Lock()
	defer p.cleanMu.Unlock()
	var st cleanStats
	cfg := p.cfg()
	if !cfg.Compact {
		return st, nil
	}
	w := p.cleanerView()
	if w == nil {
		return st, nil
	}
	defer w.release()
	if cfg.MinCompactionLag > 0 {
		w.keepYoungerThan(now.UnixMilli() - cfg.MinCompactionLag)
	}
	if len(w.segs) == 0 {
		return st, nil
	}

	checkpoint, marks, err := readCleanerCheckpoint(p.dir)
	if err != nil {
		p.logger().Warn("cleaner checkpoint unreadable; treating the whole log as dirty", "error", err)
	}
	firstDirty := checkpoint
	if firstDirty < w.start || firstDirty > w.next {
		firstDirty = w.start
	}
	// Marks past the end (a log cut back after a crash) would date records
	// that have taken their offsets since.
	marks = slices.DeleteFunc(marks, func(m cleanMark) bool { return m.end > w.next })
	var cleanBytes, dirtyBytes int64
	for i := range w.segs {
		if w.ends[i] <= firstDirty {
			cleanBytes += w.sizes[i]
		} else {
			dirtyBytes += w.sizes[i]
		}
	}
	if total := cleanBytes + dirtyBytes; total > 0 {
		st.dirtyRatio = float64(dirtyBytes) / float64(total)
	}
	if !force && (dirtyBytes == 0 || st.dirtyRatio < cfg.MinCleanableRatio) {
		return st, nil
	}
	st.ran = true
	began := time.Now()

	rules := &cleanRules{latest: map[string]int64{}, nowMs: now.UnixMilli(), deleteRetentionMs: cfg.DeleteRetentionMs, dropEmpty: cfg.Delete, marks: marks}
	for i, s := range w.segs {
		if w.ends[i] <= firstDirty {
			continue
		}
		if err := rules.mapKeys(ctx, s, w.sizes[i], w.ends[i]); err != nil {
			return st, fmt.Errorf("compact %s: map keys of %s: %w", p, s.path(".log"), err)
		}
	}
	for i, s := range w.segs {
		if err := p.cleanSegment(ctx, s, w.sizes[i], w.ends[i], rules, &st); err != nil {
			return st, fmt.Errorf("compact %s: %w", p, err)
		}
	}
	if p.isClosed() {
		return st, nil
	}
	end := w.ends[len(w.ends)-1]
	if end != checkpoint {
		marks = addMark(marks, cleanMark{end: end, time: rules.nowMs}, w.start)
		if err := writeCleanerCheckpoint(p.dir, end, marks); err != nil {
			return st, fmt.Errorf("compact %s: %w", p, err)
		}
	}
	st.cleanOffset = end
	p.logger().Info("compacted partition",
		"segments_cleaned", st.segments, "dirty_ratio", st.dirtyRatio,
		"records_before", st.recordsBefore, "records_after", st.recordsAfter,
		"bytes_before", st.bytesBefore, "bytes_after", st.bytesAfter,
		"superseded", st.superseded, "tombstones_removed", st.tombstones, "keyless_removed", st.keyless,
		"clean_offset", end, "duration", time.Since(began))
	return st, nil
}

func (p *partition) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// cleanerView is what a pass works on: the sealed segments lying wholly
// below the durable end, oldest first, each referenced, with their sizes
// and end offsets, taken under the partition lock and read without it.
// Sealed segments do not change, so the view stays true while it is held.
type cleanerView struct {
	segs  []*segment
	sizes []int64
	ends  []int64 // offset after each segment: the next segment's base
	maxTs []int64 // largest record timestamp of each segment, -1 if none
	start int64   // log start offset
	next  int64   // log end offset
}

// cleanerView returns nil when the partition is closed or read-only.
func (p *partition) cleanerView() *cleanerView {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.failed != nil {
		return nil
	}
	w := &cleanerView{start: p.logStart, next: p.next}
	for i := 0; i+1 < len(p.segments); i++ {
		s, end := p.segments[i], p.segments[i+1].base
		if end > p.durable {
			break
		}
		s.acquire()
		w.segs = append(w.segs, s)
		w.sizes = append(w.sizes, s.size)
		w.ends = append(w.ends, end)
		w.maxTs = append(w.maxTs, s.maxTs)
	}
	return w
}

// keepYoungerThan leaves out of the view (and releases) the first segment
// holding a record stamped after cutoffMs (Unix ms) and every segment after
// it, as Kafka's min.compaction.lag.ms bounds the cleanable part: a record
// stays in the log as written until it is at least that old.
func (w *cleanerView) keepYoungerThan(cutoffMs int64) {
	for i, ts := range w.maxTs {
		if ts > cutoffMs {
			for _, s := range w.segs[i:] {
				s.release()
			}
			w.segs, w.sizes, w.ends, w.maxTs = w.segs[:i], w.sizes[:i], w.ends[:i], w.maxTs[:i]
			return
		}
	}
}

func (w *cleanerView) release() {
	for _, s := range w.segs {
		s.release()
	}
}

// cleanRules decide which records of a pass survive.
type cleanRules struct {
	latest            map[string]int64 // key -> offset of its latest record in the dirty section
	nowMs             int64
	deleteRetentionMs int64
	dropEmpty         bool        // the policy has delete too: empty segments go, even the first
	marks             []cleanMark // earlier passes, by end: when the cleaner first saw a record
}

type verdict int

const (
	keepRecord verdict = iota
	dropSuperseded
	dropTombstone
	dropKeyless
)

func (r *cleanRules) judge(kr *kmsg.Record, offset, ts int64) verdict {
	if kr.Key == nil {
		return dropKeyless
	}
	if latest, ok := r.latest[string(kr.Key)]; ok && offset < latest {
		return dropSuperseded
	}
	if kr.Value == nil && r.nowMs-max(ts, firstSeen(r.marks, offset, r.nowMs)) > r.deleteRetentionMs {
		return dropTombstone
	}
	return keepRecord
}

// mapKeys records the offset of the latest record of every key in the
// first size bytes of s.
func (r *cleanRules) mapKeys(ctx context.Context, s *segment, size, end int64) error {
	return eachBatch(ctx, s, size, end, func(_ []byte, pos int64, kb *kmsg.RecordBatch, meta batchMeta) error {
		if meta.IsControl {
			return nil
		}
		recs, err := batchRecords(kb)
		if err != nil {
			return &CorruptionError{Path: s.path(".log"), Position: pos, Offset: meta.BaseOffset, Reason: err.Error()}
		}
		for i := range recs {
			if recs[i].Key == nil {
				continue
			}
			off := kb.FirstOffset + int64(recs[i].OffsetDelta)
			if cur, ok := r.latest[string(recs[i].Key)]; !ok || off > cur {
				r.latest[string(recs[i].Key)] = off
			}
		}
		return nil
	})
}

var errWouldChange = errors.New("segment would change")

// changes reports whether cleaning the first size bytes of s would remove
// any record (or, under compact,delete, the whole segment: an empty first
// segment kept while the policy was compact alone); when not, it also
// returns how many records s holds.
func (r *cleanRules) changes(ctx context.Context, s *segment, size, end int64) (bool, int64, error) {
	if size == 0 {
		return r.dropEmpty, 0, nil
	}
	var records int64
	err := eachBatch(ctx, s, size, end, func(_ []byte, pos int64, kb *kmsg.RecordBatch, meta batchMeta) error {
		if meta.IsControl {
			return nil
		}
		recs, err := batchRecords(kb)
		if err != nil {
			return &CorruptionError{Path: s.path(".log"), Position: pos, Offset: meta.BaseOffset, Reason: err.Error()}
		}
		for i := range recs {
			if r.judge(&recs[i], kb.FirstOffset+int64(recs[i].OffsetDelta), recordTimestamp(kb, &recs[i])) != keepRecord {
				return errWouldChange
			}
		}
		records += int64(len(recs))
		return nil
	})
	if errors.Is(err, errWouldChange) {
		return true, 0, nil
	}
	return false, records, err
}

// cleanSegment cleans one segment of the view: a segment that would not
// change is left alone; otherwise its cleaned copy is written and swapped
// in (or the segment deleted when nothing of it is left).
func (p *partition) cleanSegment(ctx context.Context, s *segment, size, end int64, rules *cleanRules, st *cleanStats) error {
	changed, records, err := rules.changes(ctx, s, size, end)
	if err != nil {
		return fmt.Errorf("scan %s: %w", s.path(".log"), err)
	}
	if !changed {
		st.add(cleanStats{recordsBefore: records, recordsAfter: records, bytesBefore: size, bytesAfter: size})
		return nil
	}
	ns, d, err := writeCleaned(ctx, s, size, end, rules)
	if err != nil {
		return err
	}
	res, err := p.swapCleaned(s, ns, rules.dropEmpty)
	if res != swapGone {
		st.add(d)
		st.segments++
		p.l.metrics.SegmentsCleaned.Add(1)
	}
	return err
}

// eachBatch calls fn for every batch in the first size bytes of s, each
// checked: framing, magic, CRC, and offsets rising within [s.base, end)
// (the CRC does not cover the base offset). Damage is a *CorruptionError: a
// pass never cleans over it.
func eachBatch(ctx context.Context, s *segment, size, end int64, fn func(raw []byte, pos int64, kb *kmsg.RecordBatch, meta batchMeta) error) error {
	it := s.iter(0, size)
	expect := s.base
	for n := 0; ; n++ {
		if n%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		raw, pos, err := it.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &CorruptionError{Path: s.path(".log"), Position: pos, Offset: -1, Reason: err.Error()}
		}
		kb, meta, err := s.decodeChecked(raw, pos, expect)
		if err != nil {
			return err
		}
		if meta.BaseOffset < expect || meta.LastOffset >= end {
			return &CorruptionError{Path: s.path(".log"), Position: pos, Offset: expect,
				Reason: fmt.Sprintf("batch offsets [%d, %d] outside [%d, %d)", meta.BaseOffset, meta.LastOffset, expect, end)}
		}
		expect = meta.LastOffset + 1
		if err := fn(raw, pos, &kb, meta); err != nil {
			return err
		}
	}
}

// batchRecords decodes every record of a checked batch with kmsg, keeping
// all fields (attributes, offset and timestamp deltas, headers) so that a
// kept record is written back as it was. Keys and values alias the batch
// (or its decompressed copy).
func batchRecords(kb *kmsg.RecordBatch) ([]kmsg.Record, error) {
	raw := kb.Records
	if codec := kgo.CompressionCodecType(kb.Attributes & attrCompressionMask); codec != kgo.CodecNone {
		out, err := decompressor.Decompress(raw, codec)
		if err != nil {
			return nil, fmt.Errorf("decompress %v batch: %w", codec, err)
		}
		raw = out
	}
	recs := make([]kmsg.Record, 0, max(kb.NumRecords, 0))
	for i := int32(0); i < kb.NumRecords; i++ {
		l, n := binary.Varint(raw)
		if n <= 0 || l < 0 || int64(len(raw)-n) < l {
			return nil, fmt.Errorf("record %d: bad length", i)
		}
		end := n + int(l)
		var kr kmsg.Record
		if err := kr.ReadFrom(raw[:end]); err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		raw = raw[end:]
		recs = append(recs, kr)
	}
	return recs, nil
}

// recordTimestamp is a record's timestamp as readers see it.
func recordTimestamp(kb *kmsg.RecordBatch, kr *kmsg.Record) int64 {
	if kb.Attributes&attrLogAppendTime != 0 {
		return kb.MaxTimestamp
	}
	return kb.FirstTimestamp + kr.TimestampDelta64
}

// rebuildBatch re-encodes a batch holding only kept, a subset of its
// records. Everything else stays as it was (base offset, last offset delta,
// leader epoch, attributes and codec, first timestamp, producer id, epoch
// and base sequence), so every kept record keeps its offset and timestamp,
// as with Kafka's cleaner. The max timestamp is recomputed from the kept
// records, except with LogAppendTime, where it is every record's timestamp.
// The CRC and length are computed afresh.
func rebuildBatch(kb *kmsg.RecordBatch, kept []kmsg.Record) ([]byte, error) {
	raw := make([]byte, 0, len(kb.Records))
	maxTs := int64(math.MinInt64)
	for i := range kept {
		raw = appendRecord(raw, &kept[i])
		maxTs = max(maxTs, kb.FirstTimestamp+kept[i].TimestampDelta64)
	}
	nb := *kb
	nb.NumRecords = int32(len(kept))
	if nb.Attributes&attrLogAppendTime == 0 && len(kept) > 0 {
		nb.MaxTimestamp = maxTs
	}
	if codec := kgo.CompressionCodecType(nb.Attributes & attrCompressionMask); codec != kgo.CodecNone {
		c, ok := compressors[codecConfigName[codec]]
		if !ok {
			return nil, fmt.Errorf("batch at offset %d: no compressor for codec %v", kb.FirstOffset, codec)
		}
		var buf bytes.Buffer
		out, used := c.Compress(&buf, raw)
		if used != codec {
			return nil, fmt.Errorf("batch at offset %d: compress with %v failed", kb.FirstOffset, codec)
		}
		raw = append([]byte(nil), out...)
	}
	nb.Records = raw
	out := nb.AppendTo(make([]byte, 0, batchHeaderSize+len(raw)))
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-batchLengthPrefix))
	setBatchCRC(out)
	return out, nil
}

func cleanedPath(s *segment, ext string) string { return s.path(ext + cleanedSuffix) }

// removeCleaned deletes what writeCleaned left of s, if anything.
func removeCleaned(s *segment) {
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		_ = os.Remove(cleanedPath(s, ext))
	}
}

// writeCleaned writes the cleaned copy of the first size bytes of s to
// <base>.log.cleaned, with its indexes as <base>.index.cleaned and
// <base>.timeindex.cleaned, all fsync'ed, and returns it as a segment (one
// reference, not yet in the partition) with what cleaning removed. On an
// error nothing is left behind.
func writeCleaned(ctx context.Context, s *segment, size, end int64, rules *cleanRules) (ns *segment, d cleanStats, err error) {
	logPath := cleanedPath(s, ".log")
	ns = &segment{base: s.base, dir: s.dir, next: s.next, maxTs: -1, created: s.created}
	if ns.f, err = os.OpenFile(logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
		return nil, d, fmt.Errorf("create %s: %w", logPath, err)
	}
	// The error returns below set ns to nil before this runs: clean up
	// through a copy.
	made := ns
	defer func() {
		if err != nil {
			made.close()
			removeCleaned(s)
			ns = nil
		}
	}()
	bw := bufio.NewWriterSize(ns.f, readChunk)
	var pos int64
	err = eachBatch(ctx, s, size, end, func(raw []byte, bpos int64, kb *kmsg.RecordBatch, meta batchMeta) error {
		out := raw
		if !meta.IsControl {
			recs, err := batchRecords(kb)
			if err != nil {
				return &CorruptionError{Path: s.path(".log"), Position: bpos, Offset: meta.BaseOffset, Reason: err.Error()}
			}
			kept := recs[:0]
			for i := range recs {
				switch rules.judge(&recs[i], kb.FirstOffset+int64(recs[i].OffsetDelta), recordTimestamp(kb, &recs[i])) {
				case keepRecord:
					kept = append(kept, recs[i])
				case dropSuperseded:
					d.superseded++
				case dropTombstone:
					d.tombstones++
				case dropKeyless:
					d.keyless++
				}
			}
			d.recordsBefore += int64(kb.NumRecords)
			d.recordsAfter += int64(len(kept))
			if len(kept) == 0 {
				return nil
			}
			if len(kept) < int(kb.NumRecords) {
				if out, err = rebuildBatch(kb, kept); err != nil {
					return err
				}
				var reason string
				if _, meta, reason = checkBatch(out); reason != "" {
					return fmt.Errorf("rebuilt batch at offset %d does not check out: %s", kb.FirstOffset, reason)
				}
			}
		}
		if _, err := bw.Write(out); err != nil {
			return fmt.Errorf("write %s: %w", logPath, err)
		}
		ns.track(meta, pos)
		pos += int64(len(out))
		return nil
	})
	if err != nil {
		return nil, d, fmt.Errorf("clean %s: %w", s.path(".log"), err)
	}
	if err = bw.Flush(); err != nil {
		return nil, d, fmt.Errorf("write %s: %w", logPath, err)
	}
	if err = ns.f.Sync(); err != nil {
		return nil, d, fmt.Errorf("sync %s: %w", logPath, err)
	}
	ns.size = pos
	ns.addTimeEntry()
	if ns.idxF, err = os.OpenFile(cleanedPath(s, ".index"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
		return nil, d, fmt.Errorf("create %s: %w", cleanedPath(s, ".index"), err)
	}
	if ns.tidx, err = os.OpenFile(cleanedPath(s, ".timeindex"), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
		return nil, d, fmt.Errorf("create %s: %w", cleanedPath(s, ".timeindex"), err)
	}
	if err = ns.writeIndexFiles(); err != nil {
		return nil, d, err
	}
	for _, f := range []*os.File{ns.idxF, ns.tidx} {
		if err = f.Sync(); err != nil {
			return nil, d, fmt.Errorf("sync %s: %w", f.Name(), err)
		}
	}
	ns.refs.Store(1)
	d.bytesBefore, d.bytesAfter = size, pos
	return ns, d, nil
}

type swapResult int

const (
	swapReplaced swapResult = iota // the cleaned copy took the old segment's place
	swapDropped                    // the old segment was deleted: nothing of it was left
	swapGone                       // the old segment had left the partition (retention, close): nothing done
)

// swapCleaned puts ns, the cleaned copy of old, in old's place, or deletes
// old when ns is empty and old is not the first segment or dropFirst is set
// (see the file comment). It holds the partition lock only for renames and removals, never
// for an fsync. It takes ownership of ns and drops the partition's reference
// to old; readers holding old keep reading its open file.
func (p *partition) swapCleaned(old, ns *segment, dropFirst bool) (swapResult, error) {
	p.mu.Lock()
	i := slices.Index(p.segments, old)
	if p.closed || i < 0 || i == len(p.segments)-1 {
		p.mu.Unlock()
		ns.close()
		_ = p.removeFiles(func() error { removeCleaned(old); return nil })
		return swapGone, nil
	}
	if ns.size == 0 && (i > 0 || dropFirst) {
		p.segments = slices.Delete(slices.Clone(p.segments), i, i+1)
		if p.segments[0].base > p.logStart {
			p.logStart = p.segments[0].base
		}
		p.mu.Unlock()
		ns.close()
		err := p.removeFiles(func() error {
			removeCleaned(old)
			return old.remove()
		})
		old.release()
		if err != nil {
			return swapDropped, fmt.Errorf("delete emptied segment %s: %w", old.path(".log"), err)
		}
		return swapDropped, syncDir(p.dir)
	}
	// The old indexes go first: from here until the new ones take their
	// names, a crash leaves the segment without indexes, which open
	// rebuilds, and never with indexes of the other file.
	for _, ext := range []string{".index", ".timeindex"} {
		if err := os.Remove(old.path(ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
			p.mu.Unlock()
			ns.close()
			removeCleaned(old)
			return swapGone, fmt.Errorf("remove %s: %w", old.path(ext), err)
		}
	}
	if err := os.Rename(cleanedPath(old, ".log"), old.path(".log")); err != nil {
		p.mu.Unlock()
		ns.close()
		removeCleaned(old)
		return swapGone, fmt.Errorf("rename %s: %w", cleanedPath(old, ".log"), err)
	}
	p.segments[i] = ns
	p.mu.Unlock()
	old.release()

	// Only once the new .log is durable may the indexes made for it take
	// their names.
	if err := syncDir(p.dir); err != nil {
		return swapReplaced, err
	}
	var err error
	p.mu.Lock()
	if !p.closed && slices.Contains(p.segments, ns) {
		for _, ext := range []string{".index", ".timeindex"} {
			if rerr := os.Rename(cleanedPath(ns, ext), ns.path(ext)); rerr != nil && err == nil {
				err = fmt.Errorf("rename %s: %w", cleanedPath(ns, ext), rerr)
			}
		}
	} else {
		removeCleaned(ns)
	}
	p.mu.Unlock()
	// No fsync of the directory for these renames: should a crash undo
	// them, open removes the .cleaned files and rebuilds the indexes. The
	// next swap's or the checkpoint's fsync covers them anyway.
	return swapReplaced, err // on an error the segment works from memory; open rebuilds its indexes
}

// cleanMark says that a pass, at Unix ms time, left the partition clean
// below offset end. The marks date when the cleaner first saw a record: a
// tombstone is first seen by the first pass whose end is above it, and it
// stays until delete.retention.ms after that (and after its own
// timestamp), as Kafka keeps tombstones since its cleaner first met them
// (KIP-534): a tombstone appended late with an old timestamp (a source
// catching up) is not dropped before a consumer behind could read it.
type cleanMark struct {
	end, time int64
}

// firstSeen returns when the cleaner first saw the record at offset: the
// time of the first mark above it, or now when no pass has covered it yet.
func firstSeen(marks []cleanMark, offset, nowMs int64) int64 {
	i, _ := slices.BinarySearchFunc(marks, offset, func(m cleanMark, o int64) int {
		if m.end <= o {
			return -1
		}
		return 1
	})
	if i < len(marks) {
		return marks[i].time
	}
	return nowMs
}

// addMark returns marks with a pass's mark appended, those at or below
// start (their records are gone) dropped, and at most maxCleanMarks kept.
// Dropping the oldest marks moves the first sight of what they covered to
// a later mark: tombstones stay longer, never shorter.
func addMark(marks []cleanMark, m cleanMark, start int64) []cleanMark {
	out := make([]cleanMark, 0, len(marks)+1)
	for _, old := range marks {
		if old.end > start && old.end < m.end {
			out = append(out, old)
		}
	}
	out = append(out, m)
	if len(out) > maxCleanMarks {
		out = out[len(out)-maxCleanMarks:]
	}
	return out
}

// readCleanerCheckpoint returns the offset below which the partition in dir
// is clean (0 when no pass has finished yet) and the passes' marks, by end.
// The file holds the format version, the offset, then a line "end time"
// per mark; version 0 files have no marks.
func readCleanerCheckpoint(dir string) (int64, []cleanMark, error) {
	path := filepath.Join(dir, cleanerCheckpointFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 2 || (lines[0] != "0" && lines[0] != strconv.Itoa(cleanerCheckpointVersion)) || (lines[0] == "0" && len(lines) != 2) {
		return 0, nil, fmt.Errorf("read %s: not a version 0 or %d checkpoint", path, cleanerCheckpointVersion)
	}
	off, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || off < 0 {
		return 0, nil, fmt.Errorf("read %s: bad offset %q", path, lines[1])
	}
	var marks []cleanMark
	for _, line := range lines[2:] {
		var m cleanMark
		if _, err := fmt.Sscanf(line, "%d %d", &m.end, &m.time); err != nil || m.end <= 0 || m.end > off ||
			(len(marks) > 0 && m.end <= marks[len(marks)-1].end) {
			return 0, nil, fmt.Errorf("read %s: bad mark %q", path, line)
		}
		marks = append(marks, m)
	}
	return off, marks, nil
}

// writeCleanerCheckpoint records, atomically, that the log is clean below
// offset, with the passes' marks.
func writeCleanerCheckpoint(dir string, offset int64, marks []cleanMark) error {
	data := fmt.Appendf(nil, "%d\n%d\n", cleanerCheckpointVersion, offset)
	for _, m := range marks {
		data = fmt.Appendf(data, "%d %d\n", m.end, m.time)
	}
	return writeFileAtomic(filepath.Join(dir, cleanerCheckpointFile), data)
}
