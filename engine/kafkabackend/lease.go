package kafkabackend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tributary-io/tributary/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Source leases: every worker that loads a source joins a consumer group
// named for it (LeaseGroup) subscribed to the one-partition topic
// LeasesTopic; the member Kafka's group protocol assigns partition 0 holds
// the lease and runs the task. Nothing is ever written to the topic: only
// the assignment matters. The lease group uses the cooperative-sticky
// balancer, so a worker joining as a standby does not move the lease, and
// its callbacks hold a rebalance until the task stopped: Kafka assigns a
// partition revoked from a member to another only once the member rejoined
// (after OnPartitionsRevoked returned), or after the rebalance timeout.

// LeasesTopic is the internal topic the source leases' groups subscribe
// to: one partition, never written to.
const LeasesTopic = "_tributary.leases"

// leaseRebalanceTimeout is how long a rebalance waits for the holder to
// stop its task and give the lease up (Kafka's rebalance.timeout.ms,
// kgo's default): a drain that takes longer gets the member removed from
// the group, and the lease passes on while the task may still run.
const leaseRebalanceTimeout = 60 * time.Second

// LeaseGroup is the consumer group of a source's lease.
func LeaseGroup(pipeline, connector string) string {
	return "_tributary-source." + pipeline + "." + connector
}

var (
	_ engine.SourceLeaser      = (*Backend)(nil)
	_ engine.GroupMemberLister = (*Backend)(nil)
)

// LeaseSource implements engine.SourceLeaser: it joins the source's lease
// group as worker workerID (the member's client id, so that the other
// workers can name the holder).
func (b *Backend) LeaseSource(ctx context.Context, pipeline, connector, workerID string) (engine.SourceLease, error) {
	if _, ok := b.known.Load(LeasesTopic); !ok {
		if err := b.EnsureTopic(ctx, LeasesTopic, 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
			return nil, fmt.Errorf("source lease: %w (create the topic %s with one partition, or allow the worker to create topics)", err, LeasesTopic)
		}
	}
	l := &lease{b: b, group: LeaseGroup(pipeline, connector), acquired: make(chan struct{})}
	opts := append(b.base[:len(b.base):len(b.base)],
		kgo.ClientID(workerID),
		kgo.ConsumerGroup(l.group),
		kgo.ConsumeTopics(LeasesTopic),
		kgo.DisableAutoCommit(),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.RebalanceTimeout(leaseRebalanceTimeout),
		kgo.OnPartitionsAssigned(l.assigned),
		kgo.OnPartitionsRevoked(l.revoked),
		kgo.OnPartitionsLost(l.revoked),
		kgo.WithHooks(l),
	)
	opts = append(opts, b.groupTiming()...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("source lease %s: %w", l.group, err)
	}
	// Only the assignment matters: nothing is read from the topic.
	cl.PauseFetchTopics(LeasesTopic)
	l.client = cl
	return l, nil
}

// lease is one worker's member of a source's lease group.
type lease struct {
	b      *Backend
	group  string
	client *kgo.Client

	// mu guards the fields below. A term is the time between the
	// assignment of partition 0 and its revocation.
	mu       sync.Mutex
	held     bool
	closed   bool
	acquired chan struct{} // closed when a term starts; replaced when its revocation starts
	revoke   chan struct{} // closed when the term's lease is being taken away
	released chan struct{} // closed by the term's release (or Close)
	groupErr error         // the group management loop's last error; nil once assigned
}

var (
	_ engine.SourceLease       = (*lease)(nil)
	_ kgo.HookGroupManageError = (*lease)(nil)
)

// OnGroupManageError implements kgo.HookGroupManageError: the error that
// keeps the worker out of the lease group (an ACL refusing the group, say)
// is kept for Holder, so that a standby's status says why it waits.
func (l *lease) OnGroupManageError(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.groupErr = err
}

// holdsLease reports whether a callback's partitions include the lease.
func holdsLease(ps map[string][]int32) bool {
	return slices.Contains(ps[LeasesTopic], 0)
}

func (l *lease) assigned(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.groupErr = nil // in the group again
	if !holdsLease(ps) || l.held || l.closed {
		return
	}
	l.held = true
	l.revoke, l.released = make(chan struct{}), make(chan struct{})
	close(l.acquired)
	l.b.logger.Info("source lease acquired", "group", l.group)
}

