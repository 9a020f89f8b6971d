package kafka

// Scripts of the classic group protocol run against the listener and kfake
// by TestListener_MatchesKfake (diffScript), each checking one behaviour of
// Kafka's group coordinator (GroupCoordinator.scala; since 3.7
// GroupMetadataManager and ClassicGroup.java):
//
//   - pendingRejoinScript: a KIP-394 pending member id outlives a rebalance
//     that completes while it is pending (Kafka removes a pending member
//     only when it joins, leaves or its session timeout passes).
//   - emptyGroupScript: the state DescribeGroups and ListGroups report for a
//     group without members.
//   - staticMemberScript: KIP-345 static membership (group.instance.id).
//   - describeRejoinScript: what DescribeGroups shows of the protocol and
//     the members in each state, and a follower rejoining a Stable group
//     with unchanged metadata (no rebalance).
//   - offsetDeleteScript: OffsetDelete on groups without committed offsets.
//   - pendingSyncScript: a member that joined but never syncs is removed
//     after the rebalance timeout.
//   - staticKeptScript: static members that do not rejoin a rebalance stay
//     in the group (compared with Kafka, not kfake, which removes them).

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// groupReqs sends the classic group requests of one group by hand.
type groupReqs struct {
	ctx   context.Context
	group string
	// protocolType is "consumer" when empty.
	protocolType string
	// rebalance is the members' rebalance timeout.
	rebalance time.Duration
}

func (g groupReqs) join(cl *kgo.Client, member string, instance *string) (*kmsg.JoinGroupResponse, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.InstanceID, req.ProtocolType = g.group, member, instance, g.ptype()
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, int32(g.rebalance.Milliseconds())
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name, jp.Metadata = "range", []byte{0, 0, 0, 0, 0, 0}
	req.Protocols = append(req.Protocols, jp)
	return req.RequestWith(g.ctx, cl)
}

func (g groupReqs) ptype() string {
	if g.protocolType == "" {
		return "consumer"
	}
	return g.protocolType
}

// joinDynamic joins with the member id round trip (MEMBER_ID_REQUIRED).
func (g groupReqs) joinDynamic(cl *kgo.Client) (*kmsg.JoinGroupResponse, error) {
	r, err := g.join(cl, "", nil)
	if err != nil || r.ErrorCode != kerr.MemberIDRequired.Code {
		return r, err
	}
	return g.join(cl, r.MemberID, nil)
}

