// Package iceberg is a sink that writes records into Apache Iceberg tables
// with github.com/apache/iceberg-go, as Parquet data files, so that any
// engine that reads Iceberg (Spark, Trino, DuckDB, Snowflake) sees them.
//
// # Catalogs and storage
//
// The catalog is iceberg-go's SQL catalog on SQLite (the default) or
// Postgres, or an Iceberg REST catalog (catalog/rest, with OAuth2 client
// credentials or a bearer token). Table files go to a local directory or
// to S3-compatible storage (io/gocloud/s3 only, so the Google Cloud and
// Azure SDKs stay out of the binary). The REST catalog test server lives
// in internal/restfixture.
//
// # Tables
//
// Each record goes to the table its name template names (default
// {namespace}.{table}: a change event's source schema or database and
// table, else the last two parts of the topic). A table is created on its
// first commit, with the columns of the buffered rows: from the change
// event's embedded Kafka Connect schema when there is one, else inferred
// from the JSON values (integers long, fractions double, nested objects and
// arrays JSON text), with the types the schema setting pins taking
// precedence. New fields add optional columns; int→long, float→double and
// wider decimal precision are applied as Iceberg allows; any other type
// change is a bad record (dead-lettered or failing the task, per the
// pipeline's error tolerance).
//
// # Modes
//
// append writes every record as a row, with the metadata columns _topic,
// _partition, _offset, _timestamp and, for change events, _op. upsert keeps
// one row per key: the key columns become the table's identifier fields,
// and each commit writes, for every key it touches, an equality delete
// (removing the key's rows of earlier snapshots) and the key's last row
// unless it was deleted (merge-on-read). Repeated keys within one commit
// are folded in memory, since Iceberg's equality deletes do not apply to
// rows of their own snapshot. A truncate event drops the buffered rows and
// makes the commit delete every data file of the table (in a snapshot
// committed with the one that adds the later rows). A value that is the
// placeholder for an unchanged TOASTed value (unavailable.value.placeholder,
// in any of the forms Debezium gives it), or of a column the record's
// connect.UnavailableColumnsHeader names, keeps the key's previous value: from the buffer, else read from the table
// by a scan filtered on the key (unchanged.go); without one the record is
// bad. Values Iceberg cannot hold (timestamp infinities, numeric NaN) are
// written as null in optional columns, with one warning per column.
//
// # Exactly once
//
// Write validates and buffers; a commit (Flush, or commit.records,
// commit.bytes or commit.interval reached in Write) writes the data files and commits one
// snapshot per table whose summary holds, under
// "tributary.offsets.<pipeline>.<sink>", the highest log offset per topic
// and partition that the table holds, as JSON {"topic":{"0":41}}: the
// topic, partition and offset each record was read at
// (connect.Record.Original), before the sink's transforms, which may give
// records of several topics one topic and the same offsets. When the
// sink first touches a table it reads these offsets from the current
// snapshot and its ancestors and skips records at or below them, so the
// records a worker redelivers after a crash between the Iceberg commit and
// its own group-offset commit are not written twice. A crash before the
// Iceberg commit leaves only unreferenced data files. Because each commit
// of a snapshot is atomic per table, this holds per table. Each commit
// reloads the table first (table.go, refresh): it is built on the table's
// current state, carries the offsets other tasks of the sink stored, and
// fails (the task restarts and skips them) when another task committed
// records of a partition this one buffered, as after a rebalance. The table's
// offsets win over the group's: a sink rewound below them skips those
// records, warning once per table and partition, unless
// offsets.from.table is false (then it writes them again, and the
// summaries keep the highest offsets the table holds).
//
// # Upkeep
//
// Right after a commit, in the task, the sink compacts the table every
// compact.interval (small data files rewritten into target.file.size
// ones, applying their deletes, and dead equality deletes dropped, in a
// snapshot that keeps the offsets) and expires its snapshots every
// expire.interval (older than expire.older.than, keeping the newest
// expire.retain.last; the newest, which holds the offsets, always stays).
// Upkeep failures are warnings, not task failures. Compact, Expire and
// RemoveOrphans do the same (and orphan-file removal) on demand, for a
// command line.
package iceberg
