package log

// Consumer groups: the group coordinator and its committed offsets.
//
// # Storage
//
// Committed offsets live in the internal compacted topic __consumer_offsets,
// as in Kafka, so that a backup of the data directory is a backup of every
// group's progress and so that Kafka tools can read the topic. The topic is
// created on the first commit with cleanup.policy=compact and
// offsetsTopicPartitions partitions (1 here). Every record of one group goes
// to partition KeyPartition(group, n), n being the topic's partition count,
// so a group's records are totally ordered; n must therefore never change
// (Kafka forbids growing __consumer_offsets for the same reason).
//
// One record per committed partition, in Kafka's own binary schema (kmsg):
//
//	key   = OffsetCommitKey   version 1: int16 version | string group | string topic | int32 partition
//	value = OffsetCommitValue version 3: int16 version | int64 offset | int32 leader epoch (-1)
//	                                     | string metadata | int64 commit timestamp (unix ms)
//	(strings are int16 length + bytes, integers big-endian)
//
// A nil value is a tombstone: the partition's committed offset was deleted
// (Delete, DeleteOffsets, or the topic was deleted). Key versions 0 and 1 are
// offset commits; other key versions (2 = Kafka's group metadata) are
// skipped: membership (SetMembership) is kept in memory only. Value versions
// 0 to 4 are read.
//
// # Durability
//
// A commit is one Log.Append of all its records to one partition (one batch
// unless it exceeds max.message.bytes, 8 MiB on this topic), fsync'ed like
// every append. In-memory state changes only after the append returned, so a
// commit that returned nil is never lost. Open replays the whole topic
// (load): the latest record per key wins, a tombstone deletes.
//
// # Concurrency and lock order
//
// Groups.mu guards only the groups map and the group structs in it. It is a
// leaf lock: it is never held while calling into the Log (appends, reads,
// offset look-ups, which take Log.mu and partition.mu), and the Log never
// calls into Groups while holding its own locks. So the order is simply:
// take Groups.mu last and call nothing while holding it. Delete calls the
// registered delete guards (GuardDelete) with no lock held; a guard may hold
// its own locks while the deletion runs, since Groups.mu is a leaf.
//
// Because the append happens outside the lock, two writers of the same key
// may apply their results out of order. Every applied entry therefore keeps
// the offset of its record in __consumer_offsets, and an older record never
// overwrites a newer one. Deletions leave markers (deleted entries) for as
// long as writes to the group are in flight, so that an older commit cannot
// resurrect a deleted offset; the markers go when the group is quiet.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sentinel errors of the group coordinator.
var (
	// ErrUnknownGroup: the group has no committed offsets and no members.
	ErrUnknownGroup = errors.New("unknown consumer group")
	// ErrGroupNotEmpty: the operation needs a group without active members
	// (Kafka's NON_EMPTY_GROUP); stop its consumers first.
	ErrGroupNotEmpty = errors.New("consumer group has active members")
)