// waitRebalance heartbeats until the group is rebalancing and returns the
// last answer.
func (g groupReqs) waitRebalance(cl *kgo.Client, member string, instance *string, gen int32) string {
	hb := ""
	for range 200 {
		if hb = g.heartbeat(cl, member, instance, gen); hb != "ok" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return hb
}

// describeDetail shows what DescribeGroups tells of the group's protocol and
// of each member's metadata and assignment (by length, members sorted).
func (g groupReqs) describeDetail(cl *kgo.Client) string {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{g.group}
	r, err := req.RequestWith(g.ctx, cl)
	if err != nil || len(r.Groups) != 1 {
		return "describe: " + errName(err)
	}
	d := r.Groups[0]
	var ms []string
	for _, m := range d.Members {
		ms = append(ms, fmt.Sprintf("(metadata %d bytes, assignment %q)", len(m.ProtocolMetadata), m.MemberAssignment))
	}
	sort.Strings(ms)
	return fmt.Sprintf("describe: %s protocol type %q protocol %q members %v", d.State, d.ProtocolType, d.Protocol, ms)
}

func (g groupReqs) sync(cl *kgo.Client, member string, instance *string, gen int32, assign map[string]string) string {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = g.group, member, instance, gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr(g.ptype()), kmsg.StringPtr("range")
	for m, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m, []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	r, err := req.RequestWith(g.ctx, cl)
	if err != nil {
		return errName(err)
	}
	return fmt.Sprintf("%s assignment %q", codeName(r.ErrorCode), r.MemberAssignment)
}

func (g groupReqs) heartbeat(cl *kgo.Client, member string, instance *string, gen int32) string {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = g.group, member, instance, gen
	r, err := req.RequestWith(g.ctx, cl)
	if err != nil {
		return errName(err)
	}
	return codeName(r.ErrorCode)
}

func (g groupReqs) commit(cl *kgo.Client, member string, instance *string, gen int32) string {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = g.group, member, instance, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = "t", topicIDOf(g.ctx, cl, "t")
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 5
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r, err := req.RequestWith(g.ctx, cl)
	if err != nil {
		return errName(err)
	}
	return codeName(r.Topics[0].Partitions[0].ErrorCode)
}

func (g groupReqs) describe(cl *kgo.Client, name string) string {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{name}
	r, err := req.RequestWith(g.ctx, cl)
	if err != nil || len(r.Groups) != 1 {
		return fmt.Sprintf("describe %s: %v", name, errName(err))
	}
	d := r.Groups[0]
	return fmt.Sprintf("describe %s: %s state %s protocol type %q members %d", name, codeName(d.ErrorCode), d.State, d.ProtocolType, len(d.Members))
}

func (g groupReqs) listed(cl *kgo.Client, name string) string {
	req := kmsg.NewPtrListGroupsRequest()
	r, err := req.RequestWith(g.ctx, cl)
	if err != nil {
		return errName(err)
	}
	for _, lg := range r.Groups {
		if lg.Group == name {
			return fmt.Sprintf("list: %s %s %q", name, lg.GroupState, lg.ProtocolType)
		}
	}
	return "list: " + name + " not listed"
}

func newPeer(cl *kgo.Client, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.RequestRetries(0)}, opts...)...)
}

// pendingRejoinScript: A joins group "gpend" and syncs. B gets its member
// id (MEMBER_ID_REQUIRED) and is pending. A rejoins, which rebalances the
// group; the rebalance completes with A alone (Kafka waits for the pending
// member until the rebalance timeout, kfake does not wait; both complete
// without B). B then joins with the id it was given: Kafka keeps a pending
// member id until the member joins, leaves or its session timeout passes
// (ClassicGroup.pendingJoinMembers is not cleared by initNextGeneration),
// so the join is accepted and starts the next rebalance, which A rejoins.
func pendingRejoinScript(ctx context.Context, a *kgo.Client, _ *kadm.Client) []string {
	b, err := newPeer(a)
	if err != nil {
		return []string{errName(err)}
	}
	defer b.Close()
	g := groupReqs{ctx: ctx, group: "gpend", rebalance: time.Second}
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	r, err := g.join(a, "", nil)
	if err != nil {
		return []string{errName(err)}
	}
	aID := r.MemberID
	if r, err = g.join(a, aID, nil); err != nil {
		return []string{errName(err)}
	}
	say("A join: %s generation %d", codeName(r.ErrorCode), r.Generation)
	say("A sync: %s", g.sync(a, aID, nil, r.Generation, map[string]string{aID: "a"}))

	r, err = g.join(b, "", nil)
	if err != nil {
		return append(out, errName(err))
	}
	say("B first join: %s", codeName(r.ErrorCode))
	bID := r.MemberID

	// The leader's join rebalances; it completes without B.
	if r, err = g.join(a, aID, nil); err != nil {
		return append(out, errName(err))
	}
	say("A rejoin: %s generation %d, members %d", codeName(r.ErrorCode), r.Generation, len(r.Members))
	gen := r.Generation
	say("A sync: %s", g.sync(a, aID, nil, gen, map[string]string{aID: "a"}))

	// B joins with its pending id: accepted, A is told to rejoin.
	bDone := make(chan string, 1)
	go func() {
		r, err := g.join(b, bID, nil)
		if err != nil {
			bDone <- "B join: " + errName(err)
			return
		}
		bDone <- fmt.Sprintf("B join: %s generation %d, members %d", codeName(r.ErrorCode), r.Generation, len(r.Members))
	}()
	hb := ""
	for range 100 {
		if hb = g.heartbeat(a, aID, nil, gen); hb != "ok" {
			break
		}
		select {
		case s := <-bDone:
			say("A heartbeat: %s", hb)
			return append(out, s)
		case <-time.After(20 * time.Millisecond):
		}
	}
	say("A heartbeat while B joins: %s", hb)
	if r, err = g.join(a, aID, nil); err != nil {
		return append(out, errName(err))
	}
	say("A rejoin: %s generation %d, members %d", codeName(r.ErrorCode), r.Generation, len(r.Members))
	return append(out, <-bDone)
}

