// Package engine is Tributary's worker: it runs the connectors of pipelines as
// tasks that move records between connectors and the log, and tracks their
// progress so that a restart, a crash or a replay loses nothing.
//
// A source task reads a batch from its connector, applies its transforms,
// appends the records to the log (durably), stores the source position of
// the batch in the offsets topic (_tributary.offsets), and only then tells
// the source that the position is durable. A sink task reads its topics as
// a consumer group (a new group starts at the earliest offset, as Kafka
// Connect's sinks do), applies its transforms, writes to its connector, and
// commits the group offsets only after the write is confirmed. Delivery is
// at least once.
//
// The stages of a task overlap: a source task reads the next batch while
// the previous ones are appended and fsync'ed, and reads that wait for the
// appender go out as one append; positions and group offsets are stored at
// most every 200 ms, merging what became durable or written meanwhile.
//
// Failing records are retried with exponential backoff and jitter; with
// error tolerance "all" a record that still fails goes to the dead-letter
// topic with headers naming its origin (Kafka Connect's __connect.errors.*).
// A failed task restarts with backoff; its error trace shows in its status.
// The engine reaches the log only through Backend, so the built-in log and a
// Kafka cluster are interchangeable.
package engine
