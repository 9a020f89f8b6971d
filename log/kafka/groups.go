package kafka

// The group coordinator: Kafka's classic consumer group protocol
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) on top of the log's
// committed offsets (log.Groups).
//
// # State machine (as Kafka's GroupCoordinator)
//
//	Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
//	  ▲                  ▲      ▲                                     │ leader's SyncGroup
//	  │ last member      │      └──────── join, leave, expiry ────────┤
//	  └─ leaves/expires ─┴──────────────── join, leave, expiry ─── Stable
//
// A rebalance completes when every known member has rejoined, or when the
// rebalance timeout (the largest of the members') passes; dynamic members
// that did not rejoin by then are removed, static ones (KIP-345) stay. Every
// member then has the rebalance timeout to send its SyncGroup, or is removed
// and the group rebalances (Kafka's pending sync). The first rebalance of an empty group
// waits Options.InitialRebalanceDelay for more members (Kafka's
// group.initial.rebalance.delay.ms). Completing bumps the generation and
// answers every waiting JoinGroup; the leader gets the members' metadata,
// computes the assignment and sends it in its SyncGroup, which answers
// every waiting SyncGroup. Members that miss their session timeout (no
// heartbeat, sync or commit) are removed and the group rebalances; a member
// whose JoinGroup or SyncGroup waits is not (as Kafka, it cannot heartbeat
// meanwhile), the rebalance and pending-sync deadlines bound those waits.
//
// Offset commits from members are checked against the generation: only a
// current member of the current generation may commit, and not while the
// group completes a rebalance; commits from outside (generation -1) only
// while the group is Empty. A group whose last member left while another
// is pending (its member id handed out, its join not come yet) is Empty at
// once (the rebalance timeout of no members is 0, as Kafka's DelayedJoin),
// and the pending id stays valid until its session timeout.
//
// Static members (KIP-345, group.instance.id) join without the member id
// round trip; an instance that rejoins without a member id replaces its
// old member id, which is fenced (FENCED_INSTANCE_ID) from then on.
//
// # Concurrency
//
// coordinator.mu guards the groups map only; group.mu guards one group.
// Lock order: coordinator.mu, then group.mu. group.mu is held across the
// durable append of an offset commit, so that a commit and a rebalance of
// the same group never interleave; the only other call into the log under
// it is publish (Groups.SetMembership, whose lock is a leaf). Blocked JoinGroup and SyncGroup requests wait on a channel of their
// member, never under a lock.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"sync"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type groupState int

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

func (s groupState) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

// Session timeout bounds, Kafka's group.min/max.session.timeout.ms.
const (
	minSessionTimeout = 6 * time.Second
	maxSessionTimeout = 30 * time.Minute
	reapInterval      = 100 * time.Millisecond
	// emptyGroupRetention is how long a group without members, pending
	// members or committed offsets is still known (DescribeGroups and
	// ListGroups say Empty). Kafka removes such a group at its next
	// cleanup, every offsets.retention.check.interval.ms (10 minutes);
	// until then it is Empty, not Dead. A group with committed offsets is
	// Empty regardless, from the log.
	emptyGroupRetention = 10 * time.Minute
)

type coordinator struct {
	s *Server

	mu     sync.Mutex // guards groups; taken before any group.mu
	groups map[string]*group
}

type group struct {
	mu sync.Mutex // guards every field below

	name         string
	state        groupState
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	// pending are member ids handed out with MEMBER_ID_REQUIRED (JoinGroup
	// v4+) whose join has not come yet, with the time they expire. As in
	// Kafka, an id stays pending across rebalances until its member joins
	// or leaves, or its session timeout passes; a rebalance waits for it
	// only until its rebalance timeout.
	pending map[string]time.Time
	// emptySince is when the group last became Empty (or was created). An
	// Empty group is kept, and described as Empty, for emptyGroupRetention
	// after that, as Kafka keeps it until its periodic cleanup.
	emptySince time.Time
	// pendingSync are the members that got the JoinGroup answer of the
	// current generation and have not sent a SyncGroup of it yet; those
	// left at syncDeadline (the rebalance timeout after the join
	// completed) are removed and the group rebalances, Stable or not, as
	// Kafka's pending sync members (onExpirePendingSync).
	pendingSync  map[string]bool
	syncDeadline time.Time
	// rebalanceDeadline ends PreparingRebalance; delayed is set while the
	// first rebalance of an empty group waits for more members.
	rebalanceDeadline time.Time
	delayed           bool
	joinSeq           int
}

