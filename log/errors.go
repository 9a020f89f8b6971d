package log

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Sentinel errors callers branch on.
var (
	ErrUnknownTopic     = errors.New("unknown topic")
	ErrTopicExists      = errors.New("topic already exists")
	ErrUnknownPartition = errors.New("unknown partition")
	ErrInvalidConfig    = errors.New("invalid topic config")
	ErrInvalidTopicName = errors.New("invalid topic name")
	// ErrInternalTopic: the topic holds the log's or the worker's own
	// state (IsInternalTopic): it cannot be deleted nor grow, and
	// __consumer_offsets is made only by the log itself.
	ErrInternalTopic        = errors.New("internal topic")
	ErrOffsetOutOfRange     = errors.New("offset out of range")
	ErrRecordTooLarge       = errors.New("record batch too large")
	ErrClosed               = errors.New("log closed")
	ErrProducerFenced       = errors.New("producer fenced: a newer epoch of this producer id exists")
	ErrOutOfOrderSequence   = errors.New("out of order sequence number")
	ErrUnknownProducerID    = errors.New("unknown producer id")
	ErrInvalidPartitions    = errors.New("invalid partition count")
	ErrDataDirLocked        = errors.New("data directory is locked by another process")
	ErrUnsupportedBatch     = errors.New("unsupported record batch")
	ErrCompactedTopicNilKey = errors.New("compacted topics need a key on every record")
	// ErrInvalidReset: a ResetSpec without a valid mode or scope.
	ErrInvalidReset = errors.New("invalid offset reset")
	// ErrPolicyViolation: the topic's cleanup.policy forbids the operation
	// (DeleteRecords on a topic whose policy lacks delete, as Kafka).
	ErrPolicyViolation = errors.New("policy violation")
)

// TopicNotOpenedError reports a topic of the data directory that Open left
// closed because it has more partitions than Options.MaxPartitions (it was
// created under a higher limit): it can be neither read nor written, only
// deleted and its configs described and altered (DescribeTopicConfig,
// AlterTopicConfig), until the log is opened with a limit of at least
// Partitions.
// It matches ErrUnknownTopic, so that callers that skip or report unknown
// topics go on working, with a message that says why; the Kafka listener
// tells it apart (a client sees a topic whose partitions have no leader).
type TopicNotOpenedError struct {
	Topic      string
	ID         string // the topic's id (see TopicDescription.ID)
	Partitions int    // the topic's partition count
	Limit      int    // Options.MaxPartitions of this Open
}

func (e *TopicNotOpenedError) Error() string {
	return fmt.Sprintf("topic %s exists but was not opened: it has %d partitions, more than the limit of %d per topic; "+
		"open the data directory with a limit of at least %d (TRIBUTARY_MAX_PARTITIONS=%d for the tributary command and `tributary run`), or delete the topic (tributary topics delete %s)",
		e.Topic, e.Partitions, e.Limit, e.Partitions, e.Partitions, e.Topic)
}

// Is makes a TopicNotOpenedError match ErrUnknownTopic.
func (e *TopicNotOpenedError) Is(target error) bool { return target == ErrUnknownTopic }

// CorruptionError reports a batch whose bytes do not check out: a bad CRC, a
// length that runs past the file, or a batch that does not decode. It names
// the file, the byte position and the offset where the damage was found.
// Corruption is never returned as data.
type CorruptionError struct {
	Path     string // segment file
	Position int64  // byte position in the file
	Offset   int64  // first offset expected at Position (-1 if unknown)
	Reason   string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("corrupt record batch in %s at byte %d (offset %d): %s", e.Path, e.Position, e.Offset, e.Reason)
}

// IsCorruption reports whether err is (or wraps) a CorruptionError.
func IsCorruption(err error) bool {
	var c *CorruptionError
	return errors.As(err, &c)
}

// RollError reports that a partition could not start a new segment, for an
// append or for retention. Nothing is lost and the partition stays
// writable: the active segment is intact (its data fsync'ed), whatever the
// roll had created of the new segment is removed again, and appends that fit
// the active segment go on meanwhile. An append whose roll is due only by
// the segment's age (segment.ms) gets no RollError: it goes into the
// active segment, and the roll is tried again after the backoff.
//
// After a failed roll the partition waits before it tries again: appends
// (and retention) that need a new segment before RetryAt fail at once with
// a RollError that has Deferred set and the last try's cause, without
// touching the disk. The wait starts at 100 ms and doubles with each
// failure in a row up to 10 s; a roll that succeeds resets it. So the
// partition recovers by itself, within 10 s of the cause being gone
// (descriptors or disk space freed), on the next append that needs a roll.
//
// A roll that fails where the state on disk is unknown (an fsync of the old
// segment's data or of the directory fails, or a new file cannot be removed
// again) returns a plain error instead and leaves the partition read-only
// until the log is reopened, as a failed write or fsync of data does.
type RollError struct {
	Partition string    // topic-partition, as "orders-3"
	Base      int64     // base offset of the segment it could not start
	Err       error     // the cause (of the last try, when Deferred)
	RetryAt   time.Time // no roll is tried before this (zero if unknown)
	// Deferred: no roll was tried, since the last try failed less than
	// the backoff ago.
	Deferred bool
}

func (e *RollError) Error() string {
	what := "roll to a new segment at offset %d: %v"
	if e.Deferred {
		what = "roll to a new segment at offset %d not tried again yet, the last try failed: %v"
	}
	retry := "the next append that needs a new segment"
	if !e.RetryAt.IsZero() {
		retry = "the first append that needs a new segment from " + e.RetryAt.UTC().Format("2006-01-02T15:04:05.000Z") + " on"
	}
	return fmt.Sprintf("partition %s: "+what+" (the partition keeps every record and retries the roll on %s%s)",
		e.Partition, e.Base, e.Err, retry, resourceHint(e.Err))
}

func (e *RollError) Unwrap() error { return e.Err }

// resourceHint says what to do about running out of descriptors or disk
// space, as "; hint", or "" for other errors.
func resourceHint(err error) string {
	switch {
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return "; every segment keeps 3 files open: raise the open files limit (`ulimit -n`, or LimitNOFILE= in a systemd unit), or use fewer partitions, a larger segment.bytes or a shorter retention"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "; the disk is full: free space, or lower retention.bytes or retention.ms"
	}
	return ""
}
