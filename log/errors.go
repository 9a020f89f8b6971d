package log

import (
	"errors"
	"fmt"
)

// Sentinel errors callers branch on.
var (
	ErrUnknownTopic     = errors.New("unknown topic")
	ErrTopicExists      = errors.New("topic already exists")
	ErrUnknownPartition = errors.New("unknown partition")
	ErrInvalidConfig    = errors.New("invalid topic config")
	ErrInvalidTopicName = errors.New("invalid topic name")
	// ErrInternalTopic: the topic holds the log's or the worker's own
	// state (IsInternalTopic) and cannot be deleted.
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
)

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
