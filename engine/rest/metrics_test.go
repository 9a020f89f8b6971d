package rest

import (
	"strings"
	"testing"
)

// TestREST_Metrics_ExpiredProducers: the log's count of idempotent
// producer states dropped after producer.id.expiration.ms is on /metrics,
// as a counter with its help text.
func TestREST_Metrics_ExpiredProducers(t *testing.T) {
	srv, _, _, l := newTestServerLog(t)
	l.Metrics().ExpiredProducers.Add(2)
	code, body := call(t, srv, "GET", "/metrics", "")
	for _, want := range []string{
		"# HELP tributary_log_expired_producers_total ",
		"# TYPE tributary_log_expired_producers_total counter",
		"\ntributary_log_expired_producers_total 2\n",
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics = %d, want %q in\n%s", code, want, body)
		}
	}
}

// TestREST_Metrics_LogCounters: every counter the log keeps is on
// /metrics (an operator alerts on corrupt batches found on open, on
// retention and compaction stalling, on fsync latency), each with its
// help text; fsync latency as a histogram of the log's buckets.
func TestREST_Metrics_LogCounters(t *testing.T) {
	srv, _, _, l := newTestServerLog(t)
	m := l.Metrics()
	m.RecordsRead.Add(11)
	m.Batches.Add(12)
	m.DuplicateBatches.Add(13)
	m.SegmentsRolled.Add(14)
	m.SegmentsDeleted.Add(15)
	m.SegmentsCleaned.Add(16)
	m.TruncatedBytes.Add(17)
	m.CorruptBatches.Add(18)
	code, body := call(t, srv, "GET", "/metrics", "")
	if code != 200 {
		t.Fatalf("metrics = %d", code)
	}
	for name, v := range map[string]string{
		"tributary_log_records_read_total":      "11",
		"tributary_log_batches_appended_total":  "12",
		"tributary_log_duplicate_batches_total": "13",
		"tributary_log_segments_rolled_total":   "14",
		"tributary_log_segments_deleted_total":  "15",
		"tributary_log_segments_cleaned_total":  "16",
		"tributary_log_truncated_bytes_total":   "17",
		"tributary_log_corrupt_batches_total":   "18",
	} {
		for _, want := range []string{"# HELP " + name + " ", "# TYPE " + name + " counter", "\n" + name + " " + v + "\n"} {
			if !strings.Contains(body, want) {
				t.Errorf("want %q in /metrics", want)
			}
		}
	}
	for _, want := range []string{
		"# TYPE tributary_log_fsync_duration_seconds histogram",
		`tributary_log_fsync_duration_seconds_bucket{le="0.0001"}`,
		`tributary_log_fsync_duration_seconds_bucket{le="+Inf"}`,
		"tributary_log_fsync_duration_seconds_count ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("want %q in /metrics", want)
		}
	}
}
