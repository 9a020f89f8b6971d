package kafka

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Commits from outside a group (generation -1: kadm's CommitOffsets,
// kafka-consumer-groups.sh --reset-offsets) are accepted only while the
// group is Empty, as Kafka's coordinator decides (GroupCoordinator /
// ClassicGroup.validateOffsetCommit). Each stage is driven by hand with franz-go
// clients and checked through the listener (kadm) and through the log's
// own commit path (Groups.Commit, what POST /groups/{g}/offsets uses).
func TestOffsetCommit_FromOutsideByGroupState(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "oc", 1, nil)
	const group = "outside"
	ctx := t.Context()
	adm := kadm.NewClient(ts.client(t))
	next := int64(0)
	// outside commits offset next+1 from outside the group through the
	// listener and reports the partition's error code.
	outside := func() error {
		next++
		resp, err := adm.CommitOffsets(ctx, group, kadm.Offsets{"oc": {0: {Topic: "oc", Partition: 0, At: next}}})
		if err != nil {
			return err
		}
		return resp.Error()
	}
	logCommit := func() error {
		next++
		return ts.log.Groups().Commit(ctx, group, []tlog.OffsetCommit{{Topic: "oc", Partition: 0, Offset: next}})
	}
	refused := func(stage string) {
		t.Helper()
		if err := outside(); !errors.Is(err, kerr.UnknownMemberID) {
			t.Errorf("%s: kadm CommitOffsets: %v, want UNKNOWN_MEMBER_ID (Kafka refuses commits from outside a non-empty group)", stage, err)
		}
		if err := logCommit(); !errors.Is(err, tlog.ErrGroupNotEmpty) {
			t.Errorf("%s: Groups.Commit: %v, want ErrGroupNotEmpty", stage, err)
		}
	}
	state := func() string {
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		return d[group].State
	}
	commit := func(cl *kgo.Client, member string, gen int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, member, gen
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "oc", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	type joined struct {
		r   *kmsg.JoinGroupResponse
		err error
	}
	// join sends one JoinGroup; it answers once the rebalance completes.
	join := func(cl *kgo.Client, member string, session time.Duration) <-chan joined {
		ch := make(chan joined, 1)
		go func() {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
			req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(session.Milliseconds()), 30000
			md := kmsg.NewConsumerMemberMetadata()
			md.Topics = []string{"oc"}
			req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: md.AppendTo(nil)}}
			r, err := req.RequestWith(ctx, cl)
			ch <- joined{r, err}
		}()
		return ch
	}
	// memberID does the KIP-394 round trip: the member is pending after it.
	memberID := func(cl *kgo.Client, session time.Duration) string {
		j := <-join(cl, "", session)
		if j.err != nil || j.r.ErrorCode != kerr.MemberIDRequired.Code {
			t.Fatalf("first join: %v code %d, want MEMBER_ID_REQUIRED", j.err, j.r.ErrorCode)
		}
		return j.r.MemberID
	}
	done := func(ch <-chan joined) *kmsg.JoinGroupResponse {
		t.Helper()
		j := <-ch
		if j.err != nil || j.r.ErrorCode != 0 {
			t.Fatalf("join: %v code %d", j.err, j.r.ErrorCode)
		}
		return j.r
	}
	sync := func(cl *kgo.Client, member string, gen int32) {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.MemberID, req.Generation = group, member, gen
		req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member}}
		if r, err := req.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
			t.Fatalf("sync: %v", err)
		}
	}
	leave := func(cl *kgo.Client, member string) {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = group, member
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}}
		if _, err := req.RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := ts.client(t), ts.client(t), ts.client(t)

	// No group at all: accepted, with or without a member id (Kafka
	// looks only at the generation when the group is Empty).
	if err := outside(); err != nil {
		t.Fatalf("outside commit to an unknown group: %v", err)
	}
	if code := commit(a, "not-a-member", -1); code != 0 {
		t.Errorf("commit of generation -1 with a member id to an unknown group: %s, want accepted (as Kafka)", codeName(code))
	}

	// A joins and syncs: Stable.
	aID := memberID(a, 30*time.Second)
	ra := done(join(a, aID, 30*time.Second))
	sync(a, aID, ra.Generation)
	if s := state(); s != "Stable" {
		t.Fatalf("state %s, want Stable", s)
	}
	refused("Stable, one member")
	// OffsetCommit v0 carries no generation nor member id: from outside.
	v0 := kmsg.NewPtrOffsetCommitRequest()
	v0.Group = group
	v0.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "oc", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	if r := do[*kmsg.OffsetCommitResponse](ts.raw(t), v0, 0); r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownMemberID.Code {
		t.Errorf("Stable: OffsetCommit v0: %s, want UNKNOWN_MEMBER_ID", codeName(r.Topics[0].Partitions[0].ErrorCode))
	}
	if code := commit(a, "not-a-member", -1); code != kerr.UnknownMemberID.Code {
		t.Errorf("Stable: commit of generation -1 with an unknown member id: %s, want UNKNOWN_MEMBER_ID", codeName(code))
	}

	// B asks for a member id: pending, the group stays Stable.
	memberID(b, 30*time.Second)
	refused("Stable, one member and one pending")

	// A leaves: the rebalance it starts has no member left, so its
	// timeout is 0 (Kafka's DelayedJoin of the largest rebalance timeout
	// of no members) and it ends at once: Empty, accepted.
	leave(a, aID)
	if s := state(); s != "Empty" {
		t.Fatalf("after the only member left with one pending: state %s, want Empty", s)
	}
	accepted := func(stage string) {
		t.Helper()
		if err := outside(); err != nil {
			t.Errorf("%s: kadm CommitOffsets: %v, want accepted", stage, err)
		}
		if err := logCommit(); err != nil {
			t.Errorf("%s: Groups.Commit: %v, want accepted", stage, err)
		}
	}
	accepted("Empty, the last member left, one pending")

	// B joins: CompletingRebalance (B alone, its sync not sent yet).
	bID := memberID(b, 30*time.Second)
	rb := done(join(b, bID, 30*time.Second))
	if s := state(); s != "CompletingRebalance" {
		t.Fatalf("state %s, want CompletingRebalance", s)
	}
	refused("CompletingRebalance")
	if code := commit(b, bID, rb.Generation); code != kerr.RebalanceInProgress.Code {
		t.Errorf("CompletingRebalance: B's own commit: %s, want REBALANCE_IN_PROGRESS", codeName(code))
	}

	// C joins as a second member: PreparingRebalance until B rejoins.
	cID := memberID(c, 500*time.Millisecond)
	cJoin := join(c, cID, 500*time.Millisecond)
	waitFor(t, "C's join to start a rebalance", 5*time.Second, func() bool { return state() == "PreparingRebalance" })
	refused("PreparingRebalance, B to rejoin, C joined")

	// B leaves: C alone completes the rebalance; then C never syncs nor
	// heartbeats, its session expires and the group is Empty.
	leave(b, bID)
	done(cJoin)
	waitFor(t, "C's session to expire", 10*time.Second, func() bool { return state() == "Empty" })
	accepted("Empty after the last session expired")
	if code := commit(a, "not-a-member", -1); code != 0 {
		t.Errorf("Empty: commit of generation -1 with a member id: %s, want accepted (as Kafka)", codeName(code))
	}
}

