package log

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
)

// Idempotent producers. Each partition remembers, per producer id, the epoch
// and the last few batches (first/last sequence and offsets) it appended, as
// Kafka does, so a retried batch is recognised and not appended twice. A
// producer with no state here starts at whatever sequence it sends (see
// check).
//
// The state is rebuilt on open from a snapshot file written when a segment is
// rolled and when the partition closes, plus a scan of the batches after the
// snapshot's offset (the tail). Losing a snapshot costs only a longer scan.
//
// A producer's state is dropped once it has appended nothing to the
// partition for Options.ProducerIDExpiration (Kafka's
// producer.id.expiration.ms), by a check every
// ProducerIDExpirationCheckInterval and on open, so that a log serving many
// short-lived producers (each client instance takes a new id) does not keep
// them all for ever; its next batch is then taken as that of a producer
// without state. As in Kafka since 2.4 (KIP-360), retention or compaction
// removing a producer's batches does not drop its state. Kafka measures the
// idle time from the producer's last batch's timestamp; this log measures it
// by its own clock (the time of the last append, kept in the snapshot; the
// time of the open for batches found in the tail), so neither a producer's
// clock nor message.timestamp.type changes how long its state is kept.
// Kafka never expires a producer with a transaction open; this log has no
// transactions.

const producerBatchesKept = 5 // Kafka's max.in.flight for idempotence

type producerBatch struct {
	FirstSeq   int32 `json:"first_seq"`
	LastSeq    int32 `json:"last_seq"`
	BaseOffset int64 `json:"base_offset"`
	LastOffset int64 `json:"last_offset"`
}

type producerEntry struct {
	Epoch   int16           `json:"epoch"`
	Batches []producerBatch `json:"batches"`
	// LastAppend is when the partition last appended a batch of the
	// producer, by the log's clock, in Unix ms. Snapshots written before
	// expiration existed lack it (0): the open counts it as now.
	LastAppend int64 `json:"last_append_ms,omitempty"`
}

type producerState struct {
	m map[int64]*producerEntry
}

func newProducerState() *producerState { return &producerState{m: map[int64]*producerEntry{}} }

// check decides what to do with a batch from producer p holding n records:
// dup is true (with the original base offset) for a retry of a batch already
// appended; an error refuses the batch.
//
// The rules are Kafka's (2.5+, KIP-360; ProducerAppendInfo.checkSequence):
// a producer the partition has no state for is accepted at any epoch and
// sequence (its batches may have been removed by retention or compaction
// and the state lost with them) and tracked from there; an older epoch is
// fenced; a newer epoch must start at sequence 0; within an epoch, a batch
// equal to one of the last few is a duplicate, any other must follow the
// last one (or start at 0 if none is kept).
func (s *producerState) check(p ProducerInfo, n int32) (dupBase int64, dup bool, err error) {
	if p.ID < 0 {
		return 0, false, nil
	}
	e, ok := s.m[p.ID]
	if !ok {
		return 0, false, nil
	}
	switch {
	case p.Epoch < e.Epoch:
		return 0, false, fmt.Errorf("%w (producer %d epoch %d < %d)", ErrProducerFenced, p.ID, p.Epoch, e.Epoch)
	case p.Epoch > e.Epoch:
		if p.Sequence != 0 {
			return 0, false, fmt.Errorf("%w: producer %d bumped its epoch to %d but starts at sequence %d, not 0", ErrOutOfOrderSequence, p.ID, p.Epoch, p.Sequence)
		}
		return 0, false, nil
	}
	last := seqAdd(p.Sequence, n-1)
	for _, b := range e.Batches {
		if b.FirstSeq == p.Sequence && b.LastSeq == last {
			return b.BaseOffset, true, nil
		}
	}
	want := int32(0)
	if len(e.Batches) > 0 {
		want = seqAdd(e.Batches[len(e.Batches)-1].LastSeq, 1)
	}
	if p.Sequence != want {
		return 0, false, fmt.Errorf("%w: producer %d sent sequence %d, expected %d", ErrOutOfOrderSequence, p.ID, p.Sequence, want)
	}
	return 0, false, nil
}

// update records a batch appended at time now.
func (s *producerState) update(m batchMeta, now time.Time) {
	p := m.Producer
	if p.ID < 0 || p.Sequence < 0 {
		return
	}
	e, ok := s.m[p.ID]
	if !ok || p.Epoch != e.Epoch {
		e = &producerEntry{Epoch: p.Epoch}
		s.m[p.ID] = e
	}
	e.Batches = append(e.Batches, producerBatch{
		FirstSeq: p.Sequence, LastSeq: seqAdd(p.Sequence, int32(m.LastOffset-m.BaseOffset)),
		BaseOffset: m.BaseOffset, LastOffset: m.LastOffset,
	})
	if len(e.Batches) > producerBatchesKept {
		e.Batches = append(e.Batches[:0], e.Batches[len(e.Batches)-producerBatchesKept:]...)
	}
	e.LastAppend = now.UnixMilli()
}

// expire drops the producers that appended nothing for at least after
// before now (Kafka's ProducerStateManager.removeExpiredProducers), and
// returns how many. A clock set back expires nothing early.
func (s *producerState) expire(now time.Time, after time.Duration) int {
	n := 0
	for id, e := range s.m {
		if now.UnixMilli()-e.LastAppend >= after.Milliseconds() {
			delete(s.m, id)
			n++
		}
	}
	return n
}

// expireProducers drops the state of the idempotent producers that
// appended nothing since ProducerIDExpiration before now, and returns how
// many. The next snapshot (at a roll or the close) is written without them.
func (p *partition) expireProducers(now time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0
	}
	return p.producers.expire(now, p.l.opts.ProducerIDExpiration)
}

// seqAdd adds to a sequence number, wrapping at MaxInt32 as Kafka does.
func seqAdd(seq, n int32) int32 {
	if int64(seq)+int64(n) > math.MaxInt32 {
		return int32(int64(seq) + int64(n) - math.MaxInt32 - 1)
	}
	return seq + n
}

type producerSnapshot struct {
	Offset    int64                    `json:"offset"` // state covers every batch below this offset
	Producers map[int64]*producerEntry `json:"producers"`
}

const producerSnapshotFile = "producer.snapshot"

// writeSnapshot stores the state as of offset, atomically.
func (s *producerState) writeSnapshot(dir string, offset int64) error {
	data, err := json.Marshal(producerSnapshot{Offset: offset, Producers: s.m})
	if err != nil {
		return fmt.Errorf("encode producer snapshot: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, producerSnapshotFile), data)
}

// readProducerSnapshot loads a snapshot; a missing or unreadable one yields
// an empty state from offset 0 (a full scan rebuilds it). An entry without
// the time of its last append gets now.
func readProducerSnapshot(dir string, now time.Time) (*producerState, int64) {
	data, err := os.ReadFile(filepath.Join(dir, producerSnapshotFile))
	if err != nil {
		return newProducerState(), 0
	}
	var snap producerSnapshot
	if err := json.Unmarshal(data, &snap); err != nil || snap.Producers == nil || snap.Offset < 0 {
		return newProducerState(), 0
	}
	for _, e := range snap.Producers {
		if e == nil {
			return newProducerState(), 0 // damaged: rebuild it all
		}
		if e.LastAppend == 0 {
			e.LastAppend = now.UnixMilli()
		}
	}
	return &producerState{m: snap.Producers}, snap.Offset
}

// writeFileAtomic publishes a file: write tmp, fsync, rename, fsync the dir.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return syncDir(filepath.Dir(path))
}