type member struct {
	id, instanceID, clientID, host string
	sessionTimeout                 time.Duration
	rebalanceTimeout               time.Duration
	protocols                      []kmsg.JoinGroupRequestProtocol
	assignment                     []byte
	deadline                       time.Time // session expiry
	joinSeq                        int       // order of first join: the leader is the oldest member
	// join and sync are set while a JoinGroup or SyncGroup of the member
	// waits; each is answered exactly once (buffered, never blocks).
	join chan *kmsg.JoinGroupResponse
	sync chan syncResult
}

// sessionExpired reports whether the member missed its session timeout. A
// member whose JoinGroup or SyncGroup waits is not expired: it cannot
// heartbeat while its connection is blocked, and Kafka counts it as
// heartbeating (MemberMetadata.hasSatisfiedHeartbeat). A waiting JoinGroup
// is bounded by the rebalance deadline, a waiting SyncGroup by the leader's
// pending-sync deadline; answering either restarts the session.
func (m *member) sessionExpired(now time.Time) bool {
	return m.join == nil && m.sync == nil && now.After(m.deadline)
}

type syncResult struct {
	code       int16
	assignment []byte
}

func newCoordinator(s *Server) *coordinator {
	return &coordinator{s: s, groups: map[string]*group{}}
}

func (c *coordinator) now() time.Time { return c.s.opts.Now() }

// group returns a group's state, creating it when create is set.
func (c *coordinator) group(name string, create bool) *group {
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[name]
	if !ok && create {
		g = &group{name: name, members: map[string]*member{}, pending: map[string]time.Time{}, emptySince: c.now()}
		c.groups[name] = g
	}
	return g
}

// reapLoop expires members and ends rebalances whose time is up, until ctx
// ends. The Server owns it.
func (c *coordinator) reapLoop(ctx context.Context) {
	t := time.NewTicker(reapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.abortAll()
			return
		case <-t.C:
			c.reap()
		}
	}
}

func (c *coordinator) reap() {
	c.mu.Lock()
	groups := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	now := c.now()
	for _, g := range groups {
		g.mu.Lock()
		for id, m := range g.members {
			if m.sessionExpired(now) {
				c.s.logger.Info("kafka group member session expired", "group", g.name, "member", id, "session_timeout", m.sessionTimeout)
				c.removeMember(g, m, "session timeout")
			}
		}
		for id, exp := range g.pending {
			if now.After(exp) {
				delete(g.pending, id)
				c.tryCompleteJoin(g)
			}
		}
		if g.state == statePreparingRebalance && !now.Before(g.rebalanceDeadline) {
			c.completeJoin(g)
		}
		if (g.state == stateCompletingRebalance || g.state == stateStable) && len(g.pendingSync) > 0 && !now.Before(g.syncDeadline) {
			c.expirePendingSync(g)
		}
		g.mu.Unlock()
	}
	// Forget groups Empty for emptyGroupRetention: their committed
	// offsets live in the log, which describes them as Empty from then on.
	c.mu.Lock()
	for name, g := range c.groups {
		g.mu.Lock()
		if g.state == stateEmpty && len(g.members) == 0 && len(g.pending) == 0 && now.Sub(g.emptySince) >= emptyGroupRetention {
			g.state = stateDead
			c.publish(g) // the log forgets it too, unless it has offsets
			delete(c.groups, name)
		}
		g.mu.Unlock()
	}
	c.mu.Unlock()
}

// abortAll answers every waiting request when the server closes.
func (c *coordinator) abortAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range c.groups {
		g.mu.Lock()
		for _, m := range g.members {
			if m.join != nil {
				m.join <- joinError(m.id, codeCoordinatorNotAvailable)
				m.join = nil
			}
			if m.sync != nil {
				m.sync <- syncResult{code: codeCoordinatorNotAvailable}
				m.sync = nil
			}
		}
		g.mu.Unlock()
	}
}

