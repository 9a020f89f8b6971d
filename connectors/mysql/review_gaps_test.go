package mysql

import "testing"

// CONVENTIONS.md §7 decides that the CDC sources offer Debezium's streaming
// metrics (MilliSecondsBehindSource, TotalNumberOfEventsSeen,
// NumberOfCommittedTransactions; snapshot RowsScanned) under Prometheus names;
// the postgres source reports them as the gauges total_number_of_events_seen,
// number_of_committed_transactions, snapshot_rows_scanned and
// milliseconds_behind_source (connectors/postgres/report.go). The mysql
// source's Report has none of them, only binlog_rows_events_* and xa_*.
func TestReviewGaps_ReportHasDebeziumStreamingMetrics(t *testing.T) {
	g := (&Source{}).Report().Gauges
	for _, k := range []string{"total_number_of_events_seen", "number_of_committed_transactions", "snapshot_rows_scanned"} {
		if _, ok := g[k]; !ok {
			t.Errorf("Report().Gauges has no %q (Debezium's metric under its Prometheus name); it has %v", k, g)
		}
	}
}
