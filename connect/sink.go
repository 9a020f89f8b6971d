package connect

import "context"

// Sink delivers records from the log to the outside (a table, a webhook, a
// file). The worker runs each sink task on its own instance, made by
// Connector.NewSink, reading its topics as a consumer group.
//
// # Calls
//
// The worker calls Open once. If Open fails, the instance is dropped without
// Close, so Open releases whatever it acquired before returning an error.
// After a successful Open, one goroutine calls Write (and Flush, for a
// Flusher) sequentially: never two calls at once. Close is called once,
// after the last Write or Flush has returned; Close must release everything
// even when its context is already done.
//
// # The ack contract
//
// Write receives records in log order within each partition (partitions
// may interleave). It returns nil only when every record of the batch is
// durably delivered; the worker then commits the group offsets past them,
// so each record is acknowledged exactly once, by the Write (or Flush) that
// delivered it. If Write returns an error, none of the batch counts as
// delivered unless the error says otherwise (BadRecordAt). After a crash,
// records after the last committed offset are written again: delivery is at
// least once, and a sink that wants exactly once dedupes by topic,
// partition and offset (which Record carries).
//
// # Errors
//
// A Retryable error makes the worker back off and call Write again with the
// same records. A bad record (BadRecord, BadRecordAt) is not retried: the
// worker sends it to the dead-letter topic or fails the task, as the
// pipeline's error tolerance says. A sink that retries a record itself
// (an HTTP delivery up to max.attempts) wraps the error it gives up with
// in WithAttempts, so that the dead letter's __connect.errors.attempts
// header counts those tries too. An Open or Write error marked Permanent
// (a setup error the user must fix) leaves the task FAILED, with the error
// as its trace, until the user restarts or resumes the connector; a bad
// record still wins over it. Any other error fails the task, which the
// worker restarts from the last committed offsets with backoff. On
// context cancellation, return ctx.Err().
//
// # Stopping
//
// Write's context ends only when the worker gives up on the task (the end
// of a shutdown's drain), so that a Write in flight finishes its batch. A
// sink that waits and retries on its own does so under Stopping(ctx),
// which also ends when the worker asks the task to stop, and then returns
// an error wrapping ErrStopping: the worker commits nothing of the batch
// (it is written again when the task runs again) and ends the task without
// counting a failure.
type Sink interface {
	// Open connects to the outside.
	Open(ctx context.Context, cfg Config) error

	// Write delivers a batch of records and returns when they are
	// durable. It must not keep the records' slices after returning.
	Write(ctx context.Context, records []Record) error

	// Close releases every resource. For a Flusher, records not covered
	// by a successful Flush (the task failed before one) are not committed
	// and will be written again after the restart.
	Close(ctx context.Context) error
}

// Flusher is implemented by a sink that buffers: its Write may return before
// the records are durable (it must still validate them, and report bad
// records), and they become durable when Flush returns nil. The worker
// commits offsets only after a successful Flush, and calls Flush on its
// commit interval, before pausing or stopping, and before Close.
type Flusher interface {
	Flush(ctx context.Context) error
}