// emptyGroupScript: what DescribeGroups (v0-5) and ListGroups report for a
// group without members. Kafka keeps a group whose last member left in its
// cache as Empty, with its protocol type, whether or not it has committed
// offsets; a group without offsets goes (Dead, no longer listed) only when
// the periodic cleanup (offsets.retention.check.interval.ms, 10 minutes)
// next runs. A group that never existed is Dead, without an error, and not
// listed; a group that only has committed offsets is Empty.
//
// DescribeGroups is sent at v5, the listener's highest: from v6 (KIP-1043)
// Kafka and kfake add GROUP_ID_NOT_FOUND for a group that does not exist.
func emptyGroupScript(ctx context.Context, a *kgo.Client, _ *kadm.Client) []string {
	v5, err := newPeer(a, kgo.MaxVersions(kversion.V3_8_0()))
	if err != nil {
		return []string{errName(err)}
	}
	defer v5.Close()
	g := groupReqs{ctx: ctx, group: "gempty", rebalance: time.Second}
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	r, err := g.join(a, "", nil)
	if err != nil {
		return []string{errName(err)}
	}
	id := r.MemberID
	if r, err = g.join(a, id, nil); err != nil {
		return []string{errName(err)}
	}
	say("join: %s", codeName(r.ErrorCode))
	say("sync: %s", g.sync(a, id, nil, r.Generation, map[string]string{id: "x"}))
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Group, lr.MemberID = g.group, id
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: id}}
	if l, err := lr.RequestWith(ctx, a); err == nil {
		say("leave: %s", codeName(l.ErrorCode))
	}
	// The listener's reaper runs every 100 ms: give it a few rounds.
	time.Sleep(4 * reapInterval)
	say("%s", g.describe(v5, "gempty"))
	say("%s", g.listed(a, "gempty"))

	// Offsets only, committed from outside (a simple group).
	s := groupReqs{ctx: ctx, group: "gsimple"}
	say("commit to gsimple: %s", s.commit(a, "", nil, -1))
	say("%s", g.describe(v5, "gsimple"))
	say("%s", g.listed(a, "gsimple"))

	say("%s", g.describe(v5, "gnever"))
	say("%s", g.listed(a, "gnever"))
	return out
}

