package rest

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	tlog "github.com/tributary-io/tributary/log"
)

// logCollector exposes the embedded log's counters, per-partition offsets
// and per-group lag (under the exporters' name kafka_consumergroup_lag).
type logCollector struct {
	log                                                        *tlog.Log
	appended, appendedBytes, fsyncs, fsyncSeconds, truncations *prometheus.Desc
	rollFailures, expiredProducers                             *prometheus.Desc
	start, end, size, lag                                      *prometheus.Desc
}

func newLogCollector(l *tlog.Log) *logCollector {
	tp := []string{"topic", "partition"}
	return &logCollector{
		log:              l,
		appended:         prometheus.NewDesc("tributary_log_records_appended_total", "Records appended to the log.", nil, nil),
		appendedBytes:    prometheus.NewDesc("tributary_log_bytes_appended_total", "Bytes of record batches appended.", nil, nil),
		fsyncs:           prometheus.NewDesc("tributary_log_fsyncs_total", "fsync calls (each covers every append waiting for it).", nil, nil),
		fsyncSeconds:     prometheus.NewDesc("tributary_log_fsync_seconds_total", "Time spent in fsync.", nil, nil),
		truncations:      prometheus.NewDesc("tributary_log_tail_truncations_total", "Torn segment tails truncated on open.", nil, nil),
		rollFailures:     prometheus.NewDesc("tributary_log_roll_failures_total", "Attempts to roll to a new segment that failed (out of file descriptors or disk space). A partition tries again after 100 ms, doubling to 10 s; appends that need a roll fail until one succeeds.", nil, nil),
		expiredProducers: prometheus.NewDesc("tributary_log_expired_producers_total", "Idempotent producer states dropped after producer.id.expiration.ms without an append from the producer; a retry of such a producer's last batch would be appended again.", nil, nil),
		start:            prometheus.NewDesc("tributary_log_start_offset", "First offset of a partition.", tp, nil),
		end:              prometheus.NewDesc("tributary_log_end_offset", "Offset after the last durable record of a partition.", tp, nil),
		size:             prometheus.NewDesc("tributary_log_size_bytes", "Bytes on disk of a partition.", tp, nil),
		lag:              prometheus.NewDesc("kafka_consumergroup_lag", "Records a consumer group has not committed yet.", []string{"consumergroup", "topic", "partition"}, nil),
	}
}

func (c *logCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.appended, c.appendedBytes, c.fsyncs, c.fsyncSeconds, c.truncations, c.rollFailures, c.expiredProducers, c.start, c.end, c.size, c.lag} {
		ch <- d
	}
}

func (c *logCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.log.Metrics()
	ch <- prometheus.MustNewConstMetric(c.appended, prometheus.CounterValue, float64(m.RecordsAppended.Load()))
	ch <- prometheus.MustNewConstMetric(c.appendedBytes, prometheus.CounterValue, float64(m.BytesAppended.Load()))
	ch <- prometheus.MustNewConstMetric(c.fsyncs, prometheus.CounterValue, float64(m.Fsyncs.Load()))
	ch <- prometheus.MustNewConstMetric(c.fsyncSeconds, prometheus.CounterValue, float64(m.FsyncNanos.Load())/1e9)
	ch <- prometheus.MustNewConstMetric(c.truncations, prometheus.CounterValue, float64(m.TailTruncations.Load()))
	ch <- prometheus.MustNewConstMetric(c.rollFailures, prometheus.CounterValue, float64(m.RollFailures.Load()))
	ch <- prometheus.MustNewConstMetric(c.expiredProducers, prometheus.CounterValue, float64(m.ExpiredProducers.Load()))
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
