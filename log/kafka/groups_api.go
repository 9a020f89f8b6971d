package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	codeCoordinatorNotAvailable   = kerr.CoordinatorNotAvailable.Code
	codeRebalanceInProgress       = kerr.RebalanceInProgress.Code
	codeUnknownMemberID           = kerr.UnknownMemberID.Code
	codeIllegalGeneration         = kerr.IllegalGeneration.Code
	codeInconsistentGroupProtocol = kerr.InconsistentGroupProtocol.Code
	codeInvalidGroupID            = kerr.InvalidGroupID.Code
	codeFencedInstanceID          = kerr.FencedInstanceID.Code
)

func joinError(memberID string, code int16) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode, resp.MemberID, resp.Generation = code, memberID, -1
	return resp
}

// joinGroup answers JoinGroup, once the rebalance it starts or joins
// completes (or at once with an error).
func (c *coordinator) joinGroup(ctx context.Context, cc *conn, clientID string, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		rebalance = session
	}
	switch {
	case req.Group == "":
		return joinError(req.MemberID, codeInvalidGroupID)
	case session < c.minSession() || session > maxSessionTimeout:
		return joinError(req.MemberID, kerr.InvalidSessionTimeout.Code)
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		return joinError(req.MemberID, codeInconsistentGroupProtocol)
	}
	g := c.group(req.Group, true)
	g.mu.Lock()
	if g.state == stateDead {
		g.mu.Unlock()
		return joinError(req.MemberID, codeCoordinatorNotAvailable)
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols, req.MemberID) {
		g.mu.Unlock()
		return joinError(req.MemberID, codeInconsistentGroupProtocol)
	}
	id := req.MemberID
	m := g.members[id]
	var static *member // the member holding the request's group.instance.id
	if req.InstanceID != nil {
		static = g.staticMember(*req.InstanceID)
	}
	_, pending := g.pending[id]
	replaced := false
	switch {
	case id == "" && static != nil:
		// KIP-345: the static member's instance restarted.
		m = c.replaceStatic(g, static, newMemberID(*req.InstanceID))
		id, replaced = m.id, true
	case id == "" && req.InstanceID != nil:
		// Static members join at once: the member id round trip of
		// KIP-394 is for dynamic members only, as in Kafka.
		id = newMemberID(*req.InstanceID)
	case id == "":
		id = newMemberID(clientID)
		if req.Version >= 4 {
			// KIP-394: hand out the id first; the member joins with it.
			g.pending[id] = c.now().Add(session)
			g.mu.Unlock()
			return joinError(id, kerr.MemberIDRequired.Code)
		}
	case pending && m == nil:
		delete(g.pending, id)
	case req.InstanceID != nil && static != nil && static.id != id:
		g.mu.Unlock()
		return joinError(id, codeFencedInstanceID)
	case m == nil || (req.InstanceID != nil && static == nil):
		g.mu.Unlock()
		return joinError(id, codeUnknownMemberID)
	}
	if m != nil && !replaced && m.sameProtocols(req.Protocols) &&
		(g.state == stateCompletingRebalance || (g.state == stateStable && id != g.leader)) {
		// As Kafka (GroupCoordinator.doJoinGroup): a member that rejoins
		// with the protocols it joined with, while the group completes
		// its rebalance or, unless it leads, while it is Stable, gets the
		// current generation without a rebalance (it may have missed its
		// JoinGroup answer). The leader rejoining a Stable group
		// rebalances: that is how a consumer leader asks for a new
		// assignment when topics change. Nothing of the member changes.
		resp := g.currentJoin(id)
		g.mu.Unlock()
		return resp
	}
	if m == nil {
		g.joinSeq++
		m = &member{id: id, joinSeq: g.joinSeq}
		g.members[id] = m
	}
	if len(g.members) == 1 {
		g.protocolType = req.ProtocolType
	}
	m.clientID, m.host = clientID, cc.host
	if req.InstanceID != nil {
		m.instanceID = *req.InstanceID
	}
	m.sessionTimeout, m.rebalanceTimeout = session, rebalance
	m.protocols = append([]kmsg.JoinGroupRequestProtocol(nil), req.Protocols...)
	m.deadline = c.now().Add(session)
	if replaced && g.state == stateStable && selectProtocol(g.members) == g.protocol {
		// As Kafka: a static member that rejoins a Stable group without
		// changing its protocol gets the current generation and keeps its
		// assignment, without a rebalance. Its leader is told to skip the
		// assignment (KIP-814, JoinGroup v9).
		resp := g.currentJoin(id)
		resp.SkipAssignment = id == g.leader
		c.publish(g)
		g.mu.Unlock()
		return resp
	}
	if m.join != nil { // a retried join replaces the one waiting
		m.join <- joinError(id, codeRebalanceInProgress)
	}
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	m.join = ch
	if g.state != statePreparingRebalance {
		c.prepareRebalance(g, "member "+id+" joined")
	}
	c.tryCompleteJoin(g)
	c.publish(g)
	g.mu.Unlock()

	select {
	case resp := <-ch:
		return resp
	case <-ctx.Done():
		return joinError(id, codeCoordinatorNotAvailable)
	}
}