// staticMemberScript: KIP-345. A static member joins without a member id
// and is accepted at once (MEMBER_ID_REQUIRED is for dynamic members
// only). A request naming its group.instance.id with another member id is
// fenced (FENCED_INSTANCE_ID) in Heartbeat, SyncGroup and OffsetCommit; an
// unknown instance id is UNKNOWN_MEMBER_ID (ClassicGroup.validateMember).
// The instance restarting (joining again without a member id) replaces the
// old member id in a Stable group without a rebalance: same generation,
// the old assignment kept, the old id fenced from then on.
func staticMemberScript(ctx context.Context, a *kgo.Client, _ *kadm.Client) []string {
	b, err := newPeer(a)
	if err != nil {
		return []string{errName(err)}
	}
	defer b.Close()
	g := groupReqs{ctx: ctx, group: "gstatic", rebalance: time.Second}
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	inst, other := kmsg.StringPtr("i-1"), kmsg.StringPtr("i-2")

	r, err := g.join(a, "", inst)
	if err != nil {
		return []string{errName(err)}
	}
	say("static join: %s generation %d, leads %v", codeName(r.ErrorCode), r.Generation, r.LeaderID != "" && r.LeaderID == r.MemberID)
	id, gen := r.MemberID, r.Generation
	if r.ErrorCode != 0 {
		// The member id round trip, to get on with the script.
		if r, err = g.join(a, id, inst); err != nil {
			return append(out, errName(err))
		}
		say("static join with its id: %s generation %d", codeName(r.ErrorCode), r.Generation)
		gen = r.Generation
	}
	say("sync with another member id: %s", g.sync(a, "nope", inst, gen, nil))
	say("sync: %s", g.sync(a, id, inst, gen, map[string]string{id: "static"}))
	say("heartbeat: %s", g.heartbeat(a, id, inst, gen))
	say("heartbeat with another member id: %s", g.heartbeat(a, "nope", inst, gen))
	say("heartbeat with an unknown instance id: %s", g.heartbeat(a, id, other, gen))
	say("commit with another member id: %s", g.commit(a, "nope", inst, gen))
	say("commit: %s", g.commit(a, id, inst, gen))

	// The instance restarts: a new process joins without a member id.
	r, err = g.join(b, "", inst)
	if err != nil {
		return append(out, errName(err))
	}
	newID := r.MemberID
	say("restarted join: %s generation %d, new member id %v, leads %v", codeName(r.ErrorCode), r.Generation, newID != id, r.LeaderID == newID)
	say("old member heartbeat: %s", g.heartbeat(a, id, inst, gen))
	say("old member commit: %s", g.commit(a, id, inst, gen))
	say("old member sync: %s", g.sync(a, id, inst, gen, nil))
	say("new member sync: %s", g.sync(b, newID, inst, r.Generation, nil))
	say("new member heartbeat: %s", g.heartbeat(b, newID, inst, r.Generation))
	say("%s", g.describe(b, "gstatic"))
	return out
}

// describeRejoinScript: DescribeGroups shows the protocol and the members'
// metadata and assignment only while the group is Stable; in the other
// states the protocol is "" and every member's metadata and assignment are
// empty (GroupMetadata.summary: summaryNoMetadata unless Stable). A follower
// that rejoins a Stable group with the protocols it joined with gets the
// current generation at once, without a rebalance (the leader rejoining, or
// a member with other protocols, rebalances): GroupCoordinator.doJoinGroup,
// case Stable.
func describeRejoinScript(ctx context.Context, a *kgo.Client, _ *kadm.Client) []string {
	b, err := newPeer(a)
	if err != nil {
		return []string{errName(err)}
	}
	defer b.Close()
	g := groupReqs{ctx: ctx, group: "gdesc", rebalance: time.Second}
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	r, err := g.joinDynamic(a)
	if err != nil {
		return []string{errName(err)}
	}
	aID, gen := r.MemberID, r.Generation
	say("A join: %s generation %d", codeName(r.ErrorCode), gen)
	say("completing: %s", g.describeDetail(a))
	say("A sync: %s", g.sync(a, aID, nil, gen, map[string]string{aID: "a"}))
	say("stable: %s", g.describeDetail(a))

	bDone := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		r, err := g.joinDynamic(b)
		if err != nil {
			r = joinError("", -1)
		}
		bDone <- r
	}()
	say("A heartbeat while B joins: %s", g.waitRebalance(a, aID, nil, gen))
	say("preparing: %s", g.describeDetail(a))
	if r, err = g.join(a, aID, nil); err != nil {
		return append(out, errName(err))
	}
	gen = r.Generation
	say("A rejoin: %s generation %d, members %d", codeName(r.ErrorCode), gen, len(r.Members))
	rb := <-bDone
	bID := rb.MemberID
	say("B join: %s generation %d, members %d", codeName(rb.ErrorCode), rb.Generation, len(rb.Members))
	say("A sync: %s", g.sync(a, aID, nil, gen, map[string]string{aID: "a", bID: "b"}))
	say("B sync: %s", g.sync(b, bID, nil, gen, nil))

	// The follower rejoins with the same protocols: no rebalance.
	if r, err = g.join(b, bID, nil); err != nil {
		return append(out, errName(err))
	}
	say("B rejoin: %s generation %d, members %d, leader is A %v", codeName(r.ErrorCode), r.Generation, len(r.Members), r.LeaderID == aID)
	say("A heartbeat: %s", g.heartbeat(a, aID, nil, gen))
	say("B sync: %s", g.sync(b, bID, nil, r.Generation, nil))
	return append(out, "stable: "+g.describeDetail(a))
}