// While a franz-go group consumer stays in its group, no commit from
// outside gets through, however the group rebalances around it: a second
// consumer joining and leaving, and one whose session expires.
func TestOffsetCommit_FromOutsideNeverWhileAMemberStays(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "stay", 4, nil)
	const group = "stay"
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	a := ts.member(t, group, "stay")
	wg.Add(1)
	go func() { defer wg.Done(); pollLoop(ctx, a.c, make(chan *kgo.Record, 10)) }()
	waitFor(t, "a owning all partitions", 8*time.Second, func() bool { return len(a.partitions()) == 4 })

	// Commits from outside, through the listener and through the log,
	// fired without pause until the rebalances below are over.
	var accepted, tried atomic.Int64
	hammerCtx, stopHammer := context.WithCancel(ctx)
	adm := kadm.NewClient(ts.client(t, kgo.RequestRetries(0)))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for hammerCtx.Err() == nil {
			resp, err := adm.CommitOffsets(hammerCtx, group, kadm.Offsets{"stay": {0: {Topic: "stay", Partition: 0, At: 1}}})
			if hammerCtx.Err() != nil {
				return
			}
			tried.Add(1)
			if err == nil && resp.Error() == nil {
				accepted.Add(1)
			}
			if ts.log.Groups().Commit(hammerCtx, group, []tlog.OffsetCommit{{Topic: "stay", Partition: 1, Offset: 1}}) == nil {
				accepted.Add(1)
			}
		}
	}()

	for range 2 {
		b := ts.member(t, group, "stay")
		bctx, bcancel := context.WithCancel(ctx)
		var bwg sync.WaitGroup
		bwg.Add(1)
		go func() { defer bwg.Done(); pollLoop(bctx, b.c, make(chan *kgo.Record, 10)) }()
		waitFor(t, "2+2 partitions after b joined", 10*time.Second, func() bool {
			return len(a.partitions()) == 2 && len(b.partitions()) == 2
		})
		bcancel()
		bwg.Wait()
		b.c.Close() // leaves the group
		waitFor(t, "a owning all partitions again", 10*time.Second, func() bool { return len(a.partitions()) == 4 })
	}
	// A member that stops heartbeating: its session expires.
	rc := ts.raw(t)
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = []string{"stay"}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = group, 300, 10000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: md.AppendTo(nil)}, {Name: "cooperative-sticky", Metadata: md.AppendTo(nil)}}
	r := do[*kmsg.JoinGroupResponse](rc, join, 5)
	join.MemberID = r.MemberID
	if r = do[*kmsg.JoinGroupResponse](rc, join, 5); r.ErrorCode != 0 {
		t.Fatalf("join of the expiring member: code %d", r.ErrorCode)
	}
	waitFor(t, "the expiring member gone", 10*time.Second, func() bool {
		d, err := kadm.NewClient(ts.client(t)).DescribeGroups(ctx, group)
		return err == nil && len(d[group].Members) == 1 && d[group].State == "Stable"
	})
	waitFor(t, "a owning all partitions after the expiry", 10*time.Second, func() bool { return len(a.partitions()) == 4 })
	stopHammer()
	if n := accepted.Load(); n > 0 {
		t.Fatalf("%d of %d commits from outside accepted while a member stayed in the group", n, tried.Load())
	}
	if tried.Load() == 0 {
		t.Fatal("no commit from outside was tried")
	}
}