// prepareRebalance moves the group to PreparingRebalance: members waiting
// for their assignment are told to rejoin, and the rebalance gets its
// deadline.
func (c *coordinator) prepareRebalance(g *group, reason string) {
	if g.state == stateCompletingRebalance {
		for _, m := range g.members {
			if m.sync != nil {
				m.sync <- syncResult{code: codeRebalanceInProgress}
				m.sync = nil
				m.deadline = c.now().Add(m.sessionTimeout)
			}
		}
	}
	wasEmpty := g.state == stateEmpty
	g.state = statePreparingRebalance
	clear(g.pendingSync)
	timeout := g.rebalanceTimeout()
	g.delayed = wasEmpty && c.s.opts.InitialRebalanceDelay > 0
	if g.delayed {
		timeout = min(timeout, c.s.opts.InitialRebalanceDelay)
	}
	g.rebalanceDeadline = c.now().Add(timeout)
	c.s.logger.Debug("kafka group rebalancing", "group", g.name, "generation", g.generation, "reason", reason)
}

// tryCompleteJoin completes the rebalance when every member has rejoined,
// or at once when its time is already up: a rebalance that the last member
// started by leaving has a timeout of 0 (the largest of no members'), as
// Kafka's DelayedJoin of 0 ms, even when a member is pending; the reaper
// would end it on its next round anyway.
func (c *coordinator) tryCompleteJoin(g *group) {
	if g.state != statePreparingRebalance {
		return
	}
	if !c.now().Before(g.rebalanceDeadline) {
		c.completeJoin(g)
		return
	}
	if g.delayed || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	c.completeJoin(g)
}

// rebalanceTimeout is the largest rebalance timeout of the members: how
// long a rebalance waits for them to rejoin, and then to sync.
func (g *group) rebalanceTimeout() time.Duration {
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.rebalanceTimeout)
	}
	return timeout
}

// completeJoin ends PreparingRebalance: dynamic members that did not rejoin
// go, the generation is bumped, a protocol and a leader (one that rejoined)
// are chosen, and every waiting JoinGroup is answered. Static members
// (KIP-345) that did not rejoin stay, as in Kafka's onCompleteJoin: the
// leader assigns to them with their last metadata, and they have the
// rebalance timeout to rejoin and sync (pending sync) before they are
// removed. When no member rejoined but static members remain, the
// rebalance waits another rebalance timeout, as Kafka's.
func (c *coordinator) completeJoin(g *group) {
	now := c.now()
	joined := 0
	for id, m := range g.members {
		switch {
		case m.join != nil:
			joined++
		case m.instanceID == "":
			c.s.logger.Info("kafka group member removed: did not rejoin in time", "group", g.name, "member", id)
			delete(g.members, id)
		}
	}
	if joined == 0 && len(g.members) > 0 {
		g.delayed = false
		g.rebalanceDeadline = now.Add(g.rebalanceTimeout())
		c.s.logger.Info("kafka group rebalance waits: no member rejoined, static members remain", "group", g.name, "members", len(g.members))
		c.publish(g)
		return
	}
	g.delayed = false
	g.generation++
	if len(g.members) == 0 {
		g.state = stateEmpty
		g.emptySince = now
		g.protocol, g.leader = "", ""
		c.publish(g)
		return
	}
	g.protocol = selectProtocol(g.members)
	if l := g.members[g.leader]; l == nil || l.join == nil {
		// The leader is the oldest member that rejoined.
		g.leader = ""
		for _, m := range g.members {
			if m.join != nil && (g.leader == "" || m.joinSeq < g.members[g.leader].joinSeq) {
				g.leader = m.id
			}
		}
	}
	g.state = stateCompletingRebalance
	all := g.joinMembers()
	if g.pendingSync == nil {
		g.pendingSync = map[string]bool{}
	}
	g.syncDeadline = now.Add(g.rebalanceTimeout())
	for _, m := range g.members {
		g.pendingSync[m.id] = true
		m.deadline = now.Add(m.sessionTimeout)
		if m.join == nil {
			continue
		}
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.Generation = g.generation
		resp.ProtocolType = kmsg.StringPtr(g.protocolType)
		resp.Protocol = kmsg.StringPtr(g.protocol)
		resp.LeaderID = g.leader
		resp.MemberID = m.id
		if m.id == g.leader {
			resp.Members = all
		}
		m.join <- resp
		m.join = nil
	}
	c.publish(g)
	c.s.logger.Info("kafka group rebalanced", "group", g.name, "generation", g.generation, "members", len(g.members), "protocol", g.protocol, "leader", g.leader)
}

