package engine

import (
	"context"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// Backend is the log as the engine sees it. The embedded backend wraps the
// built-in log; a kafka backend (franz-go) implements the same interface, so
// connectors and tasks never know which one runs underneath.
type Backend interface {
	// EnsureTopic creates a topic when it does not exist. An existing topic
	// is left as it is: the worker compares it with the declaration through
	// TopicDescriber, when the backend implements it.
	EnsureTopic(ctx context.Context, name string, partitions int, config map[string]string) error
	// Produce appends records durably. Each record's Topic must be set;
	// keyed records are partitioned by murmur2 of the key. It returns once
	// every record is durable, with Partition and Offset set.
	Produce(ctx context.Context, records []connect.Record) error
	// Append is Produce without the wait: when it returns, the records'
	// order in the log is fixed (successive Appends keep their order), and
	// wait returns once they are durable, with every record's Partition
	// and Offset set. A caller can so keep several batches in flight.
	Append(ctx context.Context, records []connect.Record) (wait func(context.Context) error, err error)
	// Consumer reads spec.Topics as consumer group spec.Group, from the
	// group's committed offsets, or from the earliest offset where it has
	// none.
	Consumer(ctx context.Context, spec ConsumerSpec) (Consumer, error)
	// ReadAll calls fn for every record of a topic, from its start to its
	// end at the time of the call, partition by partition.
	ReadAll(ctx context.Context, topic string, fn func(connect.Record) error) error
	// GroupOffsets returns a group's committed offsets (the next offset to
	// read per partition).
	GroupOffsets(ctx context.Context, group string) ([]PartitionOffset, error)
	// CommitGroupOffsets sets a group's committed offsets.
	CommitGroupOffsets(ctx context.Context, group string, offsets []PartitionOffset) error
	// DeleteGroup removes a group's committed offsets.
	DeleteGroup(ctx context.Context, group string) error
	// ListTopics returns every topic name.
	ListTopics(ctx context.Context) ([]string, error)
	// EndOffsets returns the start and end offset of every partition of a topic.
	EndOffsets(ctx context.Context, topic string) ([]PartitionBounds, error)
}

// TopicDescriber is an optional Backend capability: how an existing topic
// is set up, so that the worker can warn when a pipeline declares a topic
// differently from the one that exists (EnsureTopic leaves an existing
// topic as it is).
type TopicDescriber interface {
	// DescribeTopic returns a topic's partition count and its effective
	// configs.
	DescribeTopic(ctx context.Context, name string) (TopicInfo, error)
}

// TopicInfo is how an existing topic is set up.
type TopicInfo struct {
	Partitions int
	// Config holds the effective value of every config the backend knows
	// (the topic's own, else the default).
	Config map[string]string
}

// ConsumerSpec says what a Consumer reads and how it names itself.
type ConsumerSpec struct {
	Group  string
	Topics []string
	// TopicsRegex, when set, subscribes by pattern instead of Topics, as a
	// Kafka consumer's pattern subscription does: the consumer reads every
	// topic whose whole name matches this Go regular expression, except
	// internal topics (names starting with "_") and ExcludeTopics. It runs
	// with nothing assigned while no topic matches, and reads topics
	// created later from their start (or the group's committed offsets)
	// once it sees them: within a second on the embedded backend, on the
	// next metadata refresh (at most 5 s) on the kafka backend.
	TopicsRegex string
	// ExcludeTopics are topics a TopicsRegex consumer never reads, even
	// when they match (a sink's own dead-letter topic).
	ExcludeTopics []string
	// ClientID names the consumer to a Kafka cluster, as Kafka Connect
	// names a sink task's consumer: connector-consumer-<connector>-<task>.
	// A backend may leave it out (the embedded log's groups show the same
	// name from the connector's state).
	ClientID string
}

// PartitionOffset is an offset of one partition.
type PartitionOffset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// PartitionBounds are the offsets a partition holds: [Start, End).
type PartitionBounds struct {
	Partition  int32
	Start, End int64
}

// Consumer reads records of a group's topics. One goroutine calls Poll;
// Commit may be called from another, concurrently with Poll.
type Consumer interface {
	// Poll returns the next records, waiting up to maxWait when there are
	// none. Records of one partition come in offset order.
	Poll(ctx context.Context, maxWait time.Duration) ([]connect.Record, error)
	// Commit stores the next offsets to read for the group.
	Commit(ctx context.Context, offsets []PartitionOffset) error
	// Close stops the consumer's fetchers.
	Close() error
}

// SourceLeaser is an optional Backend capability: a lease that lets one
// worker at a time run a source's task among all the workers that load it.
// A backend that several workers share (kafka) implements it, so that a
// pipeline run by two workers for availability produces its records once;
// the embedded backend, owned by one worker, does not, and its sources
// simply run.
type SourceLeaser interface {
	// LeaseSource joins the lease of a source's task as the worker
	// workerID. The lease is not held yet: Acquire waits for it. Close the
	// lease when the task is done with it.
	LeaseSource(ctx context.Context, pipeline, connector, workerID string) (SourceLease, error)
	// LeaseMembers names the workers in a source's lease, the one holding
	// it first, without joining it: a worker that stopped the source asks
	// before changing the source's offsets, which needs every worker to
	// have stopped it (as Kafka alters a group's offsets only when the
	// group is empty).
	LeaseMembers(ctx context.Context, pipeline, connector string) ([]string, error)
}

// SourceLease is one worker's part in the lease of a source's task. The
// runner calls Acquire, the release function and Close from its task's
// goroutine; Holder and Name may be called concurrently with them.
type SourceLease interface {
	// Acquire waits until this worker holds the lease, or ctx ends. It
	// returns a channel that is closed when the lease is being taken away
	// (another worker is to hold it, or this one lost its membership),
	// and release, which the caller calls once the task has stopped and
	// stored its position: until then (or the backend's bound on the
	// wait) no other worker is given the lease. Call release once per
	// Acquire, revoked or not.
	Acquire(ctx context.Context) (revoked <-chan struct{}, release func(), err error)
	// Holder names the worker holding the lease, "" when none does (or
	// the backend cannot tell).
	Holder(ctx context.Context) (string, error)
	// Name says what the lease is, for statuses and logs.
	Name() string
	// Close releases the lease if held (the task must have stopped) and
	// leaves it: another worker may then be given it.
	Close() error
}

// TargetSharer is an optional Backend capability: a backend that several
// workers share (kafka) lets them agree on the target state (RUNNING,
// PAUSED, STOPPED) of the connectors they all load, as Kafka Connect's
// distributed workers do through their config topic. The worker writes a
// target change made through it to the compacted topic TargetsTopic with
// Produce, reads the topic when it starts, and follows it with FollowTopic
// from one goroutine it owns, applying every change to its connectors; it
// shares restart requests through the same topic. The embedded backend,
// owned by one worker, does not implement it: target states stay in that
// worker's memory, and a restart acts on that worker.
type TargetSharer interface {
	// FollowTopic calls fn with the records of partition 0 of topic from
	// offset from on, in offset order, as they are appended, until ctx
	// ends (it then returns ctx's error) or fn returns an error (which it
	// returns). It is called from one goroutine; fn is never called
	// concurrently with itself.
	FollowTopic(ctx context.Context, topic string, from int64, fn func([]connect.Record) error) error
}