// offsetDeleteScript: OffsetDelete on groups without committed offsets. As
// GroupCoordinator.handleDeleteOffsets: a group the coordinator knows is
// answered by its state, offsets or not: Empty deletes (nothing to delete
// is no error), a consumer group with members refuses only the topics its
// members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC), a group of another
// protocol type with members is NON_EMPTY_GROUP; only an unknown group is
// GROUP_ID_NOT_FOUND.
func offsetDeleteScript(ctx context.Context, a *kgo.Client, _ *kadm.Client) []string {
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	del := func(group string) string {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetDeleteRequestTopicPartition()
		rp.Partition = 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r, err := req.RequestWith(ctx, a)
		if err != nil {
			return errName(err)
		}
		s := codeName(r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				s += fmt.Sprintf(", %s/%d %s", t.Topic, p.Partition, codeName(p.ErrorCode))
			}
		}
		return s
	}
	g := groupReqs{ctx: ctx, group: "gdelempty", rebalance: time.Second}
	r, err := g.joinDynamic(a)
	if err != nil {
		return []string{errName(err)}
	}
	say("join: %s", codeName(r.ErrorCode))
	say("sync: %s", g.sync(a, r.MemberID, nil, r.Generation, map[string]string{r.MemberID: "x"}))
	say("offset delete, stable consumer group: %s", del(g.group))
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Group, lr.MemberID = g.group, r.MemberID
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: r.MemberID}}
	if l, err := lr.RequestWith(ctx, a); err == nil {
		say("leave: %s", codeName(l.ErrorCode))
	}
	say("offset delete, empty group: %s", del(g.group))

	c := groupReqs{ctx: ctx, group: "gconnect", protocolType: "connect", rebalance: time.Second}
	if r, err = c.joinDynamic(a); err != nil {
		return append(out, errName(err))
	}
	say("connect join: %s", codeName(r.ErrorCode))
	say("connect sync: %s", c.sync(a, r.MemberID, nil, r.Generation, map[string]string{r.MemberID: "x"}))
	say("offset delete, stable connect group: %s", del(c.group))
	say("offset delete, unknown group: %s", del("gdelnever"))
	return out
}

// pendingSyncScript: a member that got its JoinGroup answer but sends no
// SyncGroup within the rebalance timeout is removed and the group
// rebalances (Kafka's pending sync members, KAFKA-13293:
// onExpirePendingSync), long before its session timeout.
func pendingSyncScript(ctx context.Context, a *kgo.Client, _ *kadm.Client) []string {
	b, err := newPeer(a)
	if err != nil {
		return []string{errName(err)}
	}
	defer b.Close()
	g := groupReqs{ctx: ctx, group: "gsyncexp", rebalance: time.Second}
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	r, err := g.joinDynamic(a)
	if err != nil {
		return []string{errName(err)}
	}
	aID, gen := r.MemberID, r.Generation
	say("A sync: %s", g.sync(a, aID, nil, gen, map[string]string{aID: "a"}))
	bDone := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		r, err := g.joinDynamic(b)
		if err != nil {
			r = joinError("", -1)
		}
		bDone <- r
	}()
	say("A heartbeat while B joins: %s", g.waitRebalance(a, aID, nil, gen))
	if r, err = g.join(a, aID, nil); err != nil {
		return append(out, errName(err))
	}
	gen = r.Generation
	say("A rejoin: %s generation %d, members %d", codeName(r.ErrorCode), gen, len(r.Members))
	rb := <-bDone
	bID := rb.MemberID
	say("B join: %s generation %d", codeName(rb.ErrorCode), rb.Generation)
	say("A sync: %s", g.sync(a, aID, nil, gen, map[string]string{aID: "a", bID: "b"}))
	// B never syncs: after the rebalance timeout it is removed.
	time.Sleep(g.rebalance + 5*reapInterval)
	say("A heartbeat after the rebalance timeout: %s", g.heartbeat(a, aID, nil, gen))
	if r, err = g.join(a, aID, nil); err != nil {
		return append(out, errName(err))
	}
	say("A rejoin: %s generation %d, members %d", codeName(r.ErrorCode), r.Generation, len(r.Members))
	say("B heartbeat: %s", g.heartbeat(b, bID, nil, gen))
	return out
}