// joinMembers lists the members with their metadata of the group's
// protocol, for the leader's JoinGroup answer.
func (g *group) joinMembers() []kmsg.JoinGroupResponseMember {
	var all []kmsg.JoinGroupResponseMember
	for _, m := range sortedMembers(g.members) {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.ProtocolMetadata = m.id, m.metadata(g.protocol)
		if m.instanceID != "" {
			jm.InstanceID = kmsg.StringPtr(m.instanceID)
		}
		all = append(all, jm)
	}
	return all
}

// currentJoin is the JoinGroup answer of the current generation for a
// member that rejoins without a rebalance: the leader gets the members'
// metadata again.
func (g *group) currentJoin(id string) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation, resp.LeaderID, resp.MemberID = g.generation, g.leader, id
	resp.ProtocolType, resp.Protocol = kmsg.StringPtr(g.protocolType), kmsg.StringPtr(g.protocol)
	if id == g.leader {
		resp.Members = g.joinMembers()
	}
	return resp
}

// sameProtocols reports whether a JoinGroup names the member's protocols,
// with the same metadata, in the same order (Kafka's MemberMetadata.matches).
func (m *member) sameProtocols(ps []kmsg.JoinGroupRequestProtocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i, p := range ps {
		if p.Name != m.protocols[i].Name || !bytes.Equal(p.Metadata, m.protocols[i].Metadata) {
			return false
		}
	}
	return true
}

// staticMember returns the member that holds a group.instance.id
// (KIP-345 static membership), or nil.
func (g *group) staticMember(instanceID string) *member {
	for _, m := range g.members {
		if m.instanceID == instanceID {
			return m
		}
	}
	return nil
}

// validateMember checks the member id of a Heartbeat, SyncGroup,
// OffsetCommit or LeaveGroup against the group and the request's
// group.instance.id, as Kafka's ClassicGroup.validateMember: an instance id
// that another member id holds is FENCED_INSTANCE_ID (the old process of a
// restarted static member is told to stop, not to rejoin), one no member
// holds is UNKNOWN_MEMBER_ID, as is an unknown member id.
func (g *group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		s := g.staticMember(*instanceID)
		if s == nil {
			return codeUnknownMemberID
		}
		if s.id != memberID {
			return codeFencedInstanceID
		}
	}
	if g.members[memberID] == nil {
		return codeUnknownMemberID
	}
	return 0
}

// replaceStatic gives a static member a new member id: its instance
// restarted and joined again without one (KIP-345). The old id is fenced,
// a JoinGroup or SyncGroup of it still waiting is answered
// FENCED_INSTANCE_ID; the assignment, leadership and place in the join
// order carry over, as in Kafka's ClassicGroup.replaceStaticMember.
func (c *coordinator) replaceStatic(g *group, old *member, newID string) *member {
	if old.join != nil {
		old.join <- joinError(old.id, codeFencedInstanceID)
		old.join = nil
	}
	if old.sync != nil {
		old.sync <- syncResult{code: codeFencedInstanceID}
		old.sync = nil
	}
	delete(g.members, old.id)
	if g.pendingSync[old.id] {
		delete(g.pendingSync, old.id)
		g.pendingSync[newID] = true
	}
	m := &member{id: newID, instanceID: old.instanceID, joinSeq: old.joinSeq, assignment: old.assignment, protocols: old.protocols}
	g.members[newID] = m
	if g.leader == old.id {
		g.leader = newID
	}
	c.s.logger.Info("kafka group static member rejoined: new member id", "group", g.name, "instance", old.instanceID, "old_member", old.id, "member", newID)
	return m
}

