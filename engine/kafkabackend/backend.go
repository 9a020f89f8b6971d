// Package kafkabackend is the engine's `kafka` log backend: engine.Backend
// on an Apache Kafka (or Redpanda, or any Kafka-API) cluster, spoken to with
// franz-go (kgo for records, kadm for administration).
//
// Records are produced with acks=all by an idempotent producer, partitioned
// as the built-in log does (murmur2 of the key, sticky for records without
// one), so a pipeline lands its records on the same partitions with either
// backend. Sinks are real consumer-group members: several workers reading
// the same sink share its partitions through Kafka's own rebalancing, and
// each commits offsets explicitly, only after its sink confirmed the write.
// Sources run in one worker at a time: the backend is an
// engine.SourceLeaser whose leases are consumer groups (lease.go).
// Workers share the connectors' target states (pause, resume, stop): the
// backend is an engine.TargetSharer, following the engine's compacted topic
// of target states with a client outside any group (targets.go).
// Source offsets go, as with the embedded backend, to the compacted topic
// the engine keeps them in. A topic a source writes to is created on its
// first produce when missing, with the cluster's default partitions, as the
// built-in log creates it. The backend is also an engine.RangeReader (its
// own sessionless Fetch requests to a partition's leader), so sources that
// implement connect.TailRecoverer are handed their tail as on the embedded
// backend; ReadAll reads the same way.
//
// The tests run one pipeline suite on the embedded backend and on this one
// against two independent Kafka implementations: the built-in log's Kafka
// listener and franz-go's kfake.
package kafkabackend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL mechanisms.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// Options configure the backend.
type Options struct {
	// Brokers are the seed brokers, host:port; an entry may hold several,
	// comma-separated (as bootstrap.servers and kcat -b take them).
	Brokers []string
	// TLS, when set, connects with TLS.
	TLS *tls.Config
	// SASLMechanism is "", PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, with
	// SASLUser and SASLPassword.
	SASLMechanism, SASLUser, SASLPassword string
	// ClientID names the worker to the brokers. Default "tributary".
	// Source leases' group members use the engine's worker id instead, so
	// that a group description names the worker holding a lease.
	ClientID string
	// ReplicationFactor of the topics the backend creates; -1 (the default
	// when 0) leaves it to the cluster's default.replication.factor.
	ReplicationFactor int16
	// SessionTimeout and HeartbeatInterval of sink consumer groups and of
	// source leases (a worker that dies holds its sources' leases until
	// its session times out). Defaults: kgo's (45 s, 3 s).
	SessionTimeout, HeartbeatInterval time.Duration
	// Logger receives rebalance and commit events. Default slog.Default().
	Logger *slog.Logger
}

// Backend is engine.Backend on a Kafka cluster. Close it when done.
type Backend struct {
	opts   Options
	logger *slog.Logger
	base   []kgo.Opt
	client *kgo.Client // producer and admin requests
	adm    *kadm.Client
	// clusterID is the cluster's id, read when the backend connected.
	clusterID string

	known sync.Map // topic name → struct{}: topics Append made sure exist
}

var (
	_ engine.Backend        = (*Backend)(nil)
	_ engine.TopicDescriber = (*Backend)(nil)
)

// New connects to the cluster and checks it answers.
func New(ctx context.Context, opts Options) (*Backend, error) {
	opts.Brokers = splitBrokers(opts.Brokers)
	if len(opts.Brokers) == 0 {
		return nil, errors.New("kafka backend: no brokers given (set log.kafka.brokers)")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ClientID == "" {
		opts.ClientID = "tributary"
	}
	if opts.ReplicationFactor == 0 {
		opts.ReplicationFactor = -1
	}
	base := []kgo.Opt{kgo.SeedBrokers(opts.Brokers...), kgo.ClientID(opts.ClientID)}
	if opts.TLS != nil {
		base = append(base, kgo.DialTLSConfig(opts.TLS.Clone()))
	}
	if opts.SASLMechanism != "" {
		m, err := mechanism(opts)
		if err != nil {
			return nil, err
		}
		base = append(base, kgo.SASL(m))
	}
	client, err := kgo.NewClient(append(base,
		kgo.RequiredAcks(kgo.AllISRAcks()), // durable before acknowledged
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), // murmur2, as the built-in log
	)...)
	if err != nil {
		return nil, fmt.Errorf("kafka backend: %w", err)
	}
	adm := kadm.NewClient(client)
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("kafka backend: reach brokers %s: %w", strings.Join(opts.Brokers, ","), err)
	}
	return &Backend{opts: opts, logger: opts.Logger, base: base, client: client, adm: adm, clusterID: meta.Cluster}, nil
}

// ClusterID returns the cluster's id, as its brokers gave it when the
// backend connected (GET / of the REST API shows it, as Kafka Connect's
// kafka_cluster_id).
func (b *Backend) ClusterID() string { return b.clusterID }

