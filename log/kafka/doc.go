// Package kafka serves the built-in log over the Kafka wire protocol, so
// that Kafka clients (franz-go, librdkafka and kcat, kafkajs, the Java
// clients) produce to it, consume from it and manage it unchanged.
//
// Listen starts a listener on a *log.Log; Close stops it. Every request and
// response is encoded and decoded with franz-go's kmsg. The listener is one
// broker (node id 0) that leads every partition with one replica.
//
// # What is served
//
//	ApiVersions            v0-4   the versions below (KIP-511 downgrade for newer asks)
//	Metadata               v0-12  one broker; auto-creates topics when the client allows;
//	                              a topic the log left closed has no leaders (not_opened.go)
//	Produce                v3-11  record batches appended as sent (Log.AppendRawAsync); acks 0/1/all;
//	                              idempotent producers (sequence checks in the log, KIP-360)
//	Fetch                  v4-12  long poll with MinBytes/MaxWait; no fetch sessions (id 0)
//	ListOffsets            v1-7   earliest (-2), latest (-1), max timestamp (-3), by timestamp
//	CreateTopics           v0-7   replication factor 1 (or -1); an assignment wants -1 for both
//	DeleteTopics           v0-6   by name or topic id
//	DeleteRecords          v0-2   moves the log start offset (Log.DeleteRecords); -1 = high watermark
//	CreatePartitions       v0-3
//	DescribeConfigs        v0-4   topic configs with their sources
//	AlterConfigs           v0-2   topic configs
//	IncrementalAlterConfigs v0-1  topic configs: SET, DELETE, APPEND, SUBTRACT
//	InitProducerId         v0-4   idempotent producers; transactional ids refused
//	FindCoordinator        v0-4   groups (transactions refused)
//	JoinGroup              v0-9   the classic group protocol, see groups.go
//	SyncGroup              v0-5
//	Heartbeat              v0-4
//	LeaveGroup             v0-5
//	OffsetCommit           v0-8   generation checked; stored by log.Groups
//	OffsetFetch            v0-8
//	DescribeGroups         v0-5
//	ListGroups             v0-4
//	DeleteGroups           v0-2
//	OffsetDelete           v0
//	SaslHandshake          v0-1   PLAIN (Options.SASLPlain), SCRAM-SHA-256/512 (Options.SASLScram)
//	SaslAuthenticate       v0-2
//
// A connection handles its requests one at a time, in order, and answers
// them in order, but does not wait for a Produce request's fsync before it
// reads the next request: the produce requests a client pipelines (franz-go
// and the Java clients keep up to 5 in flight) are appended back to back and
// share fsyncs, and their answers go out, in order, as they become durable.
// The partitions of one Produce request are appended in parallel. Fetch
// answers are written with writev: the stored record batches go to the
// socket from the log's read buffer, not copied into the encoded response
// (fetch_frame.go).
//
// SCRAM (sasl_scram.go) follows RFC 5802/7677 as Kafka does: the listener
// keeps salted credentials (NewScramCredential), never passwords, and an
// unknown user fails at the proof like a wrong password.
//
// Members of groups joined through the listener are published to the log
// (Groups.SetMembership) on every join, sync, leave and expiry: the log's
// own group commands (tributary groups describe, reset-offsets, delete) see
// them, and refuse to reset or delete a group, or to commit to it from
// outside, while it has members or is rebalancing (any state but Empty, as
// Kafka's coordinator refuses commits with generation -1).
//
// Any other request, or a version outside these, is answered with its own
// response kind carrying UNSUPPORTED_VERSION. A frame that does not decode
// closes the connection (as Kafka does); it never panics the process.
//
// # Limits on what a client may send
//
// Requests are untrusted input, bounded before they cost memory:
//
//   - a frame up to Options.MaxRequestBytes (socket.request.max.bytes,
//     100 MiB), allocated as its bytes arrive; before SASL authentication,
//     512 KiB (sasl.server.max.receive.size);
//   - requests other than Produce up to 8 MiB (decoding one allocates up
//     to ~32 times its size); a Produce request's topic and partition
//     entries are counted before they are decoded, at most 131072;
//   - a Fetch answer holds at most 55 MiB of records (fetch.max.bytes),
//     whatever the request asks for;
//   - a produced batch is checked as Kafka's LogValidator checks it, and
//     its records may decompress to 16 times max.message.bytes (at least
//     64 MiB); past that it is refused with MESSAGE_TOO_LARGE (see
//     Log.AppendRawAsync).
//
// # Differences from Apache Kafka
//
//   - One node: replication factor 1, leader epoch -1, no follower fetching.
//   - No transactions: transactional producers are refused with
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED and a message.
//   - acks=1 waits for the fsync like acks=all: the log acknowledges nothing
//     it could lose.
//   - Group membership lives in memory: after a restart, members join again
//     (as after a coordinator fail-over).
package kafka