// revoked is OnPartitionsRevoked and OnPartitionsLost: the lease is taken
// away. It asks the task to stop and returns once it has (release), which
// holds the rebalance: no other member is assigned the lease before.
func (l *lease) revoked(ctx context.Context, _ *kgo.Client, ps map[string][]int32) {
	if !holdsLease(ps) {
		return
	}
	l.mu.Lock()
	if !l.held {
		l.mu.Unlock()
		return
	}
	revoke, released := l.revoke, l.released
	// The term ends now, before the task is told: an Acquire from here on
	// (the runner asks again as soon as it has released) waits for the
	// next assignment instead of being handed this term's closed channel.
	// held stays true until the release, so that Close releases a task
	// that stops only then.
	l.acquired = make(chan struct{})
	l.mu.Unlock()
	close(revoke)
	l.b.logger.Info("source lease revoked; stopping the task before it passes on", "group", l.group)
	select {
	case <-released:
	case <-ctx.Done(): // the client is closing: Close released it
	}
	l.mu.Lock()
	l.held = false
	l.mu.Unlock()
}

// Acquire implements engine.SourceLease.
func (l *lease) Acquire(ctx context.Context) (<-chan struct{}, func(), error) {
	l.mu.Lock()
	acquired := l.acquired
	l.mu.Unlock()
	select {
	case <-acquired:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	released := l.released
	return l.revoke, func() { l.release(released) }, nil
}

// release closes a term's released channel once.
func (l *lease) release(released chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-released:
	default:
		close(released)
	}
}

// Holder implements engine.SourceLease: the client id (the worker id) and
// host of the member assigned the lease, from DescribeGroups; the error
// that keeps this worker out of the group, if one does.
func (l *lease) Holder(ctx context.Context) (string, error) {
	l.mu.Lock()
	groupErr := l.groupErr
	l.mu.Unlock()
	if groupErr != nil {
		return "", fmt.Errorf("join group %s: %w", l.group, groupErr)
	}
	holder, _, err := l.b.leaseMembers(ctx, l.group)
	return holder, err
}

// LeaseMembers implements engine.SourceLeaser: the workers in a source's
// lease group, asked without joining it.
func (b *Backend) LeaseMembers(ctx context.Context, pipeline, connector string) ([]string, error) {
	_, members, err := b.leaseMembers(ctx, LeaseGroup(pipeline, connector))
	return members, err
}

// GroupMembers implements engine.GroupMemberLister: the members of a
// consumer group (a sink's), asked without joining it (DescribeGroups),
// each as its client id, host and member id; none when the group does not
// exist. A worker's sink consumer has client id
// connector-consumer-<connector>-0, as Kafka Connect names it.
func (b *Backend) GroupMembers(ctx context.Context, group string) ([]string, error) {
	gs, err := b.adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("describe group %s: %w", group, err)
	}
	g, err := gs.On(group, nil)
	if err == nil {
		err = g.Err
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("describe group %s: %w", group, err)
	}
	var members []string
	for _, m := range g.Members {
		members = append(members, fmt.Sprintf("%s (%s, member id %s)", m.ClientID, m.ClientHost, m.MemberID))
	}
	return members, nil
}

// leaseMembers describes group (DescribeGroups): the member assigned the
// lease, and every member (the holder first), each as its client id (the
// worker id) and host. While the group rebalances no member is assigned
// anything: holder is then "" though members are not.
func (b *Backend) leaseMembers(ctx context.Context, group string) (holder string, members []string, err error) {
	gs, err := b.adm.DescribeGroups(ctx, group)
	if err != nil {
		return "", nil, fmt.Errorf("describe group %s: %w", group, err)
	}
	g, err := gs.On(group, nil)
	if err == nil {
		err = g.Err
	}
	if errors.Is(err, kerr.GroupIDNotFound) {
		return "", nil, nil // never joined (kfake answers so; GroupMembers takes it alike): no members
	}
	if err != nil {
		return "", nil, fmt.Errorf("describe group %s: %w", group, err)
	}
	for _, m := range g.Members {
		name := fmt.Sprintf("%s (%s)", m.ClientID, m.ClientHost)
		a, ok := m.Assigned.AsConsumer()
		held := false
		if ok {
			for _, t := range a.Topics {
				held = held || t.Topic == LeasesTopic && slices.Contains(t.Partitions, 0)
			}
		}
		if held && holder == "" {
			holder = name
			members = append([]string{name}, members...)
			continue
		}
		members = append(members, name)
	}
	return holder, members, nil
}

// Name implements engine.SourceLease.
func (l *lease) Name() string {
	return fmt.Sprintf("consumer group %s on %s", l.group, LeasesTopic)
}

// Close implements engine.SourceLease: it releases a lease still held
// (the task has stopped) and leaves the group.
func (l *lease) Close() error {
	l.mu.Lock()
	l.closed = true
	held, released := l.held, l.released
	l.mu.Unlock()
	if held {
		l.release(released)
	}
	l.client.Close()
	return nil
}
