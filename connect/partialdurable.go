package connect

import "context"

// PartialDurableNotifier is implemented by a DurableNotifier source that
// answers each of its clients on its own (an HTTP request, say) and wants
// to hear of a client's records as soon as they are durable, even while
// records read before them are not.
//
// A batch the worker appends may spread over several partitions (keyed
// records), each made durable by its own fsync; Durable(pos) says every
// record up to pos is durable, so it waits for the slowest of them. A
// PartialDurableNotifier also hears DurablePart as each partition (but the
// last) becomes durable, naming the units whose records are all durable by
// then. A unit is the records of one Read from the one after the previous
// positioned record (or the first record of that Read) up to and including
// a positioned record; the source names it by that record's position.
// Records after a Read's last positioned record belong to no unit.
//
// # Calls
//
// DurablePart is never called concurrently with Durable, Ack or itself. Its
// positions are in read order within one call, but they are not
// cumulative: a unit may be named while an earlier one is not durable yet.
// Every unit named is still covered by a later Durable of a position at or
// after it (unless the task fails or stops first), so a source may treat
// DurablePart as an early, partial Durable and keep its cumulative
// bookkeeping on Durable. A unit may never be named (a batch in one
// partition, a backend that cannot wait per partition): Durable covers it.
// An error is handled like a Durable error.
//
// What a source may do on it is what it may do on Durable for those
// records (see DurableNotifier), and the same rule decides whether it is
// called at all: only while the worker calls Durable.
//
// The built-in worker calls it for a LazyAcker without transforms on a log
// backend that can wait per partition (the embedded log). Plugin sources do
// not hear it.
type PartialDurableNotifier interface {
	DurableNotifier
	// DurablePart tells the source that the records of each unit named by
	// positions are durably in the log; the positions are not stored.
	DurablePart(ctx context.Context, positions []Position) error
}