const (
	// OffsetsTopic is the internal compacted topic holding committed offsets.
	OffsetsTopic = "__consumer_offsets"
	// offsetsTopicPartitions is the partition count __consumer_offsets is
	// created with. It must never change once the topic exists.
	offsetsTopicPartitions = 1
	// offsetsTopicSegmentBytes is Kafka's offsets.topic.segment.bytes, small
	// enough for the cleaner to have closed segments to compact.
	offsetsTopicSegmentBytes = "104857600"
	// offsetsTopicMaxMessageBytes lets one commit of many partitions stay
	// one batch.
	offsetsTopicMaxMessageBytes = "8388608"
	// maxOffsetMetadata is Kafka's offset.metadata.max.bytes.
	maxOffsetMetadata = 4096
	// maxKeyString is the longest string the key schema can hold (int16
	// length).
	maxKeyString = 1<<15 - 1

	offsetKeyVersion   = 1
	offsetValueVersion = 3
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// OffsetCommit is one partition's committed offset: the offset of the next
// record the group will read there. A zero CommitTime on Commit means now;
// it is kept to the millisecond and read back in UTC.
type OffsetCommit struct {
	Topic      string
	Partition  int32
	Offset     int64
	Metadata   string
	CommitTime time.Time
}

// PartitionLag is one row of a group description: a partition's committed
// offset, its log end offset and the difference.
type PartitionLag struct {
	Group, Topic string
	Partition    int32
	// CurrentOffset is the committed offset, -1 when none is committed.
	CurrentOffset int64
	// LogEndOffset is the partition's high watermark, -1 when the topic or
	// partition does not exist.
	LogEndOffset int64
	// Lag is LogEndOffset - CurrentOffset, never below 0; -1 when either is
	// unknown.
	Lag int64
	// ConsumerID, Host and ClientID name the member that owns the partition
	// (see SetMembership); empty when no member does.
	ConsumerID, Host, ClientID string
}

// groupState is a group's place in Kafka's membership state machine, as
// the coordinator that runs the membership protocol (the Kafka listener)
// publishes it with SetMembership.
type groupState int

const (
	groupEmpty groupState = iota
	groupPreparingRebalance
	groupCompletingRebalance
	groupStable
	groupDead
)

func (s groupState) String() string {
	switch s {
	case groupEmpty:
		return "Empty"
	case groupPreparingRebalance:
		return "PreparingRebalance"
	case groupCompletingRebalance:
		return "CompletingRebalance"
	case groupStable:
		return "Stable"
	case groupDead:
		return "Dead"
	}
	return fmt.Sprintf("groupState(%d)", int(s))
}

// member is one consumer of a group, as the coordinator published it.
type member struct {
	id, clientID, host string
	assignment         []TopicPartition
}

// parseGroupState maps Kafka's state names to groupState.
func parseGroupState(s string) (groupState, bool) {
	for st := groupEmpty; st <= groupDead; st++ {
		if st.String() == s {
			return st, true
		}
	}
	return 0, false
}

// Membership is a group's membership as the coordinator that runs Kafka's
// group protocol sees it: the Kafka listener publishes it with SetMembership
// on every join, sync, leave and session expiry.
type Membership struct {
	// State is Kafka's name of the group state: Empty, PreparingRebalance,
	// CompletingRebalance or Stable ("" means Empty when there are no
	// members, Stable otherwise).
	State string
	// Generation is the current generation (-1 before the first rebalance).
	Generation int32
	// ProtocolType is the group's protocol type ("consumer" for Kafka
	// consumers, "connect" for Kafka Connect workers); Protocol the chosen
	// assignor ("range", "cooperative-sticky", ...).
	ProtocolType, Protocol string
	// Leader is the member id of the leader.
	Leader  string
	Members []GroupMember
	// Retained keeps a group without members and without committed
	// offsets known (listed, described without rows, deleted without
	// error) while it is Empty: Kafka's coordinator keeps a group whose
	// last member left until its periodic cleanup, and so does the Kafka
	// listener, which publishes it without Retained when it forgets it.
	// Without it such a group is forgotten at once.
	Retained bool
}

// GroupMember is one member of a Membership.
type GroupMember struct {
	ID, ClientID, Host string
	// Assignment is the member's assignment as the leader sent it in its
	// SyncGroup. For protocol type "consumer" it is a
	// ConsumerMemberAssignment, whose partitions Describe shows as owned by
	// the member; other protocols' assignments are opaque here.
	Assignment []byte
}

// group is the coordinator's state for one group. All fields are guarded by
// Groups.mu.
type consumerGroup struct {
	name  string
	state groupState
	// generation, protocolType, protocol and leader belong to the
	// membership protocol: generation -1 until the first rebalance.
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	// retained: the coordinator keeps the group, Empty, though it has
	// neither members nor offsets (Membership.Retained).
	retained bool

	offsets map[TopicPartition]commitEntry
	// inflight counts writes (commits, deletions) appended or being
	// appended but not yet applied; deletion markers stay while it is > 0.
	inflight int
}

// commitEntry is a committed offset, or a deletion marker, with the offset of
// the __consumer_offsets record that wrote it.
type commitEntry struct {
	commit  OffsetCommit
	at      int64
	deleted bool
}

func newGroup(name string) *consumerGroup {
	return &consumerGroup{
		name: name, state: groupEmpty, generation: -1,
		members: map[string]*member{}, offsets: map[TopicPartition]commitEntry{},
	}
}

// live reports whether the group exists for callers: it has a committed
// offset or a member, or its coordinator retains it.
func (gr *consumerGroup) live() bool {
	if len(gr.members) > 0 || gr.retained {
		return true
	}
	for _, e := range gr.offsets {
		if !e.deleted {
			return true
		}
	}
	return false
}

// apply records the write of one key at offset at, unless a newer record of
// the same key was applied already.
func (gr *consumerGroup) apply(tp TopicPartition, c *OffsetCommit, at int64) {
	if old, ok := gr.offsets[tp]; ok && old.at > at {
		return
	}
	if c == nil {
		gr.offsets[tp] = commitEntry{commit: OffsetCommit{Topic: tp.Topic, Partition: tp.Partition}, at: at, deleted: true}
		return
	}
	gr.offsets[tp] = commitEntry{commit: *c, at: at}
}

// memberGeneration identifies who commits: a member of a generation, or
// nobody (generation -1, a "simple" commit by a standalone consumer or an
// admin tool). It is the place for the OffsetCommit request's member id and
// generation once the Kafka listener exists.
type memberGeneration struct {
	memberID   string
	generation int32
}

var noGeneration = memberGeneration{generation: -1}

// checkCommit decides whether gen may commit to the group, as Kafka's
// coordinator does: a simple commit only while the group has no members; a
// member's commit only from a current member of the current generation.
func (gr *consumerGroup) checkCommit(gen memberGeneration) error {
	if gen.generation < 0 && gen.memberID == "" {
		if !gr.idle() {
			return fmt.Errorf("%w (%d, state %s): only a member of generation %d may commit; stop the consumers to commit from outside the group", ErrGroupNotEmpty, len(gr.members), gr.state, gr.generation)
		}
		return nil
	}
	if _, ok := gr.members[gen.memberID]; !ok {
		return fmt.Errorf("commit to group %s: unknown member %q", gr.name, gen.memberID)
	}
	if gen.generation != gr.generation {
		return fmt.Errorf("commit to group %s: generation %d is not the current %d", gr.name, gen.generation, gr.generation)
	}
	return nil
}

// idle reports whether the group is Empty: no members, and no rebalance
// waiting for a member that is joining (a coordinator publishes
// PreparingRebalance without members then, and Kafka refuses changes from
// outside until the group is Empty again).
func (gr *consumerGroup) idle() bool {
	return len(gr.members) == 0 && gr.state == groupEmpty
}

// checkNoMembers refuses operations that need an idle group.
func (gr *consumerGroup) checkNoMembers(op string) error {
	if n := len(gr.members); !gr.idle() {
		return fmt.Errorf("%s group %s: %w (%d, state %s); stop its consumers first", op, gr.name, ErrGroupNotEmpty, n, gr.state)
	}
	return nil
}

// Groups is the consumer group coordinator: committed offsets per group,
// topic and partition, kept durably in __consumer_offsets, and the group
// membership a protocol coordinator publishes (SetMembership). It is safe for concurrent use. Get it from Log.Groups.
type Groups struct {
	l *Log

	mu     sync.Mutex // guards groups, every *consumerGroup in it and guards; a leaf lock
	groups map[string]*consumerGroup
	guards []*deleteGuard
}

// DeleteGuard runs the deletion of a group (del) on behalf of a coordinator
// that keeps its own state of the group, as the Kafka listener does: it
// refuses (an error wrapping ErrGroupNotEmpty) while its group has members,
// and otherwise runs del and, when del succeeded or found no offsets
// (ErrUnknownGroup), forgets its group, so that a group deleted through the
// log (tributary groups delete, the REST endpoint) is gone for the
// coordinator's clients at once, as Kafka's DeleteGroups removes it. It
// holds the group still while del runs, so that no member joins between its
// check and the deletion. It returns what the deletion returns.
type DeleteGuard func(ctx context.Context, group string, del func() error) error

type deleteGuard struct{ fn DeleteGuard }

// GuardDelete registers a DeleteGuard that every Delete runs through,
// whoever calls it, and returns the function that unregisters it (a
// coordinator's Close calls it). Guards registered later run outermost.
// Only Delete is guarded: offsets committed, reset or deleted through the
// log are read from here by every coordinator (OffsetFetch) anyway.
func (g *Groups) GuardDelete(fn DeleteGuard) (unregister func()) {
	gd := &deleteGuard{fn: fn}
	g.mu.Lock()
	g.guards = append(g.guards, gd)
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, x := range g.guards {
			if x == gd {
				g.guards = append(g.guards[:i:i], g.guards[i+1:]...)
				return
			}
		}
	}
}

