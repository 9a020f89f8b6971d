package rest

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	tlog "github.com/tributary-io/tributary/log"
)

// logCounter is one of the log's counters as a Prometheus counter.
type logCounter struct {
	desc  *prometheus.Desc
	value func(*tlog.Metrics) float64
}

// logCounters are the log's counters, in the order /metrics lists them.
var logCounters = []struct {
	name, help string
	value      func(*tlog.Metrics) float64
}{
	{"tributary_log_records_appended_total", "Records appended to the log.", func(m *tlog.Metrics) float64 { return float64(m.RecordsAppended.Load()) }},
	{"tributary_log_bytes_appended_total", "Bytes of record batches appended.", func(m *tlog.Metrics) float64 { return float64(m.BytesAppended.Load()) }},
	{"tributary_log_batches_appended_total", "Record batches appended.", func(m *tlog.Metrics) float64 { return float64(m.Batches.Load()) }},
	{"tributary_log_duplicate_batches_total", "Retried idempotent-producer batches answered as duplicates and not appended again.", func(m *tlog.Metrics) float64 { return float64(m.DuplicateBatches.Load()) }},
	{"tributary_log_records_read_total", "Records read by fetches and consumers.", func(m *tlog.Metrics) float64 { return float64(m.RecordsRead.Load()) }},
	{"tributary_log_fsyncs_total", "fsync calls (each covers every append waiting for it).", func(m *tlog.Metrics) float64 { return float64(m.Fsyncs.Load()) }},
	{"tributary_log_fsync_seconds_total", "Time spent in fsync.", func(m *tlog.Metrics) float64 { return float64(m.FsyncNanos.Load()) / 1e9 }},
	{"tributary_log_segments_rolled_total", "New segments started (segment.bytes, segment.ms or an index full).", func(m *tlog.Metrics) float64 { return float64(m.SegmentsRolled.Load()) }},
	{"tributary_log_roll_failures_total", "Attempts to roll to a new segment that failed (out of file descriptors or disk space). A partition tries again after 100 ms, doubling to 10 s; appends that need a roll fail until one succeeds.", func(m *tlog.Metrics) float64 { return float64(m.RollFailures.Load()) }},
	{"tributary_log_segments_deleted_total", "Segments deleted by retention (retention.ms, retention.bytes).", func(m *tlog.Metrics) float64 { return float64(m.SegmentsDeleted.Load()) }},
	{"tributary_log_segments_cleaned_total", "Segments rewritten by compaction (cleanup.policy=compact).", func(m *tlog.Metrics) float64 { return float64(m.SegmentsCleaned.Load()) }},
	{"tributary_log_tail_truncations_total", "Torn segment tails truncated on open.", func(m *tlog.Metrics) float64 { return float64(m.TailTruncations.Load()) }},
	{"tributary_log_truncated_bytes_total", "Bytes cut off torn segment tails on open.", func(m *tlog.Metrics) float64 { return float64(m.TruncatedBytes.Load()) }},
	{"tributary_log_corrupt_batches_total", "Damaged record batches (bad CRC or framing) found in sealed segments on open; reads that reach one fail (see the log for the segment).", func(m *tlog.Metrics) float64 { return float64(m.CorruptBatches.Load()) }},
	{"tributary_log_expired_producers_total", "Idempotent producer states dropped after producer.id.expiration.ms without an append from the producer; a retry of such a producer's last batch would be appended again.", func(m *tlog.Metrics) float64 { return float64(m.ExpiredProducers.Load()) }},
}

// logCollector exposes the embedded log's counters, its fsync latency
// histogram, per-partition offsets and per-group lag (under the
// exporters' name kafka_consumergroup_lag).
type logCollector struct {
	log                   *tlog.Log
	counters              []logCounter
	fsyncLatency          *prometheus.Desc
	start, end, size, lag *prometheus.Desc
}

func newLogCollector(l *tlog.Log) *logCollector {
	tp := []string{"topic", "partition"}
	c := &logCollector{
		log:          l,
		fsyncLatency: prometheus.NewDesc("tributary_log_fsync_duration_seconds", "Latency of the log's fsyncs.", nil, nil),
		start:        prometheus.NewDesc("tributary_log_start_offset", "First offset of a partition.", tp, nil),
		end:          prometheus.NewDesc("tributary_log_end_offset", "Offset after the last durable record of a partition.", tp, nil),
		size:         prometheus.NewDesc("tributary_log_size_bytes", "Bytes on disk of a partition.", tp, nil),
		lag:          prometheus.NewDesc("kafka_consumergroup_lag", "Records a consumer group has not committed yet.", []string{"consumergroup", "topic", "partition"}, nil),
	}
	for _, lc := range logCounters {
		c.counters = append(c.counters, logCounter{desc: prometheus.NewDesc(lc.name, lc.help, nil, nil), value: lc.value})
	}
	return c
}

func (c *logCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, lc := range c.counters {
		ch <- lc.desc
	}
	for _, d := range []*prometheus.Desc{c.fsyncLatency, c.start, c.end, c.size, c.lag} {
		ch <- d
	}
}

func (c *logCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.log.Metrics()
	for _, lc := range c.counters {
		ch <- prometheus.MustNewConstMetric(lc.desc, prometheus.CounterValue, lc.value(m))
	}
	// The histogram's buckets are cumulative; the log counts each fsync
	// in its one bucket.
	buckets := make(map[float64]uint64, len(tlog.FsyncBucketBounds))
	var count uint64
	for i, b := range tlog.FsyncBucketBounds {
		count += uint64(m.FsyncBuckets[i].Load())
		buckets[b.Seconds()] = count
	}
	count += uint64(m.FsyncBuckets[len(tlog.FsyncBucketBounds)].Load())
	ch <- prometheus.MustNewConstHistogram(c.fsyncLatency, count, float64(m.FsyncNanos.Load())/1e9, buckets)
	for _, p := range c.log.PartitionStats() {
		part := strconv.Itoa(int(p.Partition))
		ch <- prometheus.MustNewConstMetric(c.start, prometheus.GaugeValue, float64(p.LogStartOffset), p.Topic, part)
		ch <- prometheus.MustNewConstMetric(c.end, prometheus.GaugeValue, float64(p.LogEndOffset), p.Topic, part)
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(p.Size), p.Topic, part)
	}
	for _, l := range c.log.Groups().Lag() {
		if l.Lag < 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(l.Lag), l.Group, l.Topic, strconv.Itoa(int(l.Partition)))
	}
}
