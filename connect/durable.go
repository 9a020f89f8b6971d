package connect

import "context"

// DurableNotifier is implemented by a source that wants to know as soon as
// records are durably in the log, before their position is stored.
//
// The worker appends a batch, waits until it is durable (fsync'ed, or
// acknowledged by the brokers), stores the position of its last positioned
// record in the offsets topic (another durable write) and only then calls
// Ack. For a source that implements this interface it also calls
// Durable(pos) between the two: right after the records up to and
// including the one with pos are durable, before pos is stored. A source
// that answers its own clients can so answer them one durable write
// earlier.
//
// # Calls
//
// Durable is called by the goroutine that calls Ack, so never concurrently
// with Ack or with itself, and may run concurrently with Read. Its calls
// are cumulative and in order like Ack's: each position follows the
// previous one's, the worker may skip positions (one call covers every
// record up to pos), and a position is never announced after an Ack that
// covers it: Durable(pos) comes before the Ack of pos or of any later
// position. Not every position is named by both: Ack may cover positions
// Durable never named (see "Which workers call it"), and Durable may name
// positions that are never acked because the task failed or stopped
// before storing them. An error is handled like an Ack error: one marked
// Retryable is logged and covered by the next call; any other fails the
// task.
//
// # What a source may do on it
//
// Durable(pos) means the records are in the log; it does not mean pos is
// stored. After a crash between the two the source is opened again from
// the older stored position and reads those records again (at least once,
// as always). So on Durable a source may
//
//   - answer its clients (an HTTP 200), but only if it can drop their
//     resends after a crash: a client whose answer came on Durable does
//     not send again, but one whose answer was lost does, and the first
//     copy may be in the log. The HTTP tracking source drops the resend
//     because connect.TailRecoverer hands it, on the next start, the
//     records appended after the last stored position, and it remembers
//     their messageIds;
//   - update metrics, wake waiters, release buffers it keeps only to
//     rewrite records that might be lost.
//
// It must not acknowledge upstream anything that a restart needs to read
// again from the stored position: a replication slot's confirmed LSN, a
// binlog purge point, a consumer-group commit, a deleted input file. Those
// wait for Ack. It must not block for long: the position store waits for it.
//
// # Which workers call it
//
// The built-in worker does. For a source that also implements
// TailRecoverer, the worker calls Durable only when that recovery covers
// the records announced: once a position with the log offsets reached has
// been stored for the task (by an earlier run or by this one), and only on
// a log backend that can read the tail back. Until then such a source
// hears of its records on Ack only, so it must keep answering there too.
// Plugin sources get it too, with the same calls, order and errors, when
// the plugin and the worker speak plugin protocol version 2 or later; under
// an older worker a plugin source hears of its records on Ack only.
type DurableNotifier interface {
	// Durable tells the source that every record up to and including the
	// one with position pos is durably in the log; pos is not stored yet.
	Durable(ctx context.Context, pos Position) error
}
