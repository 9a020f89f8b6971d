package log

import (
	"sync/atomic"
	"time"
)

// Metrics are the log's counters, updated as it works. The engine exposes
// them on /metrics; tests and benchmarks read them directly.
type Metrics struct {
	RecordsAppended  atomic.Int64
	BytesAppended    atomic.Int64
	Batches          atomic.Int64
	DuplicateBatches atomic.Int64 // retried idempotent batches not appended again
	ExpiredProducers atomic.Int64 // idempotent producer states dropped after producer.id.expiration.ms
	RecordsRead      atomic.Int64
	Fsyncs           atomic.Int64
	FsyncNanos       atomic.Int64 // total time spent in fsync
	SegmentsRolled   atomic.Int64
	RollFailures     atomic.Int64 // rolls tried that failed (see RollError); appends retry them after a backoff
	SegmentsDeleted  atomic.Int64 // by retention
	SegmentsCleaned  atomic.Int64 // rewritten by compaction
	TailTruncations  atomic.Int64 // torn tails cut on open
	TruncatedBytes   atomic.Int64
	CorruptBatches   atomic.Int64 // damaged batches found on open

	// FsyncBuckets counts fsyncs by latency, one bucket per bound in
	// FsyncBucketBounds and a last one for anything slower.
	FsyncBuckets [len(FsyncBucketBounds) + 1]atomic.Int64
}

// FsyncBucketBounds are the upper bounds of the fsync latency histogram.
var FsyncBucketBounds = [...]time.Duration{
	100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, time.Second,
}

func (m *Metrics) observeFsync(d time.Duration) {
	m.Fsyncs.Add(1)
	m.FsyncNanos.Add(int64(d))
	for i, b := range FsyncBucketBounds {
		if d <= b {
			m.FsyncBuckets[i].Add(1)
			return
		}
	}
	m.FsyncBuckets[len(FsyncBucketBounds)].Add(1)
}

// PartitionStats is a gauge reading of one partition.
type PartitionStats struct {
	Topic          string
	Partition      int32
	LogStartOffset int64
	LogEndOffset   int64 // the readable end (high watermark)
	Size           int64 // bytes on disk
	Segments       int
}

// PartitionStats reads the offsets and size of every partition.
func (l *Log) PartitionStats() []PartitionStats {
	var out []PartitionStats
	for _, t := range l.topicList() {
		for _, p := range t.partitionList() {
			p.mu.Lock()
			st := PartitionStats{Topic: p.topic, Partition: p.id, LogStartOffset: p.logStart, LogEndOffset: p.visible, Segments: len(p.segments)}
			for _, s := range p.segments {
				st.Size += s.size
			}
			p.mu.Unlock()
			out = append(out, st)
		}
	}
	return out
}