// splitBrokers splits comma-separated entries and drops empty ones.
func splitBrokers(in []string) []string {
	var out []string
	for _, e := range in {
		for _, b := range strings.Split(e, ",") {
			if b = strings.TrimSpace(b); b != "" {
				out = append(out, b)
			}
		}
	}
	return out
}

func mechanism(o Options) (sasl.Mechanism, error) {
	switch strings.ToUpper(o.SASLMechanism) {
	case SASLPlain:
		return plain.Auth{User: o.SASLUser, Pass: o.SASLPassword}.AsMechanism(), nil
	case SASLScramSHA256:
		return scram.Auth{User: o.SASLUser, Pass: o.SASLPassword}.AsSha256Mechanism(), nil
	case SASLScramSHA512:
		return scram.Auth{User: o.SASLUser, Pass: o.SASLPassword}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("kafka backend: unknown SASL mechanism %q (valid: %s, %s, %s)", o.SASLMechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)
}

// Close closes the producer; records in flight are finished first.
func (b *Backend) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := b.client.Flush(ctx)
	b.client.Close()
	return err
}

// EnsureTopic implements engine.Backend. partitions <= 0 takes the
// cluster's num.partitions.
func (b *Backend) EnsureTopic(ctx context.Context, name string, partitions int, config map[string]string) error {
	p := int32(partitions)
	if p <= 0 {
		p = -1
	}
	cfg := map[string]*string{}
	for k, v := range config {
		cfg[k] = &v
	}
	resp, err := b.adm.CreateTopic(ctx, p, b.opts.ReplicationFactor, cfg, name)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		b.known.Store(name, struct{}{})
		return nil
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	b.known.Store(name, struct{}{})
	return nil
}

// DescribeTopic implements engine.TopicDescriber: the topic's partition
// count, and every config the cluster reports a value for (its own or the
// default; sensitive configs come without one and are left out).
func (b *Backend) DescribeTopic(ctx context.Context, name string) (engine.TopicInfo, error) {
	td, err := b.adm.ListTopics(ctx, name)
	if err != nil {
		return engine.TopicInfo{}, fmt.Errorf("describe topic %s: %w", name, err)
	}
	d, ok := td[name]
	if !ok {
		return engine.TopicInfo{}, fmt.Errorf("describe topic %s: %w", name, kerr.UnknownTopicOrPartition)
	}
	if d.Err != nil {
		return engine.TopicInfo{}, fmt.Errorf("describe topic %s: %w", name, d.Err)
	}
	rcs, err := b.adm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		return engine.TopicInfo{}, fmt.Errorf("describe configs of topic %s: %w", name, err)
	}
	rc, err := rcs.On(name, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return engine.TopicInfo{}, fmt.Errorf("describe configs of topic %s: %w", name, err)
	}
	info := engine.TopicInfo{Partitions: len(d.Partitions), Config: make(map[string]string, len(rc.Configs))}
	for _, c := range rc.Configs {
		if c.Value != nil {
			info.Config[c.Key] = *c.Value
		}
	}
	return info, nil
}

// ensureProduced creates the topics of records that the backend has not
// yet seen, with the cluster's default partitions, as the embedded log
// creates a topic on its first append. kgo never asks the broker to create
// a topic (and clusters often disable auto.create.topics.enable): without
// this, a source writing to a new topic waits forever for its metadata.
func (b *Backend) ensureProduced(ctx context.Context, records []connect.Record) error {
	var last string
	for _, r := range records {
		if r.Topic == last {
			continue
		}
		last = r.Topic
		if _, ok := b.known.Load(r.Topic); ok {
			continue
		}
		if err := b.EnsureTopic(ctx, r.Topic, 0, nil); err != nil {
			// A principal without CreateTopics may still write to a topic
			// that exists.
			if td, lerr := b.adm.ListTopics(ctx, r.Topic); lerr == nil && td.Has(r.Topic) && td[r.Topic].Err == nil {
				b.known.Store(r.Topic, struct{}{})
				continue
			}
			return fmt.Errorf("produce: %w (create the topic beforehand, or allow the worker to create topics)", err)
		}
	}
	return nil
}

// Produce implements engine.Backend.
func (b *Backend) Produce(ctx context.Context, records []connect.Record) error {
	wait, err := b.Append(ctx, records)
	if wait != nil {
		if werr := wait(ctx); werr != nil {
			return errors.Join(err, werr)
		}
	}
	return err
}

// Append implements engine.Backend. kgo keeps the call order of records of
// one partition, so the order is fixed when Append returns; wait returns
// once the cluster acknowledged every record with acks=all, and sets their
// Partition and Offset.
func (b *Backend) Append(ctx context.Context, records []connect.Record) (func(context.Context) error, error) {
	for i, r := range records {
		if r.Topic == "" {
			return nil, fmt.Errorf("produce: record %d has no topic", i)
		}
	}
	if err := b.ensureProduced(ctx, records); err != nil {
		return nil, err
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	wg.Add(len(records))
	for i := range records {
		kr := toKgo(records[i])
		b.client.Produce(ctx, kr, func(kr *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = refusal(fmt.Errorf("produce to %s: %w", kr.Topic, err))
				}
				mu.Unlock()
				return
			}
			records[i].Partition, records[i].Offset = kr.Partition, kr.Offset
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }() // ends when every callback ran
	return func(ctx context.Context) error {
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("wait for produce acknowledgements: %w", ctx.Err())
		}
		mu.Lock()
		defer mu.Unlock()
		return firstErr
	}, nil
}

