package kafkabackend

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxPollRecords bounds one Poll, as the embedded consumer does.
const maxPollRecords = 4096

// fetchMaxWait is how long a sink's fetch waits at the end of the log.
const fetchMaxWait = 500 * time.Millisecond

// regexMetadataMaxAge is how often a consumer with a topics regex
// refreshes its metadata, and so the longest a topic created since waits
// to be read (kgo's and Kafka's metadata.max.age.ms default is 5
// minutes; kgo's metadata.min.age is 5 s).
const regexMetadataMaxAge = 5 * time.Second

// Consumer implements engine.Backend: a kgo group member. It starts at the
// group's committed offsets (the earliest offset where there is none),
// never commits on its own, and leaves the group on Close. With
// spec.TopicsRegex it subscribes by pattern (kgo.ConsumeRegex), as a Kafka
// consumer does: nothing assigned while no topic matches, and the topics
// created later read from the next metadata refresh on.
func (b *Backend) Consumer(ctx context.Context, spec engine.ConsumerSpec) (engine.Consumer, error) {
	group := spec.Group
	c := &consumer{b: b, group: group, owned: map[string]map[int32]bool{}}
	subscribe := []kgo.Opt{kgo.ConsumeTopics(spec.Topics...)}
	if spec.TopicsRegex != "" {
		// kgo matches anywhere in the name: anchor both the pattern and
		// the exclusions, which are internal topics (also those that
		// are not Kafka's internal ones) and the names given.
		exclude := []string{"^_"}
		for _, t := range spec.ExcludeTopics {
			exclude = append(exclude, "^"+regexp.QuoteMeta(t)+"$")
		}
		subscribe = []kgo.Opt{
			kgo.ConsumeRegex(), kgo.ConsumeTopics("^(?:" + spec.TopicsRegex + ")$"), kgo.ConsumeExcludeTopics(exclude...),
			kgo.MetadataMaxAge(regexMetadataMaxAge),
		}
	}
	opts := append(b.base[:len(b.base):len(b.base)], subscribe...)
	opts = append(opts,
		kgo.ConsumerGroup(group),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// The Java consumer's fetch.max.wait.ms (kgo waits 5 s): a fetch
		// at the end of the log holds back the partitions a rebalance adds
		// until it returns, so this bounds how long they wait.
		kgo.FetchMaxWait(fetchMaxWait),
		kgo.OnPartitionsAssigned(c.assigned),
		kgo.OnPartitionsRevoked(c.revoked),
		kgo.OnPartitionsLost(c.revoked),
	)
	opts = append(opts, b.groupTiming()...)
	if spec.ClientID != "" {
		opts = append(opts, kgo.ClientID(spec.ClientID)) // overrides the backend's
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", group, err)
	}
	c.client = cl
	return c, nil
}

type consumer struct {
	b      *Backend
	group  string
	client *kgo.Client

	mu    sync.Mutex // guards owned
	owned map[string]map[int32]bool
}

func (c *consumer) assigned(_ context.Context, _ *kgo.Client, a map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range a {
		if c.owned[t] == nil {
			c.owned[t] = map[int32]bool{}
		}
		for _, p := range ps {
			c.owned[t][p] = true
		}
	}
	c.b.logger.Info("sink group partitions assigned", "group", c.group, "partitions", a)
}

func (c *consumer) revoked(_ context.Context, _ *kgo.Client, r map[string][]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, ps := range r {
		for _, p := range ps {
			delete(c.owned[t], p)
		}
	}
	c.b.logger.Info("sink group partitions revoked", "group", c.group, "partitions", r)
}

// Poll implements engine.Consumer. kgo's informational errors are logged,
// not returned (see informational): the client has already dealt with
// them, and failing the task for them would only make it leave and join
// the group again.
func (c *consumer) Poll(ctx context.Context, maxWait time.Duration) ([]connect.Record, error) {
	pctx, cancel := context.WithTimeout(ctx, maxWait)
	defer cancel()
	fs := c.client.PollRecords(pctx, maxPollRecords)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var ferr error
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || c.informational(err) {
			return
		}
		if ferr == nil {
			ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
		}
	})
	recs := fs.Records()
	if len(recs) == 0 {
		return nil, ferr
	}
	out := make([]connect.Record, len(recs))
	for i, r := range recs {
		out[i] = fromKgo(r)
	}
	return out, nil
}

