package connect

import (
	"bytes"
	"time"
)

// Record is one message moving between a connector and the log: what a
// Source returns from Read and what a Sink receives in Write. It is plain
// data (no channels, no funcs) so that it can cross a process boundary.
//
// The worker owns a Record once it has been handed over: a Source must not
// reuse the slices of records it returned, and a Sink must not keep the
// slices of records it was given after Write returns (copy with Clone).
type Record struct {
	// Key is the record key; nil is a null key. Keyed records land on
	// partition (murmur2(key) & 0x7fffffff) % partitions, as with any Kafka
	// client.
	Key []byte
	// Value is the record value; nil is a tombstone (a deletion marker for
	// compacted topics), while an empty non-nil slice is an empty value.
	Value []byte
	// Headers are the record headers, in order; keys may repeat.
	Headers []Header
	// Timestamp is the record's time. A source may leave it zero, and the
	// log then uses the append time.
	Timestamp time.Time

	// Topic is the topic the record is read from (sink side) or written to
	// (source side). A source may leave it empty to use the topic
	// configured for it in the pipeline.
	Topic string
	// Partition is the partition the record was read from (sink side);
	// sources leave it zero and the log partitions by key.
	Partition int32
	// Offset is the record's offset in its partition (sink side).
	Offset int64

	// OriginalTopic, OriginalPartition and OriginalOffset are where the
	// record was read from the log (sink side), as Kafka Connect's
	// SinkRecord.originalTopic and its siblings (KIP-793): the worker sets
	// them on every record it hands to a sink, before or after the sink's
	// transforms, which may change Topic, Partition and Offset (a route
	// merging two topics into one name gives records of both the same
	// coordinates) but not these. A sink that keeps its own offsets (for
	// exactly once) keys them on Original, never on Topic. An empty
	// OriginalTopic says they are unset (a record not from the worker, or
	// from an older host across the plugin boundary): Original then
	// returns Topic, Partition and Offset.
	OriginalTopic     string
	OriginalPartition int32
	OriginalOffset    int64

	// Position is the source position of the record (source side): opaque
	// bytes meaningful to the source only (for example a JSON-encoded LSN)
	// that the worker stores durably and gives back to Open after a restart,
	// and to Ack once the record is durable. A nil Position marks a record
	// that is not a resume point, for example a row in the middle of a
	// transaction; the worker then resumes from the last record before it
	// that has one.
	Position Position
}

// Header is one record header.
type Header struct {
	Key   string // the header name; names may repeat within a record
	Value []byte // the header value; nil and empty are distinct
}

// Position is a source position: opaque to everyone but the source that
// produced it. Positions of one source must be comparable by the source
// alone; the worker only stores them and hands them back.
type Position []byte

// String returns the position as text, as positions are usually JSON.
func (p Position) String() string { return string(p) }

// Original returns where the record was read from the log (sink side):
// OriginalTopic, OriginalPartition and OriginalOffset when they are set,
// else Topic, Partition and Offset. It identifies the record in the log
// whatever the sink's transforms did to it.
func (r Record) Original() (topic string, partition int32, offset int64) {
	if r.OriginalTopic == "" {
		return r.Topic, r.Partition, r.Offset
	}
	return r.OriginalTopic, r.OriginalPartition, r.OriginalOffset
}

// IsTombstone reports whether r is a tombstone: a record with a nil value.
func (r Record) IsTombstone() bool { return r.Value == nil }

// Header returns the value of the last header called key, as Kafka's
// lastHeader does, and whether there is one.
func (r Record) Header(key string) ([]byte, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return r.Headers[i].Value, true
		}
	}
	return nil, false
}

// Clone returns a deep copy of r, keeping nil slices nil.
func (r Record) Clone() Record {
	c := r
	c.Key = cloneBytes(r.Key)
	c.Value = cloneBytes(r.Value)
	c.Position = Position(cloneBytes(r.Position))
	if r.Headers != nil {
		c.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i] = Header{Key: h.Key, Value: cloneBytes(h.Value)}
		}
	}
	return c
}

// Equal reports whether two records hold the same data. Timestamps are
// compared as instants.
func (r Record) Equal(o Record) bool {
	if !bytesEqualNil(r.Key, o.Key) || !bytesEqualNil(r.Value, o.Value) ||
		!bytesEqualNil(r.Position, o.Position) || !r.Timestamp.Equal(o.Timestamp) ||
		r.Topic != o.Topic || r.Partition != o.Partition || r.Offset != o.Offset ||
		r.OriginalTopic != o.OriginalTopic || r.OriginalPartition != o.OriginalPartition ||
		r.OriginalOffset != o.OriginalOffset || len(r.Headers) != len(o.Headers) {
		return false
	}
	for i := range r.Headers {
		if r.Headers[i].Key != o.Headers[i].Key || !bytesEqualNil(r.Headers[i].Value, o.Headers[i].Value) {
			return false
		}
	}
	return true
}

// Tombstone returns the tombstone that follows r on a compacted topic: the
// same topic and key, a nil value. It copies r's Position; clear r.Position
// when you emit both, so that only the later record, the tombstone, is a
// resume point.
func Tombstone(r Record) Record {
	return Record{Topic: r.Topic, Key: cloneBytes(r.Key), Timestamp: r.Timestamp, Position: Position(cloneBytes(r.Position))}
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

// bytesEqualNil is bytes.Equal that tells nil from empty.
func bytesEqualNil(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}