// refusal marks a produce error that retrying the same records cannot
// cure as connect.Permanent, as the embedded backend does: the cluster
// refused a record (no key for a compacted topic: INVALID_RECORD) or found
// it too large. The task then stays FAILED with the error instead of
// restarting on the same records forever.
func refusal(err error) error {
	switch {
	case errors.Is(err, kerr.InvalidRecord):
		return connect.Permanent(fmt.Errorf("%w (a record without a key for a compacted topic? give each record a key, or set the topic's cleanup.policy to delete)", err))
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return connect.Permanent(fmt.Errorf("%w (raise the topic's max.message.bytes, and the producer's, or send smaller records)", err))
	}
	return err
}

func toKgo(r connect.Record) *kgo.Record {
	kr := &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return kr
}

func fromKgo(r *kgo.Record) connect.Record {
	cr := connect.Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	for _, h := range r.Headers {
		cr.Headers = append(cr.Headers, connect.Header{Key: h.Key, Value: h.Value})
	}
	return cr
}

// ReadAll implements engine.Backend: partition by partition, from the start
// to the end each had when ReadAll was called, with ReadRange (which ends
// at a partition's end even when transaction markers or compaction leave
// no record at the last offsets).
func (b *Backend) ReadAll(ctx context.Context, topic string, fn func(connect.Record) error) error {
	bounds, err := b.EndOffsets(ctx, topic)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, pb := range bounds {
		if pb.Start >= pb.End {
			continue
		}
		err := b.ReadRange(ctx, topic, pb.Partition, pb.Start, pb.End, func(recs []connect.Record) error {
			for _, r := range recs {
				if err := fn(r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// GroupOffsets implements engine.Backend.
func (b *Backend) GroupOffsets(ctx context.Context, group string) ([]engine.PartitionOffset, error) {
	resp, err := b.adm.FetchOffsets(ctx, group)
	if err != nil {
		if errors.Is(err, kerr.GroupIDNotFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("fetch offsets of group %s: %w", group, err)
	}
	var out []engine.PartitionOffset
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err == nil && o.At >= 0 {
			out = append(out, engine.PartitionOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.At})
		}
	})
	sortOffsets(out)
	return out, resp.Error()
}

func sortOffsets(out []engine.PartitionOffset) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
}

// CommitGroupOffsets implements engine.Backend: a commit from outside the
// group, which Kafka refuses while the group has members.
func (b *Backend) CommitGroupOffsets(ctx context.Context, group string, offsets []engine.PartitionOffset) error {
	if len(offsets) == 0 {
		return nil
	}
	os := kadm.Offsets{}
	for _, o := range offsets {
		os.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
	}
	resp, err := b.adm.CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("commit offsets of group %s: %w", group, err)
	}
	return nil
}

// DeleteGroup implements engine.Backend.
func (b *Backend) DeleteGroup(ctx context.Context, group string) error {
	resp, err := b.adm.DeleteGroup(ctx, group)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return fmt.Errorf("delete group %s: %w", group, err)
	}
	return nil
}

// ListTopics implements engine.Backend: every topic, internal ones
// included (as the embedded backend lists them), sorted.
func (b *Backend) ListTopics(ctx context.Context) ([]string, error) {
	td, err := b.adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	names := td.Names()
	sort.Strings(names)
	return names, nil
}

// EndOffsets implements engine.Backend.
func (b *Backend) EndOffsets(ctx context.Context, topic string) ([]engine.PartitionBounds, error) {
	starts, err := b.adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list start offsets of %s: %w", topic, err)
	}
	ends, err := b.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %s: %w", topic, err)
	}
	var out []engine.PartitionBounds
	var ferr error
	ends.Each(func(e kadm.ListedOffset) {
		if e.Err != nil {
			if ferr == nil {
				ferr = fmt.Errorf("end offset of %s/%d: %w", topic, e.Partition, e.Err)
			}
			return
		}
		s, ok := starts.Lookup(topic, e.Partition)
		if !ok || s.Err != nil {
			if ferr == nil {
				ferr = fmt.Errorf("start offset of %s/%d: %w", topic, e.Partition, s.Err)
			}
			return
		}
		out = append(out, engine.PartitionBounds{Partition: e.Partition, Start: s.Offset, End: e.Offset})
	})
	if ferr != nil {
		return nil, ferr
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, kerr.UnknownTopicOrPartition)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out, nil
}
