// Package connect is Tributary's connector API: what a connector author
// imports, whether the connector is built in or runs as a plugin. It uses
// the standard library only, and its data types hold no channels or funcs,
// so they can cross a process (gRPC) boundary.
//
// # Records, sources and sinks
//
// A Record is one message: key, value, headers, timestamp; on the sink side
// also topic, partition and offset; on the source side an opaque source
// Position. A Source returns batches of records from Read; the worker
// appends them to the log, stores the position of the last one durably,
// and only then calls Ack, so that the source acknowledges upstream (a
// Postgres standby status LSN, an HTTP 200) only what is safe. A Sink is
// given batches in Write and returns only once they are delivered; the
// worker then commits the consumer group's offsets. Both guarantee
// at-least-once delivery; the interface docs spell out who calls what,
// when, and concurrently with what. Optional interfaces refine this for
// sources that answer their own clients: a TailRecoverer learns, when it
// opens, which records reached the log after its last stored position, and
// a DurableNotifier hears that records are durable before their position
// is stored.
//
// A Connector describes a connector (name, kind, version, description,
// Spec) and makes instances. A Registry holds connectors by kind and name;
// built-ins register into Default from init functions.
//
// # Configuration
//
// A Spec declares a connector's parameters (type, required, default, secret,
// enum, description). It drives validation (Spec.Validate, whose FieldErrors
// name the parameter), masking of secrets (Spec.Mask), Kafka Connect's REST
// validate endpoint and generated docs (Spec.Markdown). A connector is
// opened with a Config: the task's identity, its values and, for a source,
// the position to resume from; typed getters (Config.Int, Config.Duration,
// Config.Size, ...) parse values by the Spec.
//
// # Errors
//
// A connector classifies its errors with three markers: BadRecord (the
// record itself is at fault; the worker dead-letters it or fails the task,
// as the pipeline's error tolerance says), Retryable (a transient failure;
// the worker backs off and retries) and Permanent (a setup error only the
// user can fix, such as a missing grant: the task stays FAILED, with the
// error as its trace, until the user restarts or resumes the connector;
// it is never retried). Any other error fails the task, which the worker
// restarts with backoff. A connector that retries by itself says how many
// tries it made with WithAttempts; the worker counts them in the
// __connect.errors.attempts header of a dead-lettered record.
//
// # Change events
//
// ChangeEvent is the one Go model of a Debezium change event: the operation
// (Op), the before and after rows, the source block (SourceInfo), the
// processing timestamps, the transaction block and the key (the primary-key
// columns). A Row is an ordered list of fields, so column order survives;
// Schema is a Kafka Connect schema (types, logical names, optional,
// defaults) used when schemas are embedded. DebeziumJSON encodes an event
// into a record key and value exactly as Debezium with Kafka Connect's
// JsonConverter writes them, with or without embedded schemas, and decodes
// both forms back. For the hot path of a source, RecordIn and AppendRecord
// write many records into shared blocks of memory (Blocks) instead of two
// allocations per record; the source block is written straight from
// SourceInfo. Tributary deviates from Debezium's defaults in one place
// that connectors implement: decimals default to strings
// (decimal.handling.mode=string).
package connect
