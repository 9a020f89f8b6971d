// Package postgres is the Postgres change-data-capture source: it captures
// row changes with logical replication (the built-in pgoutput plugin) and
// emits them as Debezium change events (see connect.ChangeEvent and
// docs/connectors/postgres.md), after an optional snapshot consistent with
// the replication slot.
//
// # Setup
//
// Open checks what logical replication needs and stops with an error that
// says what to run when something is missing: wal_level=logical, a user
// with REPLICATION, tables with a primary key or a replica identity, a
// publication that covers the tables, a slot nobody else uses and that has
// not moved past the stored position, PostgreSQL 14 or later. A
// partitioned table is captured as one table: the publication publishes
// its partitions' changes as its own (publish_via_partition_root). The
// snapshots read what the publication publishes (its row filter and column
// list, PostgreSQL 15 and later: catalog.go), as the stream gets it; a
// column list without a key column fails. It creates the publication and the
// slot when they are missing, and adds the tables that match but are
// missing (created since the last start) to a publication its user owns
// (publication.autocreate.mode=filtered); while streaming, the runner
// warns about such tables every reportEvery. What no retry cures (these checks, except a
// slot still in use, and a server that refuses the login: no such
// database or role, wrong password) is connect.Permanent, so the worker
// leaves the task FAILED instead of restarting it every few seconds; a
// server it cannot reach stays a plain error, retried with backoff.
//
// # Goroutines and connections
//
// After Open, one goroutine (the runner) owns the two connections: an
// ordinary one for the catalogue, heartbeats, watermarks and incremental
// snapshot chunks, and the replication connection. It takes the snapshot
// (with snapshot.workers goroutines and connections, each in a transaction
// on the same exported snapshot, reading whole tables or key ranges of
// large ones; the errgroup is waited for before the snapshot returns),
// then streams from the slot, and hands batches to Read over a channel.
// Close cancels the runner, waits for it and closes the connections.
// Report (progress, gauges, warnings) reads a mutex-guarded reporter that
// the runner and the snapshot workers write.
//
// # Streaming
//
// On PostgreSQL 14 and later the runner asks for pgoutput protocol 2 with
// streaming on: large transactions arrive while in progress, in stream
// blocks; it buffers them per transaction (txbuffer.go, spilling to a
// temporary file past a memory budget), drops aborted subtransactions and
// replays a transaction as protocol 1 messages at its stream commit. The
// receive loop wakes on a read deadline rather than a context per message.
// When it wakes to silence, it checks the connection as PostgreSQL's
// walreceiver does (wal.receiver.timeout): it asks for a reply after half
// the timeout, and takes the connection for dead, a plain error that
// restarts the task, when nothing came by its end; the queries it makes on
// the catalogue connection are bounded by the same timeout.
//
// Incremental snapshots (incremental.go) read chunks on the catalogue
// connection between two watermark messages written into the WAL, and
// emit what no streamed change superseded (the DBLog watermark method);
// they can be paused and resumed (connect.SnapshotPauser), the pause kept
// in the position.
//
// # Positions and acknowledgements
//
// The position is JSON in Debezium's shape, {"lsn":…,"txId":…,"ts_usec":…},
// where lsn is the end of the last transaction emitted (or of the last
// heartbeat). Only the last record of a transaction carries it; records in
// the middle of a transaction have none. Ack stores the LSN, and the runner
// sends it to the server as the write, flush and apply positions of a
// standby status update (never zero), so the slot keeps every change that
// is not yet durable in the log. Updates go out when asked for, and at
// least four times per wal_sender_timeout (every 10s at most), also while
// the runner waits for Read or replays a streamed transaction; a stream
// that ends because PostgreSQL invalidated the slot is a permanent error. On restart, streaming resumes from the
// stored LSN; a slot that is gone, lost WAL, or confirmed beyond the stored
// LSN is an error, never a silent gap. A first start (no stored position)
// on a slot that exists and that this process did not create is a
// warning: the default slot name lacks the pipeline's name, so it may be
// another pipeline's slot. During a snapshot the position also
// holds its progress (tables done, the last key of each table's last
// emitted chunk), so that a restart resumes each table after it.
//
// Heartbeats (heartbeat.interval) write a logical decoding message into the
// WAL with pg_logical_emit_message; it comes back through the slot as a
// record on __debezium-heartbeat.<prefix> whose position lets the slot
// advance while the captured tables are idle but the database is not.
//
// # Values
//
// All values travel in PostgreSQL's text format, in the stream and in the
// snapshot alike, with the session settings pinned (DateStyle ISO,
// IntervalStyle iso_8601, TimeZone UTC, shortest exact floats), and one
// set of parsers maps them to Debezium's JSON forms (types.go). pgoutput's
// binary mode is not used (docs/connectors/postgres.md says why).
//
// # Encoding
//
// Without embedded schemas the connector writes snapshot rows' Debezium
// JSON itself, byte for byte as connect.DebeziumJSON would, straight from
// their text, with the source block encoded once per table (rowreader.go).
// Streamed events, values of other shapes and every event with schemas go
// through the codec; the stream's records share blocks of memory
// (connect.Blocks). pgoutput's row messages are parsed in place (tuple.go).
package postgres