// informational reports, and logs, a fetch error kgo hands Poll only to
// inform, having dealt with it itself, as a Kafka Connect sink task
// carries on past them:
//   - *kgo.ErrGroupSession: the group management loop failed (a session
//     lost after a pause longer than the session timeout, a coordinator
//     that moved); kgo has revoked the partitions (OnPartitionsLost),
//     rejoins on its own and resumes from the committed offsets. One for
//     a refused authorization is not informational: nothing changes until
//     an ACL does, and the failed task says why.
//   - *kgo.ErrDataLoss: the partition's log was truncated below what the
//     member had consumed (an unclean leader election, a topic deleted
//     and created again); kgo has reset the partition to where the log
//     diverged (or by ConsumeResetOffset) and goes on from there.
func (c *consumer) informational(err error) bool {
	var session *kgo.ErrGroupSession
	var loss *kgo.ErrDataLoss
	switch {
	case errors.As(err, &session):
		if errors.Is(err, kerr.GroupAuthorizationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) {
			return false
		}
		c.b.logger.Warn("sink group session lost; the consumer rejoins and resumes from the committed offsets (records after them are delivered again)",
			"group", c.group, "error", session.Err)
		return true
	case errors.As(err, &loss):
		c.b.logger.Warn("data loss in a sink's partition: its log no longer holds what the sink had read; the consumer goes on from the offset it was reset to",
			"group", c.group, "topic", loss.Topic, "partition", loss.Partition, "consumed_to", loss.ConsumedTo, "reset_to", loss.ResetTo, "error", err)
		return true
	}
	return false
}

// Commit implements engine.Consumer: the offsets of partitions this member
// still owns are committed with its generation. Offsets of partitions a
// rebalance took away are dropped (their new owner reads them again from
// the last commit: at least once), and so is a commit the group refuses
// because it is rebalancing.
func (c *consumer) Commit(ctx context.Context, offsets []engine.PartitionOffset) error {
	c.mu.Lock()
	commit := map[string]map[int32]kgo.EpochOffset{}
	dropped := 0
	for _, o := range offsets {
		if !c.owned[o.Topic][o.Partition] {
			dropped++
			continue
		}
		if commit[o.Topic] == nil {
			commit[o.Topic] = map[int32]kgo.EpochOffset{}
		}
		commit[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Offset}
	}
	c.mu.Unlock()
	if dropped > 0 {
		c.b.logger.Info("offsets of partitions no longer owned not committed", "group", c.group, "partitions", dropped)
	}
	if len(commit) == 0 {
		return nil
	}
	var cerr error
	c.client.CommitOffsetsSync(ctx, commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); p.ErrorCode != 0 && cerr == nil {
					cerr = fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err)
				}
			}
		}
	})
	switch {
	case cerr == nil:
		return nil
	case errors.Is(cerr, kerr.RebalanceInProgress), errors.Is(cerr, kerr.IllegalGeneration), errors.Is(cerr, kerr.UnknownMemberID):
		c.b.logger.Info("offset commit refused during a rebalance; the partitions' next owner reads from the last commit", "group", c.group, "error", cerr)
		return nil
	}
	return fmt.Errorf("commit offsets of group %s: %w", c.group, cerr)
}

// Close implements engine.Consumer: leaves the group.
func (c *consumer) Close() error {
	c.client.Close()
	return nil
}

// groupTiming returns the group session options of Options (session
// timeout, heartbeat interval) that are set, for the sinks' consumer
// groups and the sources' leases alike.
func (b *Backend) groupTiming() []kgo.Opt {
	var opts []kgo.Opt
	if b.opts.SessionTimeout > 0 {
		opts = append(opts, kgo.SessionTimeout(b.opts.SessionTimeout))
	}
	if b.opts.HeartbeatInterval > 0 {
		opts = append(opts, kgo.HeartbeatInterval(b.opts.HeartbeatInterval))
	}
	return opts
}
