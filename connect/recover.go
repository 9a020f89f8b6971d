package connect

import "context"

// TailRecoverer is implemented by a source that must learn, when it opens,
// which records reached the log after its last stored position.
//
// The worker appends a batch, then stores its position, then acks. A crash
// between the append and the store leaves records durable in the log that
// the source never saw acknowledged. Most sources simply read them again
// (at least once). A source that answers its own clients only on Ack — the
// HTTP tracking source answers 200 then — will instead see its clients send
// them again, and can drop the resend only if it knows the first copy is
// already in the log.
//
// After a successful Open and before the first Read, the worker calls
// TailTopics once, then RecoverTail zero or more times with the records of
// those topics that were appended after the log offsets stored with the last
// position, in log order within each partition. The records may include
// records that other writers appended to the same topics; they carry Topic,
// Partition and Offset as on the sink side. On the first start (no stored
// position) RecoverTail is not called. The built-in worker supports this
// interface, for plugin sources too when the plugin and the worker speak
// plugin protocol version 2 or later (the records cross with their Topic,
// Partition and Offset); under an older worker a plugin source is never
// handed its tail.
type TailRecoverer interface {
	// TailTopics names the topics the source writes to whose unacknowledged
	// tail it wants to see. An empty name stands for the topic the pipeline
	// configures for the source, as a record without a Topic goes there.
	TailTopics() []string

	// RecoverTail hands the source records found after the stored offsets.
	RecoverTail(ctx context.Context, records []Record) error
}