func (c *coordinator) minSession() time.Duration {
	if c.s.opts.GroupMinSessionTimeout > 0 {
		return c.s.opts.GroupMinSessionTimeout
	}
	return minSessionTimeout
}

// syncGroup answers SyncGroup: followers wait for the leader's assignment.
func (c *coordinator) syncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	g := c.group(req.Group, false)
	if g == nil {
		resp.ErrorCode = codeUnknownMemberID
		return resp
	}
	g.mu.Lock()
	m := g.members[req.MemberID]
	switch code := g.validateMember(req.MemberID, req.InstanceID); {
	case code != 0:
		resp.ErrorCode = code
	case req.Generation != g.generation:
		resp.ErrorCode = codeIllegalGeneration
	case (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol):
		resp.ErrorCode = codeInconsistentGroupProtocol
	case g.state == statePreparingRebalance:
		resp.ErrorCode = codeRebalanceInProgress
	case g.state == stateStable:
		delete(g.pendingSync, m.id)
		m.deadline = c.now().Add(m.sessionTimeout)
		resp.MemberAssignment = m.assignment
	case g.state == stateCompletingRebalance:
		delete(g.pendingSync, m.id)
		ch := make(chan syncResult, 1)
		if m.sync != nil {
			m.sync <- syncResult{code: codeRebalanceInProgress}
		}
		m.sync = ch
		m.deadline = c.now().Add(m.sessionTimeout)
		if m.id == g.leader {
			assigned := map[string][]byte{}
			for _, a := range req.GroupAssignment {
				assigned[a.MemberID] = a.MemberAssignment
			}
			for id, mm := range g.members {
				mm.assignment = assigned[id]
				if mm.sync != nil {
					mm.sync <- syncResult{assignment: mm.assignment}
					mm.sync = nil
					mm.deadline = c.now().Add(mm.sessionTimeout)
				}
			}
			g.state = stateStable
			c.publish(g)
		}
		g.mu.Unlock()
		var r syncResult
		select {
		case r = <-ch:
		case <-ctx.Done():
			r = syncResult{code: codeCoordinatorNotAvailable}
		}
		resp.ErrorCode, resp.MemberAssignment = r.code, r.assignment
		c.setSyncProtocol(g, resp)
		return resp
	default:
		resp.ErrorCode = codeUnknownMemberID
	}
	g.mu.Unlock()
	c.setSyncProtocol(g, resp)
	return resp
}

func (c *coordinator) setSyncProtocol(g *group, resp *kmsg.SyncGroupResponse) {
	g.mu.Lock()
	resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
	g.mu.Unlock()
}

// heartbeat answers Heartbeat and keeps the member's session alive.
func (c *coordinator) heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	g := c.group(req.Group, false)
	if g == nil {
		resp.ErrorCode = codeUnknownMemberID
		return resp
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[req.MemberID]
	if m != nil && m.sessionExpired(c.now()) {
		// The session ended before the reaper's next round: the member
		// is gone now, as Kafka's session timer would have removed it.
		c.s.logger.Info("kafka group member session expired", "group", g.name, "member", m.id, "session_timeout", m.sessionTimeout)
		c.removeMember(g, m, "session timeout")
		m = nil
	}
	switch code := g.validateMember(req.MemberID, req.InstanceID); {
	case code != 0:
		resp.ErrorCode = code
	case req.Generation != g.generation:
		resp.ErrorCode = codeIllegalGeneration
	case g.state == statePreparingRebalance:
		m.deadline = c.now().Add(m.sessionTimeout)
		resp.ErrorCode = codeRebalanceInProgress
	default:
		m.deadline = c.now().Add(m.sessionTimeout)
	}
	return resp
}

