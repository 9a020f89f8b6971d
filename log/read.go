package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// read returns records from offset on, up to about maxBytes of stored
// batches. At the end of the log it waits until data arrives, ctx ends or
// maxWait passes (then it returns no records and no error).
func (p *partition) read(ctx context.Context, offset int64, maxBytes int, maxWait time.Duration) (ReadResult, error) {
	var timer <-chan time.Time
	for {
		batches, v, err := p.readBatches(offset, maxBytes, nil) // records alias the buffers: never pooled
		if err != nil {
			res := ReadResult{NextOffset: offset}
			if v != nil {
				res.HighWatermark, res.LogStartOffset = v.end, v.start
			}
			return res, err
		}
		res := ReadResult{NextOffset: offset, HighWatermark: v.end, LogStartOffset: v.start}
		if len(batches) > 0 {
			n := 0
			for _, b := range batches {
				// The count is the batch's claim; a record takes at least a
				// few bytes, so never reserve more than the bytes allow.
				n += min(int(b.meta.NumRecords), len(b.bytes)/4)
			}
			res.Records = make([]Record, 0, n)
			for _, b := range batches {
				if b.meta.IsControl {
					res.NextOffset = b.meta.LastOffset + 1
					continue
				}
				kb, reason := b.kb, ""
				before := len(res.Records)
				if reason == "" {
					res.Records, err = decodeRecords(res.Records, &kb, offset)
					if err != nil {
						reason = err.Error()
					}
				}
				if reason != "" {
					res.Records = res.Records[:before]
					if len(res.Records) > 0 {
						break // hand out what came before; the next read reports it
					}
					return res, &CorruptionError{Path: b.path, Position: b.pos, Offset: b.meta.BaseOffset, Reason: reason}
				}
				for i := before; i < len(res.Records); i++ {
					r := &res.Records[i]
					if r.Offset >= v.end {
						res.Records = res.Records[:i]
						break
					}
					r.Topic, r.Partition = p.topic, p.id
				}
				res.NextOffset = b.meta.LastOffset + 1
			}
			if res.NextOffset > v.end {
				res.NextOffset = v.end
			}
			if len(res.Records) > 0 || res.NextOffset > offset {
				p.l.metrics.RecordsRead.Add(int64(len(res.Records)))
				return res, nil
			}
		}
		if maxWait <= 0 {
			return res, nil
		}
		if timer == nil {
			t := time.NewTimer(maxWait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-v.waitData:
		case <-timer:
			return res, nil
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
}

// offsetForTime returns the first offset whose record timestamp is at or
// after ts; found is false when every record is older (offset is then the
// log end).
func (p *partition) offsetForTime(ts int64) (offset int64, found bool, err error) {
	v, err := p.snapshot(-1)
	if err != nil {
		return 0, false, err
	}
	defer v.release()
	return v.offsetForTime(ts)
}

// offsetForTime finds the first record of the view at or after ts.
func (v *view) offsetForTime(ts int64) (offset int64, found bool, err error) {
	for i, s := range v.segs {
		if v.maxTs[i] < ts {
			continue
		}
		bound, sealed := v.end, false
		if i+1 < len(v.segs) {
			bound, sealed = v.segs[i+1].base, true
		}
		off, found, err := s.offsetForTime(ts, v.indexes[i], v.times[i], v.sizes[i], v.start, v.end, bound, sealed)
		if err != nil || found {
			return off, found, err
		}
	}
	return v.end, false, nil
}

// offsetOfMaxTimestamp finds the first record with the partition's largest
// timestamp. Each segment knows its largest (the last time index entry of a
// sealed one), so it is the first record at or after that time. When that
// record is written but not yet readable (not yet fsync'ed), it waits for it
// and searches again: records before it are no newer, so the first at or
// after the time is still it.
func (p *partition) offsetOfMaxTimestamp(ctx context.Context) (offset, ts int64, found bool, err error) {
	v, err := p.snapshot(-1)
	if err != nil {
		return 0, 0, false, err
	}
	ts = -1
	for _, m := range v.maxTs {
		ts = max(ts, m)
	}
	next := v.next
	if ts >= 0 {
		offset, found, err = v.offsetForTime(ts)
	}
	v.release()
	if ts < 0 || found || err != nil || next <= v.end {
		return offset, ts, found, err
	}
	if _, err := p.waitDurable(ctx, next); err != nil {
		return 0, 0, false, err
	}
	if v, err = p.snapshot(-1); err != nil {
		return 0, 0, false, err
	}
	defer v.release()
	offset, found, err = v.offsetForTime(ts)
	return offset, ts, found, err
}

// offsetForTime finds the first record of a segment at or after ts whose
// offset is in [start, end) (idx, tidx and size as a reader's view holds
// them). The time index says where the scan may start: every record up to
// the entry's offset is older than ts. The entry is checked against the
// batch it names before the scan trusts it; a wrong one makes the scan start
// over from the beginning of the segment.
func (s *segment) offsetForTime(ts int64, idx []offsetEntry, tidx []timeEntry, size, start, end, bound int64, sealed bool) (int64, bool, error) {
	e, useIndex := lookupTimeEntry(tidx, ts)
scan:
	for {
		from := s.base
		if useIndex {
			from = s.base + int64(e.rel)
		}
		checked := !useIndex
		it := s.checkedIter(idx, size, from, bound, sealed)
		for {
			b, err := it.next()
			if err == io.EOF {
				if !checked {
					useIndex = false
					continue scan
				}
				return 0, false, nil
			}
			if err != nil {
				return 0, false, err
			}
			m := b.meta
			if !checked && m.LastOffset >= from {
				// The batch that raised the max timestamp to e.ts ends at
				// the entry's offset.
				if m.LastOffset != from || m.MaxTimestamp != e.ts {
					useIndex = false
					continue scan
				}
				checked = true
				continue
			}
			if m.BaseOffset >= end {
				return 0, false, nil
			}
			if m.MaxTimestamp < ts || m.IsControl {
				continue
			}
			if !checked {
				// A record at or before the entry's offset is not older
				// than ts: the entry is wrong.
				useIndex = false
				continue scan
			}
			recs, err := decodeRecords(nil, &b.kb, 0)
			if err != nil {
				return 0, false, &CorruptionError{Path: s.path(".log"), Position: b.pos, Offset: m.BaseOffset, Reason: err.Error()}
			}
			for _, r := range recs {
				if r.Timestamp.UnixMilli() >= ts && r.Offset >= start && r.Offset < end {
					return r.Offset, true, nil
				}
			}
		}
	}
}

// bounds returns the log start offset and the readable end.
func (p *partition) bounds() (start, end int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logStart, p.visible
}

// enforceRetention deletes whole segments, oldest first, while they lie
// wholly below the log start offset (DeleteRecords moved it; whatever the
// cleanup.policy, as Kafka) or, when the policy has delete, are past
// retention.ms or the partition is over retention.bytes. The active segment
// goes only when every record in it is past retention.ms: it is rolled
// first (rollExpiredActive). It returns how many segments went.
func (p *partition) enforceRetention(now time.Time) (int, error) {
	cfg := p.cfg()
	var rollErr error
	if cfg.Delete {
		// A failed roll (out of descriptors, say) does not hold back the
		// deletion of expired sealed segments, which frees descriptors.
		rollErr = p.rollExpiredActive(now, cfg)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, nil
	}
	var total int64
	for _, s := range p.segments {
		total += s.size
	}
	n := 0
	for n < len(p.segments)-1 {
		s := p.segments[n]
		if p.segments[n+1].base > p.visible {
			// Some of its records are written but not yet readable (not
			// yet fsync'ed): as Kafka deletes only below the high
			// watermark, they wait until a reader could have seen them.
			break
		}
		below := p.segments[n+1].base <= p.logStart
		expired := cfg.RetentionMs >= 0 && s.maxTs >= 0 && now.UnixMilli()-s.maxTs > cfg.RetentionMs
		oversize := cfg.RetentionBytes >= 0 && total-s.size >= cfg.RetentionBytes
		if !below && (!cfg.Delete || (!expired && !oversize)) {
			break
		}
		total -= s.size
		n++
	}
	victims := append([]*segment(nil), p.segments[:n]...)
	p.segments = append([]*segment(nil), p.segments[n:]...)
	if n > 0 && p.segments[0].base > p.logStart {
		p.logStart = p.segments[0].base
	}
	logStart := p.logStart // p.segments may change once mu is released
	p.mu.Unlock()
	if n == 0 {
		return 0, rollErr
	}
	var firstErr error
	for _, s := range victims {
		if err := p.removeFiles(s.remove); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("delete segment %s: %w", s.path(".log"), err)
		}
		s.release()
	}
	if err := syncDir(p.dir); err != nil && firstErr == nil {
		firstErr = err
	}
	p.logger().Info("retention deleted segments", "segments", n, "log_start_offset", logStart)
	p.l.metrics.SegmentsDeleted.Add(int64(n))
	return n, errors.Join(rollErr, firstErr)
}

// withoutRollErrors returns err (one error, or several joined) without the
// errors that are or wrap a *RollError, or nil when none is left.
func withoutRollErrors(err error) error {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var rest []error
	for _, e := range errs {
		if re := (*RollError)(nil); !errors.As(e, &re) {
			rest = append(rest, e)
		}
	}
	return errors.Join(rest...)
}

// rollExpiredActive rolls the active segment when every record in it is
// past retention.ms, so that the loop of enforceRetention deletes it: a
// topic nobody writes to any more would otherwise keep its last segment,
// and the records in it, for ever (segment.ms only rolls on an append).
// Kafka rolls and deletes an expired active segment the same way.
func (p *partition) rollExpiredActive(now time.Time, cfg TopicConfig) error {
	if cfg.RetentionMs < 0 {
		return nil
	}
	p.wmu.Lock() // a roll is a write: no append may be planning meanwhile
	defer p.wmu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.failed != nil || len(p.segments) == 0 {
		return nil
	}
	active := p.segments[len(p.segments)-1]
	if active.size == 0 || active.maxTs < 0 || now.UnixMilli()-active.maxTs <= cfg.RetentionMs {
		return nil
	}
	if err := p.tryRollLocked(now, rollExpired); err != nil {
		return fmt.Errorf("roll the expired active segment: %w", err)
	}
	return nil
}

// close stops the syncer after a last fsync, seals the active segment and
// writes the producer snapshot, so the next open has nothing to recover.
func (p *partition) close() error {
	p.wmu.Lock() // wait for a write in flight
	defer p.wmu.Unlock()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true // no new appends; the syncer's last round covers the rest
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.dataCh)
	p.dataCh = make(chan struct{})
	var err error
	if p.failed == nil {
		active := p.segments[len(p.segments)-1]
		if err = active.seal(); err == nil {
			err = p.producers.writeSnapshot(p.dir, p.next)
		}
	}
	p.closeSegments()
	if err != nil {
		return fmt.Errorf("close partition %s: %w", p, err)
	}
	return nil
}

// BatchReadResult is what one raw read of a partition returns.
type BatchReadResult struct {
	// Batches are stored record batches, byte for byte as on disk (Kafka
	// v2, base offset set). The first may start before the offset asked
	// for: it is the batch that holds it, as a Kafka broker serves it.
	// They may be shared with other readers (the tail cache): read-only.
	Batches        [][]byte
	NextOffset     int64 // where the next read should start
	HighWatermark  int64
	LogStartOffset int64

	bufs *readBuffers // what Batches were read into
}

// Release gives the buffers the batches were read into back to the log, for
// later reads: nothing may use Batches (or slices of them) afterwards. It is
// optional (buffers not released are garbage collected, as any others), and
// a second call, or one on a copy of the result, does nothing.
func (r *BatchReadResult) Release() {
	if r.bufs != nil {
		r.bufs.release()
	}
}

// readBuffers holds the buffers one ReadBatches call read the file into,
// from readPools, until its result is released.
type readBuffers struct {
	bufs     [][]byte
	released atomic.Bool
}

// Read buffers are pooled by size class (class c holds capacity 1<<c) from
// minPooledRead to maxPooledRead; others are allocated and left to the
// garbage collector. A buffer's content is undefined when it is taken: reads
// only ever hand out what the file read into it.
const (
	minPooledRead = 64 << 10
	maxPooledRead = 64 << 20
)

var readPools [bits.UintSize]sync.Pool

// get returns a buffer of n bytes and keeps it.
func (rb *readBuffers) get(n int) []byte {
	b := pooledRead(n)
	rb.bufs = append(rb.bufs, b)
	return b
}

func pooledRead(n int) []byte {
	if n < minPooledRead || n > maxPooledRead {
		return make([]byte, n)
	}
	c := bits.Len(uint(n - 1))
	if p, ok := readPools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<c)
}