// The state decides, not the member count: a group's first rebalance waits
// group.initial.rebalance.delay.ms for more members, and when its only
// member leaves meanwhile the group stays in PreparingRebalance, with no
// member, until the delay ends. Kafka (InitialDelayedJoin) refuses commits
// from outside until then; so do the listener and the log.
func TestOffsetCommit_FromOutsideDuringInitialDelay(t *testing.T) {
	ts := startServer(t, func(o *Options) { o.InitialRebalanceDelay = 3 * time.Second })
	ts.createTopic(t, "delay", 1, nil)
	const group = "delayed"
	ctx := t.Context()
	cl := ts.client(t)
	adm := kadm.NewClient(ts.client(t))
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = []string{"delay"}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.ProtocolType = group, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: md.AppendTo(nil)}}
	r, err := req.RequestWith(ctx, cl)
	if err != nil || r.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %v", err)
	}
	req.MemberID = r.MemberID
	joined := make(chan int16, 1)
	go func() {
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			joined <- -1
			return
		}
		joined <- r.ErrorCode
	}()
	state := func() string {
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		return d[group].State
	}
	waitFor(t, "the join to start the delayed rebalance", 5*time.Second, func() bool { return state() == "PreparingRebalance" })
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Group, lr.MemberID = group, req.MemberID
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	if _, err := lr.RequestWith(ctx, ts.client(t)); err != nil {
		t.Fatal(err)
	}
	if code := <-joined; code != kerr.UnknownMemberID.Code {
		t.Fatalf("the waiting join of the member that left: %s, want UNKNOWN_MEMBER_ID", codeName(code))
	}
	start := time.Now()
	if s := state(); s != "PreparingRebalance" {
		t.Fatalf("state %s, want PreparingRebalance until the initial delay ends", s)
	}
	offsets := kadm.Offsets{"delay": {0: {Topic: "delay", Partition: 0, At: 5}}}
	resp, err := adm.CommitOffsets(ctx, group, offsets)
	if err == nil {
		err = resp.Error()
	}
	logErr := ts.log.Groups().Commit(ctx, group, []tlog.OffsetCommit{{Topic: "delay", Partition: 0, Offset: 6}})
	if time.Since(start) < 2*time.Second { // else the delay may be over: no verdict
		if !errors.Is(err, kerr.UnknownMemberID) {
			t.Errorf("commit from outside during the initial delay: %v, want UNKNOWN_MEMBER_ID", err)
		}
		if !errors.Is(logErr, tlog.ErrGroupNotEmpty) {
			t.Errorf("Groups.Commit during the initial delay: %v, want ErrGroupNotEmpty", logErr)
		}
	}
	// Empty, then forgotten (Dead) without commits: either way idle.
	waitFor(t, "the delay to end", 10*time.Second, func() bool { s := state(); return s == "Empty" || s == "Dead" })
	if resp, err := adm.CommitOffsets(ctx, group, offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit from outside once Empty: %v %v", err, resp.Error())
	}
}