// leaveGroup answers LeaveGroup (v3+: several members, by member or
// instance id) and rebalances the rest.
func (c *coordinator) leaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	g := c.group(req.Group, false)
	if g == nil {
		resp.ErrorCode = codeUnknownMemberID
		return resp
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, l := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = l.MemberID, l.InstanceID
		// As Kafka's classic group leave: a static member may be removed
		// by its instance id alone (kafka-consumer-groups.sh
		// --delete-members); a pending member id is forgotten; otherwise
		// the member id must match the instance id's member.
		var m *member
		_, pending := g.pending[l.MemberID]
		switch {
		case l.MemberID == "":
			if l.InstanceID != nil {
				m = g.staticMember(*l.InstanceID)
			}
			if m == nil {
				rm.ErrorCode = codeUnknownMemberID
			}
		case pending:
			delete(g.pending, l.MemberID)
			c.tryCompleteJoin(g)
		default:
			if rm.ErrorCode = g.validateMember(l.MemberID, l.InstanceID); rm.ErrorCode == 0 {
				m = g.members[l.MemberID]
			}
		}
		if req.Version < 3 {
			resp.ErrorCode = rm.ErrorCode
		}
		if m != nil {
			c.removeMember(g, m, "member "+m.id+" left")
		}
		if req.Version >= 3 {
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp
}

// offsetCommit answers OffsetCommit, checking the member and generation.
// The group's lock is held across the durable append.
func (c *coordinator) offsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	code := int16(0)
	var g *group
	if req.Group == "" {
		code = codeInvalidGroupID
	} else {
		g = c.lockGroup(req.Group)
	}
	if g != nil {
		defer g.mu.Unlock()
		code = c.checkCommit(g, req)
	} else if code == 0 && req.Generation >= 0 {
		// Kafka: a generation of a group the coordinator does not know
		// is an old one; generation -1 commits from outside.
		code = codeIllegalGeneration
	}
	var commits []tlog.OffsetCommit
	type at struct{ t, p int }
	var where []at
	now := c.now()
	for ti, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		// As Kafka (KafkaApis.handleOffsetCommitRequest), a partition that
		// does not exist is answered UNKNOWN_TOPIC_OR_PARTITION, before the
		// group is looked at, and nothing is stored for it: a misspelt
		// topic in a reset fails instead of leaving offsets that a topic
		// created later under that name would start from.
		partitions, topicCode := c.metadataPartitions(t.Topic)
		for pi, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code
			md := ""
			if p.Metadata != nil {
				md = *p.Metadata
			}
			switch {
			case topicCode != 0:
				rp.ErrorCode = topicCode
			case tlog.ValidateTopicName(t.Topic) == nil && (p.Partition < 0 || int(p.Partition) >= partitions):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case code != 0:
			case len(md) > 4096:
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			case tlog.ValidateTopicName(t.Topic) != nil:
				rp.ErrorCode = kerr.InvalidTopicException.Code
			case p.Offset < 0:
				rp.ErrorCode = kerr.InvalidCommitOffsetSize.Code
			default:
				ts := now
				if p.Timestamp > 0 {
					ts = time.UnixMilli(p.Timestamp)
				}
				commits = append(commits, tlog.OffsetCommit{Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, Metadata: md, CommitTime: ts})
				where = append(where, at{ti, pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(commits) > 0 {
		// The coordinator checked the member and generation above; the log
		// checks them again against what publish told it (the same, under
		// g.mu), and refuses a commit from outside a group with members.
		var err error
		if req.Generation >= 0 {
			err = c.s.log.Groups().CommitMember(ctx, req.Group, req.MemberID, req.Generation, commits)
		} else {
			err = c.s.log.Groups().Commit(ctx, req.Group, commits)
		}
		if err != nil {
			ec := errorCode(err)
			if errors.Is(err, context.Canceled) {
				ec = codeCoordinatorNotAvailable
			}
			for _, w := range where {
				resp.Topics[w.t].Partitions[w.p].ErrorCode = ec
			}
			c.s.logger.Warn("kafka offset commit failed", "group", req.Group, "error", err)
		}
	}
	return resp
}

// metadataPartitions is how many partitions of a topic the metadata lists,
// 0 for an unknown topic, or the error code for all of them (the log is
// closing): the partitions that take commits and whose offsets can be
// deleted. As Kafka's, which takes both for any partition of its metadata,
// leader or not, a topic the log left closed (its partitions offline, see
// not_opened.go) counts its partitions.
func (c *coordinator) metadataPartitions(topic string) (int, int16) {
	partitions, err := c.s.log.Partitions(topic)
	var notOpened *tlog.TopicNotOpenedError
	switch {
	case err == nil:
		return partitions, 0
	case errors.As(err, &notOpened):
		return notOpened.Partitions, 0
	case errors.Is(err, tlog.ErrUnknownTopic):
		return 0, 0
	}
	return 0, errorCode(err)
}

// lockGroup returns a group known to the coordinator, locked, or nil. A
// group reaped (Dead) between the lookup and the lock is looked up again:
// Kafka answers COORDINATOR_NOT_AVAILABLE for it and the client retries;
// here the retry is the next lookup.
func (c *coordinator) lockGroup(name string) *group {
	for {
		g := c.group(name, false)
		if g == nil {
			return nil
		}
		g.mu.Lock()
		if g.state != stateDead {
			return g
		}
		g.mu.Unlock()
	}
}

// checkCommit decides whether a commit may go ahead, as Kafka's
// coordinator does (GroupCoordinator.validateOffsetCommit). It runs under
// g.mu and refreshes the member's session.
//
// Generation -1 commits from outside the group (kadm's CommitOffsets,
// kafka-consumer-groups.sh --reset-offsets), whatever the member id: it is
// accepted while the group is Empty and refused with UNKNOWN_MEMBER_ID in
// any other state. A member id still pending (KIP-394: handed out, its
// join not come yet) does not make the group non-empty: a group whose last
// member left while another is pending is Empty and takes them.
//
// A commit naming a group.instance.id (OffsetCommit v7+) must come from the
// member holding it: FENCED_INSTANCE_ID otherwise (validateMember).
func (c *coordinator) checkCommit(g *group, req *kmsg.OffsetCommitRequest) int16 {
	if req.Generation < 0 && g.state == stateEmpty && len(g.members) == 0 {
		return 0
	}
	if req.Generation < 0 && req.MemberID == "" && req.InstanceID == nil {
		return codeUnknownMemberID
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	switch {
	case req.Generation != g.generation:
		return codeIllegalGeneration
	case g.state == stateCompletingRebalance:
		return codeRebalanceInProgress
	}
	m := g.members[req.MemberID]
	m.deadline = c.now().Add(m.sessionTimeout)
	return 0
}

// offsetFetch answers OffsetFetch for one group (v0-7) or several (v8).
// Partitions without a commit get offset -1; a null topic list means every
// committed partition.
func (c *coordinator) offsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	type want struct {
		topic string
		parts []int32
	}
	lookup := func(group string, wants []want, all bool) map[string][]kmsg.OffsetFetchResponseTopicPartition {
		committed := map[tlog.TopicPartition]tlog.OffsetCommit{}
		var order []tlog.TopicPartition
		for _, oc := range c.s.log.Groups().Committed(group) {
			tp := tlog.TopicPartition{Topic: oc.Topic, Partition: oc.Partition}
			committed[tp] = oc
			order = append(order, tp)
		}
		out := map[string][]kmsg.OffsetFetchResponseTopicPartition{}
		add := func(tp tlog.TopicPartition) {
			p := kmsg.NewOffsetFetchResponseTopicPartition()
			p.Partition, p.Offset, p.LeaderEpoch = tp.Partition, -1, -1
			p.Metadata = kmsg.StringPtr("")
			if oc, ok := committed[tp]; ok {
				p.Offset, p.Metadata = oc.Offset, kmsg.StringPtr(oc.Metadata)
			}
			out[tp.Topic] = append(out[tp.Topic], p)
		}
		if all {
			for _, tp := range order {
				add(tp)
			}
			return out
		}
		for _, w := range wants {
			if _, ok := out[w.topic]; !ok {
				out[w.topic] = nil
			}
			for _, p := range w.parts {
				add(tlog.TopicPartition{Topic: w.topic, Partition: p})
			}
		}
		return out
	}
	sortedTopics := func(m map[string][]kmsg.OffsetFetchResponseTopicPartition) []string {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		return names
	}
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			gr := kmsg.NewOffsetFetchResponseGroup()
			gr.Group = rg.Group
			var wants []want
			for _, t := range rg.Topics {
				wants = append(wants, want{t.Topic, t.Partitions})
			}
			res := lookup(rg.Group, wants, rg.Topics == nil)
			for _, n := range sortedTopics(res) {
				t := kmsg.NewOffsetFetchResponseGroupTopic()
				t.Topic = n
				for _, p := range res[n] {
					t.Partitions = append(t.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{
						Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata,
					})
				}
				gr.Topics = append(gr.Topics, t)
			}
			resp.Groups = append(resp.Groups, gr)
		}
		return resp
	}
	var wants []want
	for _, t := range req.Topics {
		wants = append(wants, want{t.Topic, t.Partitions})
	}
	res := lookup(req.Group, wants, req.Topics == nil)
	for _, n := range sortedTopics(res) {
		t := kmsg.NewOffsetFetchResponseTopic()
		t.Topic, t.Partitions = n, res[n]
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// groupView is what ListGroups and DescribeGroups show of a group.
type groupView struct {
	state, protocolType, protocol string
	members                       []kmsg.DescribeGroupsResponseGroupMember
}

// view describes a group: the coordinator's state when it has one (Empty
// for a group whose last member left, with or without committed offsets,
// as Kafka keeps it until its cleanup), else Empty for a group with
// committed offsets, else Dead (a group Kafka does not know).
func (c *coordinator) view(name string, committed map[string]bool) groupView {
	if g := c.group(name, false); g != nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.state != stateDead {
			// As Kafka's GroupMetadata.summary: the protocol and the
			// members' metadata and assignments only while Stable; in
			// the other states they are being renegotiated, and the
			// protocol is "" and each member's are empty.
			stable := g.state == stateStable
			v := groupView{state: g.state.String(), protocolType: g.protocolType}
			if stable {
				v.protocol = g.protocol
			}
			for _, m := range sortedMembers(g.members) {
				dm := kmsg.NewDescribeGroupsResponseGroupMember()
				dm.MemberID, dm.ClientID, dm.ClientHost = m.id, m.clientID, "/"+m.host
				if m.instanceID != "" {
					dm.InstanceID = kmsg.StringPtr(m.instanceID)
				}
				if stable {
					dm.ProtocolMetadata, dm.MemberAssignment = m.metadata(g.protocol), m.assignment
				}
				v.members = append(v.members, dm)
			}
			return v
		}
	}
	if committed[name] {
		return groupView{state: stateEmpty.String()}
	}
	return groupView{state: stateDead.String()}
}

func (c *coordinator) committedGroups() map[string]bool {
	out := map[string]bool{}
	for _, n := range c.s.log.Groups().List() {
		out[n] = true
	}
	return out
}

// listGroups answers ListGroups: groups with members or committed offsets.
func (c *coordinator) listGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	committed := c.committedGroups()
	names := map[string]bool{}
	for n := range committed {
		names[n] = true
	}
	c.mu.Lock()
	for n := range c.groups {
		names[n] = true
	}
	c.mu.Unlock()
	states := map[string]bool{}
	for _, s := range req.StatesFilter {
		states[s] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		v := c.view(n, committed)
		if v.state == stateDead.String() || (len(states) > 0 && !states[v.state]) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = n, v.protocolType, v.state, "classic"
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}

// describeGroups answers DescribeGroups. Unknown groups are Dead, without
// an error, as Kafka answers.
func (c *coordinator) describeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	committed := c.committedGroups()
	for _, n := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = n
		if n == "" {
			dg.ErrorCode = codeInvalidGroupID
		} else {
			v := c.view(n, committed)
			dg.State, dg.ProtocolType, dg.Protocol, dg.Members = v.state, v.protocolType, v.protocol, v.members
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// deleteGroups answers DeleteGroups: only groups without members.
func (c *coordinator) deleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, n := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = n
		dg.ErrorCode = c.deleteGroup(ctx, n)
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (c *coordinator) deleteGroup(ctx context.Context, name string) int16 {
	if name == "" {
		return codeInvalidGroupID
	}
	// The log's Delete runs through guardDelete, which checks and forgets
	// the coordinator's group: the same path as tributary groups delete.
	err := c.s.log.Groups().Delete(ctx, name)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, tlog.ErrGroupNotEmpty):
		return kerr.NonEmptyGroup.Code
	case errors.Is(err, tlog.ErrUnknownGroup):
		return kerr.GroupIDNotFound.Code
	}
	return errorCode(err)
}

// guardDelete is the coordinator's tlog.DeleteGuard: every deletion of a
// group, by DeleteGroups or through the log (tributary groups delete, the
// REST endpoint), runs here, so that both refuse alike and a deleted group
// is gone from ListGroups and DescribeGroups at once, as Kafka's
// DeleteGroups removes it from the coordinator, rather than Empty until
// emptyGroupRetention. The group stays locked while the log deletes its
// offsets, so no member joins in between (a join after it starts a new
// group). A group the coordinator knows but the log does not (Empty,
// without offsets) is deleted without error.
func (c *coordinator) guardDelete(ctx context.Context, name string, del func() error) error {
	g := c.lockGroup(name)
	if g == nil {
		return del()
	}
	if len(g.members) > 0 || g.state != stateEmpty {
		n, st := len(g.members), g.state
		g.mu.Unlock()
		return fmt.Errorf("delete group %s: %w (%d, state %s); stop its consumers first", name, tlog.ErrGroupNotEmpty, n, st)
	}
	if err := del(); err != nil && !errors.Is(err, tlog.ErrUnknownGroup) {
		g.mu.Unlock()
		return err
	}
	// Kafka removes the group (pending member ids too): it is Dead, and a
	// join after this starts a new one. Lock order: c.mu before g.mu.
	g.state = stateDead
	c.publish(g)
	g.mu.Unlock()
	c.mu.Lock()
	if c.groups[name] == g {
		delete(c.groups, name)
	}
	c.mu.Unlock()
	return nil
}

// offsetDelete answers OffsetDelete. As KafkaApis.handleOffsetDeleteRequest,
// a partition the metadata does not list (of an unknown topic, or past a
// topic's count) is UNKNOWN_TOPIC_OR_PARTITION, before the group looks at
// it; the group refuses the partitions of topics its members subscribe to
// (GROUP_SUBSCRIBED_TO_TOPIC). An error of the group answers for all.
func (c *coordinator) offsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	// As GroupCoordinator.handleDeleteOffsets: a group the coordinator
	// knows is answered by its state, with committed offsets or not. Empty
	// deletes every partition asked (none committed is no error); with
	// members, a consumer group keeps the topics they subscribe to and any
	// other protocol type refuses (NON_EMPTY_GROUP). A group only the log
	// knows (committed offsets, no coordinator state) is Empty; one neither
	// knows is GROUP_ID_NOT_FOUND.
	subscribed := map[string]bool{}
	known := false
	if g := c.lockGroup(req.Group); g != nil {
		known = true
		if g.state != stateEmpty && g.protocolType != "consumer" {
			g.mu.Unlock()
			resp.ErrorCode = kerr.NonEmptyGroup.Code
			return resp
		}
		for _, m := range g.members {
			var md kmsg.ConsumerMemberMetadata
			if md.ReadFrom(m.metadata(g.protocol)) == nil {
				for _, t := range md.Topics {
					subscribed[t] = true
				}
			}
		}
		g.mu.Unlock()
	}
	if !known && !c.committedGroups()[req.Group] {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	var tps []tlog.TopicPartition
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		partitions, topicCode := c.metadataPartitions(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case topicCode != 0:
				rp.ErrorCode = topicCode
			case p.Partition < 0 || int(p.Partition) >= partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case subscribed[t.Topic]:
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				tps = append(tps, tlog.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(tps) > 0 {
		if err := c.s.log.Groups().DeleteOffsetsOfUnsubscribed(ctx, req.Group, tps); err != nil && !errors.Is(err, tlog.ErrUnknownGroup) {
			resp.ErrorCode = errorCode(err)
		}
	}
	return resp
}