// release gives the kept buffers back, once.
func (rb *readBuffers) release() {
	if rb.released.Swap(true) {
		return
	}
	for i, b := range rb.bufs {
		rb.bufs[i] = nil
		c := cap(b)
		if c < minPooledRead || c > maxPooledRead || c&(c-1) != 0 {
			continue
		}
		b = b[:0]
		readPools[bits.Len(uint(c-1))].Put(&b)
	}
}

// ReadBatches is Read without decoding: it returns stored batches, for the
// Kafka wire listener's Fetch. Waiting, bounds and corruption reporting are
// as for Read.
func (l *Log) ReadBatches(ctx context.Context, topicName string, partition int32, offset int64, opts ReadOptions) (BatchReadResult, error) {
	p, err := l.partition(topicName, partition)
	if err != nil {
		return BatchReadResult{}, err
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 1 << 20
	}
	var timer <-chan time.Time
	bufs := &readBuffers{}
	for {
		batches, v, err := p.readBatches(offset, opts.MaxBytes, bufs)
		res := BatchReadResult{NextOffset: offset, bufs: bufs}
		if v != nil {
			res.HighWatermark, res.LogStartOffset = v.end, v.start
		}
		if err != nil {
			res.Release()
			res.bufs = nil
			return res, l.deletedErr(topicName, p, err)
		}
		for _, b := range batches {
			res.Batches = append(res.Batches, b.bytes)
			res.NextOffset = b.meta.LastOffset + 1
		}
		if len(res.Batches) > 0 || opts.MaxWait <= 0 {
			if n := len(batches); n > 0 {
				p.l.metrics.RecordsRead.Add(int64(batches[n-1].meta.LastOffset + 1 - max(offset, batches[0].meta.BaseOffset)))
			}
			return res, nil
		}
		if timer == nil {
			t := time.NewTimer(opts.MaxWait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-v.waitData:
		case <-timer:
			return res, nil
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
}