// expirePendingSync removes the members that did not sync in time after
// the rebalance completed, and rebalances the rest (Kafka's
// onExpirePendingSync).
func (c *coordinator) expirePendingSync(g *group) {
	// The first removal rebalances, which clears pendingSync: pick the
	// members first.
	var late []*member
	for _, m := range sortedMembers(g.members) {
		if g.pendingSync[m.id] {
			late = append(late, m)
		}
	}
	for _, m := range late {
		c.s.logger.Info("kafka group member removed: did not sync in time", "group", g.name, "member", m.id)
		c.removeMember(g, m, "member "+m.id+" did not sync")
	}
}

// removeMember takes a member out of the group and rebalances the rest.
func (c *coordinator) removeMember(g *group, m *member, reason string) {
	if m.join != nil {
		m.join <- joinError(m.id, codeUnknownMemberID)
	}
	if m.sync != nil {
		m.sync <- syncResult{code: codeUnknownMemberID}
	}
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		c.prepareRebalance(g, reason)
		c.tryCompleteJoin(g)
	case statePreparingRebalance:
		c.tryCompleteJoin(g)
	}
	c.publish(g)
}

// publish tells the log who is in the group (Groups.SetMembership), so that
// the log's own group commands (tributary groups describe, reset-offsets,
// delete) see the members of groups joined through this listener. It runs
// under g.mu after every change of the group's members, generation, state
// or assignments, so the log's view never lags the coordinator's while a
// commit (also under g.mu) is checked against it.
func (c *coordinator) publish(g *group) {
	m := tlog.Membership{
		State: g.state.String(), Generation: g.generation,
		ProtocolType: g.protocolType, Protocol: g.protocol, Leader: g.leader,
	}
	if g.state == stateDead {
		m.State = stateEmpty.String()
	} else {
		// An Empty group the coordinator still knows stays in the log's
		// view until the reaper forgets it (emptyGroupRetention).
		m.Retained = g.state == stateEmpty
		for _, mm := range sortedMembers(g.members) {
			m.Members = append(m.Members, tlog.GroupMember{ID: mm.id, ClientID: mm.clientID, Host: "/" + mm.host, Assignment: mm.assignment})
		}
	}
	if err := c.s.log.Groups().SetMembership(g.name, m); err != nil {
		c.s.logger.Warn("kafka group membership not published to the log", "group", g.name, "error", err)
	}
}

// unpublishAll empties the published membership of every group: Close
// calls it once no request runs any more, so that a stopped listener leaves
// no members behind to block the log's group commands.
func (c *coordinator) unpublishAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, g := range c.groups {
		g.mu.Lock()
		clear(g.members)
		g.state = stateDead
		c.publish(g)
		g.mu.Unlock()
		delete(c.groups, name)
	}
}

func (m *member) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func sortedMembers(ms map[string]*member) []*member {
	out := make([]*member, 0, len(ms))
	for _, m := range ms {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].joinSeq < out[j].joinSeq })
	return out
}

// selectProtocol picks the protocol every member supports that most
// members prefer, as Kafka does: each member votes for the first of its
// protocols that all support.
func selectProtocol(ms map[string]*member) string {
	counts := map[string]int{}
	for _, m := range ms {
		seen := map[string]bool{}
		for _, p := range m.protocols {
			if !seen[p.Name] {
				seen[p.Name] = true
				counts[p.Name]++
			}
		}
	}
	votes := map[string]int{}
	for _, m := range ms {
		for _, p := range m.protocols {
			if counts[p.Name] == len(ms) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for name, n := range votes {
		if best == "" || n > votes[best] || (n == votes[best] && name < best) {
			best = name
		}
	}
	return best
}

// supportsProtocols reports whether a joining member can be in the group:
// same protocol type and at least one protocol every member supports.
func (g *group) supportsProtocols(protocolType string, protocols []kmsg.JoinGroupRequestProtocol, self string) bool {
	if len(g.members) == 0 || (len(g.members) == 1 && g.members[self] != nil) {
		return true
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		all := true
		for id, m := range g.members {
			if id != self && m.metadata(p.Name) == nil && !hasProtocol(m, p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func hasProtocol(m *member, name string) bool {
	for _, p := range m.protocols {
		if p.Name == name {
			return true
		}
	}
	return false
}

func newMemberID(clientID string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	if clientID == "" {
		clientID = "member"
	}
	return clientID + "-" + hex.EncodeToString(b[:])
}