func newGroups(l *Log) *Groups {
	return &Groups{l: l, groups: map[string]*consumerGroup{}}
}

// SetMembership publishes a group's membership, replacing what was
// published before: the coordinator running Kafka's group protocol (the
// Kafka listener) calls it after every change, so that Describe shows who
// owns each partition and Delete, DeleteOffsets, ApplyReset and Commit
// refuse while the group has members. A membership without members (the
// last member left, or the coordinator stopped) makes the group idle again,
// unless its State is PreparingRebalance: a rebalance waiting for a member
// that is joining, during which those operations still refuse, as Kafka's
// coordinator refuses them in every state but Empty.
//
// Memberships live in memory only: after a restart every group is empty
// until its consumers join again, as with Kafka's coordinator after its
// members' sessions expire.
func (g *Groups) SetMembership(group string, m Membership) error {
	if err := validateGroupName(group); err != nil {
		return fmt.Errorf("set membership: %w", err)
	}
	st := groupStable
	switch {
	case m.State != "":
		var ok bool
		if st, ok = parseGroupState(m.State); !ok {
			return fmt.Errorf("set membership of group %s: unknown state %q (want Empty, PreparingRebalance, CompletingRebalance or Stable)", group, m.State)
		}
	case len(m.Members) == 0:
		st = groupEmpty
	}
	members := make(map[string]*member, len(m.Members))
	for _, gm := range m.Members {
		if gm.ID == "" {
			return fmt.Errorf("set membership of group %s: a member without id", group)
		}
		members[gm.ID] = &member{id: gm.ID, clientID: gm.ClientID, host: gm.Host, assignment: decodeAssignment(m.ProtocolType, gm.Assignment)}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	retained := m.Retained && len(members) == 0 && st == groupEmpty
	gr, ok := g.groups[group]
	if !ok {
		if len(members) == 0 && st == groupEmpty && !retained {
			return nil // nothing known, nothing to forget
		}
		gr = newGroup(group)
		g.groups[group] = gr
	}
	gr.retained = retained
	gr.state, gr.generation = st, m.Generation
	gr.protocolType, gr.protocol, gr.leader = m.ProtocolType, m.Protocol, m.Leader
	gr.members = members
	if len(members) == 0 && st != groupPreparingRebalance {
		gr.state, gr.protocol, gr.leader = groupEmpty, "", ""
		g.pruneLocked(gr)
	}
	return nil
}

// decodeAssignment returns the partitions of a consumer protocol
// assignment; nil for other protocols or bytes that do not decode.
func decodeAssignment(protocolType string, b []byte) []TopicPartition {
	if protocolType != "consumer" || len(b) == 0 {
		return nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(b); err != nil {
		return nil
	}
	var out []TopicPartition
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			out = append(out, TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return out
}

// CommitMember is Commit on behalf of a member of the group's current
// generation (an OffsetCommit request of a group member): it is refused
// unless memberID is a member of the published membership and generation
// its current generation.
func (g *Groups) CommitMember(ctx context.Context, group, memberID string, generation int32, offsets []OffsetCommit) error {
	return g.commit(ctx, group, memberGeneration{memberID: memberID, generation: generation}, offsets)
}

// pendingWrite is one record of a write: a commit, or a tombstone when
// commit is nil.
type pendingWrite struct {
	tp     TopicPartition
	commit *OffsetCommit
}

// write appends one record per w to the group's partition of
// __consumer_offsets, as one append, and then applies them. check runs under
// the lock before anything is appended and may refuse the write. The append
// is not abandoned when ctx ends once it started: a written record is always
// applied, so memory never disagrees with what the next Open replays.
func (g *Groups) write(ctx context.Context, name string, ws []pendingWrite, check func(*consumerGroup) error) error {
	if len(ws) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	gr, ok := g.groups[name]
	if !ok {
		gr = newGroup(name)
	}
	if check != nil {
		if err := check(gr); err != nil {
			g.mu.Unlock()
			return err
		}
	}
	if !ok {
		g.groups[name] = gr
	}
	gr.inflight++
	g.mu.Unlock()

	base, err := g.appendRecords(ctx, name, ws)

	g.mu.Lock()
	defer g.mu.Unlock()
	gr.inflight--
	if err == nil {
		for i, w := range ws {
			gr.apply(w.tp, w.commit, base+int64(i))
		}
	}
	g.pruneLocked(gr)
	return err
}

// pruneLocked drops deletion markers once no write to the group is in
// flight, and forgets a group with nothing left.
func (g *Groups) pruneLocked(gr *consumerGroup) {
	if gr.inflight > 0 {
		return
	}
	for tp, e := range gr.offsets {
		if e.deleted {
			delete(gr.offsets, tp)
		}
	}
	if len(gr.offsets) == 0 && gr.idle() && !gr.retained && g.groups[gr.name] == gr {
		gr.state = groupDead
		delete(g.groups, gr.name)
	}
}

// appendRecords encodes ws and appends them durably, creating
// __consumer_offsets when needed. It returns the offset of the first record.
func (g *Groups) appendRecords(ctx context.Context, name string, ws []pendingWrite) (int64, error) {
	n, err := g.offsetsPartitions()
	if err != nil {
		return 0, err
	}
	now := g.l.now()
	recs := make([]Record, len(ws))
	for i, w := range ws {
		recs[i] = Record{Key: encodeOffsetKey(name, w.tp), Timestamp: now}
		if w.commit != nil {
			recs[i].Value = encodeOffsetValue(w.commit)
			recs[i].Timestamp = w.commit.CommitTime
		}
	}
	part := KeyPartition([]byte(name), n)
	base, err := g.l.Append(context.WithoutCancel(ctx), OffsetsTopic, part, recs)
	if err != nil {
		return 0, fmt.Errorf("append to %s-%d: %w", OffsetsTopic, part, err)
	}
	return base, nil
}

// offsetsPartitions returns the partition count of __consumer_offsets,
// creating the topic first if it does not exist.
func (g *Groups) offsetsPartitions() (int, error) {
	n, err := g.l.Partitions(OffsetsTopic)
	if err == nil {
		return n, nil
	}
	if !errors.Is(err, ErrUnknownTopic) {
		return 0, err
	}
	cfg := map[string]string{
		ConfigCleanupPolicy:   "compact",
		ConfigSegmentBytes:    offsetsTopicSegmentBytes,
		ConfigMaxMessageBytes: offsetsTopicMaxMessageBytes,
	}
	if err := g.l.createTopic(OffsetsTopic, offsetsTopicPartitions, cfg); err != nil && !errors.Is(err, ErrTopicExists) {
		return 0, fmt.Errorf("create %s: %w", OffsetsTopic, err)
	}
	return g.l.Partitions(OffsetsTopic)
}

func encodeOffsetKey(group string, tp TopicPartition) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version = offsetKeyVersion
	k.Group, k.Topic, k.Partition = group, tp.Topic, tp.Partition
	return k.AppendTo(nil)
}

func encodeOffsetValue(c *OffsetCommit) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset = c.Offset
	v.LeaderEpoch = -1
	v.Metadata = c.Metadata
	v.CommitTimestamp = c.CommitTime.UnixMilli()
	return v.AppendTo(nil)
}

// errNotOffsetKey marks records of __consumer_offsets that are not offset
// commits (group metadata); load skips them.
var errNotOffsetKey = errors.New("not an offset commit key")

// decodeOffsetRecord decodes one record of __consumer_offsets. commit is
// nil for a tombstone.
func decodeOffsetRecord(r Record) (string, TopicPartition, *OffsetCommit, error) {
	if len(r.Key) < 2 {
		return "", TopicPartition{}, nil, fmt.Errorf("key of %d bytes is too short", len(r.Key))
	}
	if ver := int16(r.Key[0])<<8 | int16(r.Key[1]); ver != 0 && ver != 1 {
		return "", TopicPartition{}, nil, fmt.Errorf("%w: key version %d", errNotOffsetKey, ver)
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(r.Key); err != nil {
		return "", TopicPartition{}, nil, fmt.Errorf("decode key: %w", err)
	}
	tp := TopicPartition{Topic: k.Topic, Partition: k.Partition}
	if r.Value == nil {
		return k.Group, tp, nil, nil
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(r.Value); err != nil {
		return "", TopicPartition{}, nil, fmt.Errorf("decode value (version %d): %w", v.Version, err)
	}
	if v.Version < 0 || v.Version > 4 {
		return "", TopicPartition{}, nil, fmt.Errorf("unknown value version %d", v.Version)
	}
	return k.Group, tp, &OffsetCommit{
		Topic: k.Topic, Partition: k.Partition, Offset: v.Offset,
		Metadata: v.Metadata, CommitTime: time.UnixMilli(v.CommitTimestamp).UTC(),
	}, nil
}

// load rebuilds the committed offsets by replaying __consumer_offsets. Open
// calls it before the log is shared, so nothing runs concurrently. A record
// that does not decode is logged and skipped; damaged batches fail the open,
// since silently losing commits would make consumers skip or repeat data.
func (g *Groups) load() error {
	n, err := g.l.Partitions(OffsetsTopic)
	if errors.Is(err, ErrUnknownTopic) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load consumer group offsets: %w", err)
	}
	ctx := context.Background()
	records := 0
	for p := int32(0); p < int32(n); p++ {
		from, end, err := g.l.Offsets(OffsetsTopic, p)
		if err != nil {
			return fmt.Errorf("load consumer group offsets: %w", err)
		}
		for from < end {
			res, err := g.l.Read(ctx, OffsetsTopic, p, from, ReadOptions{MaxBytes: 1 << 20})
			if err != nil {
				return fmt.Errorf("load consumer group offsets from %s-%d at offset %d: %w", OffsetsTopic, p, from, err)
			}
			for _, r := range res.Records {
				records++
				name, tp, c, err := decodeOffsetRecord(r)
				if errors.Is(err, errNotOffsetKey) {
					continue
				}
				if err != nil {
					g.l.logger.Warn("skipping undecodable record of "+OffsetsTopic, "partition", p, "offset", r.Offset, "error", err)
					continue
				}
				gr, ok := g.groups[name]
				if !ok {
					gr = newGroup(name)
					g.groups[name] = gr
				}
				gr.apply(tp, c, r.Offset)
			}
			if res.NextOffset <= from {
				break
			}
			from = res.NextOffset
		}
	}
	g.mu.Lock()
	for _, gr := range g.groups {
		g.pruneLocked(gr)
	}
	g.mu.Unlock()
	if records > 0 {
		g.l.logger.Info("loaded consumer group offsets", "records", records, "groups", len(g.groups))
	}
	return nil
}

// forgetTopic deletes every group's committed offsets of a deleted topic,
// durably (tombstones), as Kafka does, so that a new topic of the same name
// does not inherit them. DeleteTopic calls it after the topic is gone, with
// no lock held. Deleting __consumer_offsets itself drops all group state.
func (g *Groups) forgetTopic(topicName string) {
	if topicName == OffsetsTopic {
		g.mu.Lock()
		for _, gr := range g.groups {
			gr.offsets = map[TopicPartition]commitEntry{}
			g.pruneLocked(gr)
		}
		g.mu.Unlock()
		return
	}
	g.mu.Lock()
	byGroup := map[string][]pendingWrite{}
	for name, gr := range g.groups {
		for tp, e := range gr.offsets {
			if tp.Topic == topicName && !e.deleted {
				byGroup[name] = append(byGroup[name], pendingWrite{tp: tp})
			}
		}
	}
	g.mu.Unlock()
	for _, name := range sortedKeys(byGroup) {
		ws := byGroup[name]
		sortWrites(ws)
		if err := g.write(context.Background(), name, ws, nil); err != nil {
			g.l.logger.Error("delete committed offsets of deleted topic", "group", name, "topic", topicName, "error", err)
		}
	}
}

func sortWrites(ws []pendingWrite) {
	sort.Slice(ws, func(i, j int) bool { return tpLess(ws[i].tp, ws[j].tp) })
}

func tpLess(a, b TopicPartition) bool {
	if a.Topic != b.Topic {
		return a.Topic < b.Topic
	}
	return a.Partition < b.Partition
}

func validateGroupName(name string) error {
	if name == "" {
		return errors.New("invalid group id: empty")
	}
	if len(name) > maxKeyString {
		return fmt.Errorf("invalid group id: %d bytes, at most %d", len(name), maxKeyString)
	}
	return nil
}

// Commit stores the committed offsets of a group, all in one durable append;
// it returns once they are durable and visible to Committed. A later commit
// of the same partition replaces an earlier one. Offsets may be committed for
// topics that do not exist (as Kafka allows); Describe then shows their log
// end and lag as unknown. A commit carries no member or generation: it is
// refused with ErrGroupNotEmpty while the group has members (Kafka's rule for
// commits from outside the group).
//
// Once the append started, Commit waits for it even if ctx ends, so that
// what it reports matches what a restart replays. An error other than a
// refusal means the commit may or may not have been stored.
func (g *Groups) Commit(ctx context.Context, group string, offsets []OffsetCommit) error {
	return g.commit(ctx, group, noGeneration, offsets)
}

// commit is Commit on behalf of gen: nobody (Commit) or a member of a
// generation (CommitMember).
func (g *Groups) commit(ctx context.Context, group string, gen memberGeneration, offsets []OffsetCommit) error {
	if err := validateGroupName(group); err != nil {
		return fmt.Errorf("commit offsets: %w", err)
	}
	if len(offsets) == 0 {
		return nil
	}
	now := g.l.now()
	ws := make([]pendingWrite, len(offsets))
	for i, o := range offsets {
		if err := ValidateTopicName(o.Topic); err != nil {
			return fmt.Errorf("commit offsets of group %s: %w", group, err)
		}
		switch {
		case o.Partition < 0:
			return fmt.Errorf("commit offsets of group %s: %s partition %d: partitions start at 0", group, o.Topic, o.Partition)
		case o.Offset < 0:
			return fmt.Errorf("commit offsets of group %s: %s-%d offset %d: offsets start at 0", group, o.Topic, o.Partition, o.Offset)
		case len(o.Metadata) > maxOffsetMetadata:
			return fmt.Errorf("commit offsets of group %s: %s-%d metadata of %d bytes: at most %d (offset.metadata.max.bytes)", group, o.Topic, o.Partition, len(o.Metadata), maxOffsetMetadata)
		}
		c := o
		if c.CommitTime.IsZero() {
			c.CommitTime = now
		}
		c.CommitTime = time.UnixMilli(c.CommitTime.UnixMilli()).UTC() // as stored: ms, UTC
		ws[i] = pendingWrite{tp: TopicPartition{o.Topic, o.Partition}, commit: &c}
	}
	err := g.write(ctx, group, ws, func(gr *consumerGroup) error { return gr.checkCommit(gen) })
	if err != nil {
		return fmt.Errorf("commit offsets of group %s: %w", group, err)
	}
	return nil
}

// Committed returns a group's committed offsets, sorted by topic and
// partition; nil for an unknown group.
func (g *Groups) Committed(group string) []OffsetCommit {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr, ok := g.groups[group]
	if !ok {
		return nil
	}
	var out []OffsetCommit
	for _, e := range gr.offsets {
		if !e.deleted {
			out = append(out, e.commit)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return tpLess(TopicPartition{out[i].Topic, out[i].Partition}, TopicPartition{out[j].Topic, out[j].Partition})
	})
	return out
}

// CommittedOffset returns a group's committed offset of one partition.
func (g *Groups) CommittedOffset(group, topic string, partition int32) (int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr, ok := g.groups[group]
	if !ok {
		return 0, false
	}
	e, ok := gr.offsets[TopicPartition{topic, partition}]
	if !ok || e.deleted {
		return 0, false
	}
	return e.commit.Offset, true
}

// List returns the names of all groups with committed offsets or members,
// sorted.
func (g *Groups) List() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for name, gr := range g.groups {
		if gr.live() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// groupSnapshot is what Describe needs of a group, copied under the lock.
type groupSnapshot struct {
	name    string
	offsets map[TopicPartition]int64
	owners  map[TopicPartition]*member
}

func (g *Groups) snapshotLocked(gr *consumerGroup) groupSnapshot {
	s := groupSnapshot{name: gr.name, offsets: map[TopicPartition]int64{}, owners: map[TopicPartition]*member{}}
	for tp, e := range gr.offsets {
		if !e.deleted {
			s.offsets[tp] = e.commit.Offset
		}
	}
	for _, m := range gr.members {
		mc := *m
		for _, tp := range m.assignment {
			s.owners[tp] = &mc
		}
	}
	return s
}

// Describe returns one row for every partition of every topic the group has
// committed offsets for and every partition assigned to a member (with the
// member's id, host and client id, see SetMembership), sorted by topic and partition. Partitions without a commit show
// CurrentOffset -1 and Lag -1; partitions of topics that do not exist show
// LogEndOffset -1 and Lag -1. It returns ErrUnknownGroup for a group without
// commits or members.
func (g *Groups) Describe(group string) ([]PartitionLag, error) {
	g.mu.Lock()
	gr, ok := g.groups[group]
	if !ok || !gr.live() {
		g.mu.Unlock()
		return nil, fmt.Errorf("describe group %s: %w", group, ErrUnknownGroup)
	}
	s := g.snapshotLocked(gr)
	g.mu.Unlock()
	return g.describe(s), nil
}

// Lag returns the Describe rows of every group, sorted by group, topic and
// partition: the source of the kafka_consumergroup_lag metric.
func (g *Groups) Lag() []PartitionLag {
	g.mu.Lock()
	var snaps []groupSnapshot
	for _, name := range sortedKeys(g.groups) {
		if gr := g.groups[name]; gr.live() {
			snaps = append(snaps, g.snapshotLocked(gr))
		}
	}
	g.mu.Unlock()
	var out []PartitionLag
	for _, s := range snaps {
		out = append(out, g.describe(s)...)
	}
	return out
}

// describe builds the rows of one group. It calls into the Log, so it runs
// without Groups.mu.
func (g *Groups) describe(s groupSnapshot) []PartitionLag {
	tps := map[TopicPartition]bool{}
	topics := map[string]bool{}
	for tp := range s.offsets {
		tps[tp] = true
		topics[tp.Topic] = true
	}
	for tp := range s.owners {
		tps[tp] = true
		topics[tp.Topic] = true
	}
	for t := range topics {
		if n, err := g.l.Partitions(t); err == nil {
			for p := int32(0); p < int32(n); p++ {
				tps[TopicPartition{t, p}] = true
			}
		}
	}
	out := make([]PartitionLag, 0, len(tps))
	for tp := range tps {
		row := PartitionLag{Group: s.name, Topic: tp.Topic, Partition: tp.Partition, CurrentOffset: -1, LogEndOffset: -1, Lag: -1}
		if off, ok := s.offsets[tp]; ok {
			row.CurrentOffset = off
		}
		if _, end, err := g.l.Offsets(tp.Topic, tp.Partition); err == nil {
			row.LogEndOffset = end
		}
		if row.CurrentOffset >= 0 && row.LogEndOffset >= 0 {
			row.Lag = max(row.LogEndOffset-row.CurrentOffset, 0)
		}
		if m := s.owners[tp]; m != nil {
			row.ConsumerID, row.Host, row.ClientID = m.id, m.host, m.clientID
		}
		out = append(out, row)
	}
	sort.Slice(out, func(i, j int) bool {
		return tpLess(TopicPartition{out[i].Topic, out[i].Partition}, TopicPartition{out[j].Topic, out[j].Partition})
	})
	return out
}

// Delete removes a group and all its committed offsets, writing a tombstone
// for each. It refuses with ErrGroupNotEmpty while the group has members and
// returns ErrUnknownGroup for a group without commits, unless its
// coordinator retains it (Membership.Retained), which it forgets. It runs
// through every registered DeleteGuard, so the coordinator forgets the
// group too, at once.
func (g *Groups) Delete(ctx context.Context, group string) error {
	g.mu.Lock()
	guards := slices.Clone(g.guards)
	g.mu.Unlock()
	del := func() error { return g.delete(ctx, group) }
	for _, gd := range guards {
		inner := del
		del = func() error { return gd.fn(ctx, group, inner) }
	}
	return del()
}

// delete is Delete without the guards.
func (g *Groups) delete(ctx context.Context, group string) error {
	g.mu.Lock()
	gr, ok := g.groups[group]
	var ws []pendingWrite
	if ok {
		for tp, e := range gr.offsets {
			if !e.deleted {
				ws = append(ws, pendingWrite{tp: tp})
			}
		}
	}
	if len(ws) == 0 {
		if ok && gr.retained && gr.idle() {
			// Retained without offsets: nothing to write, forgotten.
			gr.retained = false
			g.pruneLocked(gr)
			g.mu.Unlock()
			return nil
		}
		g.mu.Unlock()
		return fmt.Errorf("delete group %s: %w", group, ErrUnknownGroup)
	}
	g.mu.Unlock()
	sortWrites(ws)
	err := g.write(ctx, group, ws, func(gr *consumerGroup) error {
		if err := gr.checkNoMembers("delete"); err != nil {
			return err
		}
		gr.retained = false // forgotten with its offsets
		return nil
	})
	if err != nil && !errors.Is(err, ErrGroupNotEmpty) {
		return fmt.Errorf("delete group %s: %w", group, err)
	}
	return err
}

// DeleteOffsets removes a group's committed offsets of some partitions,
// writing a tombstone for each that has one; partitions without a commit are
// ignored. It refuses with ErrGroupNotEmpty while the group has members
// (stricter than Kafka, which only refuses partitions of subscribed topics:
// the log does not know its members' subscriptions; the Kafka listener,
// which does, uses DeleteOffsetsOfUnsubscribed) and returns ErrUnknownGroup
// for a group without commits.
func (g *Groups) DeleteOffsets(ctx context.Context, group string, tps []TopicPartition) error {
	return g.deleteOffsets(ctx, group, tps, func(gr *consumerGroup) error { return gr.checkNoMembers("delete offsets of") })
}

// DeleteOffsetsOfUnsubscribed is DeleteOffsets whatever the group's
// members, for a group coordinator that knows their subscriptions and has
// left out the partitions of the topics they subscribe to, as Kafka's
// GroupCoordinator does (GROUP_SUBSCRIBED_TO_TOPIC).
func (g *Groups) DeleteOffsetsOfUnsubscribed(ctx context.Context, group string, tps []TopicPartition) error {
	return g.deleteOffsets(ctx, group, tps, nil)
}

// deleteOffsets is DeleteOffsets with check (nil: none) made on the group
// before its tombstones are written.
func (g *Groups) deleteOffsets(ctx context.Context, group string, tps []TopicPartition, check func(*consumerGroup) error) error {
	g.mu.Lock()
	gr, ok := g.groups[group]
	if !ok || !gr.live() {
		g.mu.Unlock()
		return fmt.Errorf("delete offsets of group %s: %w", group, ErrUnknownGroup)
	}
	var ws []pendingWrite
	seen := map[TopicPartition]bool{}
	for _, tp := range tps {
		if e, ok := gr.offsets[tp]; ok && !e.deleted && !seen[tp] {
			seen[tp] = true
			ws = append(ws, pendingWrite{tp: tp})
		}
	}
	g.mu.Unlock()
	sortWrites(ws)
	err := g.write(ctx, group, ws, check)
	if err != nil && !errors.Is(err, ErrGroupNotEmpty) {
		return fmt.Errorf("delete offsets of group %s: %w", group, err)
	}
	return err
}