// staticKeptScript: KIP-345. When a rebalance completes, the members that
// did not rejoin are removed only if they are dynamic; a static member
// stays (GroupCoordinator.onCompleteJoin: notYetRejoinedDynamicMembers), the
// leader gets its metadata and assigns to it. It then has the rebalance
// timeout to sync (pending sync), which it does after rejoining with its
// member id: as a follower with unchanged protocols it gets the current
// generation without a rebalance, and the leader's assignment.
func staticKeptScript(ctx context.Context, a *kgo.Client, _ *kadm.Client) []string {
	b, err := newPeer(a)
	if err != nil {
		return []string{errName(err)}
	}
	defer b.Close()
	g := groupReqs{ctx: ctx, group: "gstatickept", rebalance: time.Second}
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	i1, i2 := kmsg.StringPtr("s-1"), kmsg.StringPtr("s-2")

	r, err := g.join(a, "", i1)
	if err != nil {
		return []string{errName(err)}
	}
	id1, gen := r.MemberID, r.Generation
	say("S1 join: %s generation %d", codeName(r.ErrorCode), gen)
	say("S1 sync: %s", g.sync(a, id1, i1, gen, map[string]string{id1: "1"}))
	s2Done := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		r, err := g.join(b, "", i2)
		if err != nil {
			r = joinError("", -1)
		}
		s2Done <- r
	}()
	say("S1 heartbeat while S2 joins: %s", g.waitRebalance(a, id1, i1, gen))
	if r, err = g.join(a, id1, i1); err != nil {
		return append(out, errName(err))
	}
	gen = r.Generation
	say("S1 rejoin: %s generation %d, members %d", codeName(r.ErrorCode), gen, len(r.Members))
	r2 := <-s2Done
	id2 := r2.MemberID
	say("S2 join: %s generation %d", codeName(r2.ErrorCode), r2.Generation)
	say("S1 sync: %s", g.sync(a, id1, i1, gen, map[string]string{id1: "1", id2: "2"}))
	say("S2 sync: %s", g.sync(b, id2, i2, gen, nil))

	// The leader rejoins; S2 does not, and the rebalance times out.
	if r, err = g.join(a, id1, i1); err != nil {
		return append(out, errName(err))
	}
	say("S1 rejoin alone: %s generation %d, members %d", codeName(r.ErrorCode), r.Generation, len(r.Members))
	old, gen := gen, r.Generation
	say("S1 sync: %s", g.sync(a, id1, i1, gen, map[string]string{id1: "1", id2: "2b"}))
	say("S2 heartbeat of the old generation: %s", g.heartbeat(b, id2, i2, old))
	if r, err = g.join(b, id2, i2); err != nil {
		return append(out, errName(err))
	}
	say("S2 rejoin: %s generation %d", codeName(r.ErrorCode), r.Generation)
	say("S2 sync: %s", g.sync(b, id2, i2, r.Generation, nil))
	say("S1 heartbeat: %s", g.heartbeat(a, id1, i1, gen))
	return append(out, g.describeDetail(a))
}
