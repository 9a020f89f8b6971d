package connect

import "context"

// Source captures records from outside (a database's change stream, an HTTP
// endpoint, a generator) for the worker to append to the log. The worker
// runs each source task on its own instance, made by Connector.NewSource.
//
// # Calls
//
// The worker calls Open once. If Open fails, the instance is dropped without
// Close, so Open releases whatever it acquired before returning an error.
// After a successful Open, one goroutine calls Read in a loop; another may
// call Ack at any time, concurrently with Read (but never concurrently with
// itself). Close is called once, after Read and Ack have returned and will
// not be called again; Close must release everything even when its context
// is already done. A Source never needs to start goroutines the worker does
// not know about: any it starts are stopped by Close.
//
// # Positions and the ack contract
//
// Every record carries the source's Position of the record (or nil when the
// record is not a place to resume, e.g. a row in the middle of a
// transaction). The worker appends a batch to the log, stores the position
// of its last positioned record in the offsets topic, and only then calls
// Ack with that position. Ack(pos) means: every record up to and including
// the one with pos is durably in the log, and pos itself is stored. Now, and
// not before, the source may acknowledge upstream (Postgres standby status
// LSN, MySQL binlog position, an HTTP 200). Acks are cumulative and in
// order: each covers the records after the previous one, so every record is
// acknowledged exactly once; the worker may skip positions and ack only the
// latest. Records that were never acknowledged are read again after a
// restart: Open receives the last stored position in Config.Position (nil on
// the first start) and the source resumes after it. Delivery is at least
// once; a source must tolerate re-reading after a crash.
//
// # Errors
//
// A Read or Ack error marked Retryable makes the worker back off and call it
// again. An Open, Read or Ack error marked Permanent (a setup error the
// user must fix: logical replication is off, a grant is missing) leaves the
// task FAILED, with the error as its trace, until the user restarts or
// resumes the connector. Any other error fails the task, which the worker
// restarts (Close, then a new instance, Open from the last stored
// position) with backoff. On context cancellation, return ctx.Err().
type Source interface {
	// Open connects to the outside and prepares to read from
	// cfg.Position, or from the beginning (as the source defines it) when
	// that is nil.
	Open(ctx context.Context, cfg Config) error

	// Read returns the next batch of records, in order. It blocks until at
	// least one record is available or ctx is done; it may return an empty
	// batch (nil, nil) when idle for a while, so that the worker can
	// heartbeat and react to pause or stop. The worker owns the returned
	// records.
	Read(ctx context.Context) ([]Record, error)

	// Ack tells the source that every record up to and including the one
	// with position pos is durable. It must not block for long.
	Ack(ctx context.Context, pos Position) error

	// Close stops reading and releases every resource.
	Close(ctx context.Context) error
}
