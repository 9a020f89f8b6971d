// Package mysql is the MySQL and MariaDB change-data-capture source: it
// reads the binary log in ROW format as a replica would (with
// github.com/go-mysql-org/go-mysql's replication client) and emits row
// changes as Debezium change events (see connect.ChangeEvent and
// docs/connectors/mysql.md), after an optional snapshot consistent with a
// binlog position.
//
// # Setup
//
// Open checks what binlog capture needs and stops with an error that says
// what to change: log_bin on, binlog_format=ROW, binlog_row_image=FULL (or
// NOBLOB, whose left-out BLOB and TEXT values become placeholders:
// noblob.go), a
// user with REPLICATION SLAVE and REPLICATION CLIENT, and, for a stored
// position, binlog files (or GTIDs) the server has not purged. Without a
// stored position it waits, up to xa.start.wait, until no XA transaction
// prepared before its start position is undecided (xastart.go). What no
// retry cures (these checks, and a server that refuses the login: unknown
// database, access denied) is connect.Permanent, so the worker leaves the
// task FAILED instead of restarting it every few seconds; a server it
// cannot reach stays a plain error, retried with backoff.
//
// # Goroutines and connections
//
// After Open, one goroutine (the runner) owns a database/sql pool
// (go-sql-driver) and the binlog client: it takes the snapshot (on
// snapshot.workers connections of the pool), then streams the binlog, and
// hands batches to Read over a channel. While streaming:
//
//	go-mysql's reading goroutine ── events (SynchronousEventHandler) ──▶ streamer state (under streamer.mu)
//	runner ── idle ticks: heartbeats, incremental snapshot chunks, held records ──▶ streamer state
//	streamer ── batches ──▶ encoder goroutines (pipeline.go) ──▶ collector, in order ──▶ Read
//
// go-mysql's goroutine is stopped by BinlogSyncer.Close, the encoders and
// the collector by the end of the runner's errgroup, before the runner
// returns. When the binlog connection drops, the runner makes a new client
// and reconnects with backoff from the end of the last whole transaction
// (stream.go); errors no new connection can cure (a purged binlog, missing
// privileges) end it. Close cancels the runner, waits for it and closes
// the pool.
//
// # Incremental snapshots and TLS
//
// incremental.go re-reads tables on demand with watermark rows in the
// signal table (DBLog's method); tls.go applies tls.mode to the SQL pool
// and the binlog connection alike. mariatypes.go formats MariaDB's UUID,
// INET4 and INET6 values, which the binlog carries as bytes.
//
// # Positions and acknowledgements
//
// The position is JSON in Debezium's MySQL offset shape,
// {"file","pos","gtids","row","event","server_id","ts_sec"}: the binlog
// coordinates after the last transaction emitted and the GTID set executed
// up to it. Only transaction ends carry it, and of the transactions in one
// batch only the last; an incremental snapshot adds its progress. A restart
// resumes from the GTID set when the server has GTIDs (MariaDB always;
// MySQL with gtid_mode=ON), else from file/pos. While prepared XA
// transactions are held (xa.go), the position resumes at the oldest one's
// prepare and marks how far transactions were emitted. The binlog needs no
// acknowledgement upstream; Ack trims the schema history. Heartbeat
// records carry the latest position while captured tables are idle.
//
// # Schemas
//
// Row events carry values without column names. With
// binlog_row_metadata=FULL (MySQL 8.0.1+, MariaDB 10.5+) every table map
// event carries names, signedness, charsets, ENUM/SET labels and the
// primary key, so each event is decoded with the columns its table had
// when it was written. Without it, the connector keeps a schema history in
// state.dir (history.go), fed by the DDL it meets in the binlog.
package mysql
