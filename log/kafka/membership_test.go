package kafka

import (
	"context"
	"errors"
	"slices"
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

// owners returns the Describe rows' consumer ids by partition.
func owners(t *testing.T, l *tlog.Log, group string) map[int32]tlog.PartitionLag {
	t.Helper()
	rows, err := l.Groups().Describe(group)
	if err != nil {
		return nil
	}
	out := map[int32]tlog.PartitionLag{}
	for _, r := range rows {
		if r.ConsumerID != "" {
			out[r.Partition] = r
		}
	}
	return out
}

// A franz-go group member joined through the listener is a member for the
// log's own group commands: Describe names it, reset-offsets refuses until
// it leaves.
func TestMembership_VisibleToLogGroups(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "visible", 2, nil)
	if err := ts.log.Produce(t.Context(), "visible", []tlog.Record{{Value: []byte("a")}, {Value: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	m := ts.member(t, "vis", "visible")
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); pollLoop(ctx, m.c, make(chan *kgo.Record, 10)) }()
	defer wg.Wait()
	defer cancel()

	waitFor(t, "the member owning both partitions in Groups.Describe", 8*time.Second, func() bool {
		return len(owners(t, ts.log, "vis")) == 2
	})
	id := ""
	for p, r := range owners(t, ts.log, "vis") {
		if r.ClientID != "kgo" || r.Host != "/127.0.0.1" || r.ConsumerID == "" {
			t.Fatalf("partition %d: consumer %q host %q client %q, want client kgo on /127.0.0.1", p, r.ConsumerID, r.Host, r.ClientID)
		}
		if id != "" && r.ConsumerID != id {
			t.Fatalf("two consumer ids for one member: %q %q", id, r.ConsumerID)
		}
		id = r.ConsumerID
	}
	// The member's own commit goes through (the log checks it against the
	// published generation).
	if err := m.c.CommitRecords(t.Context(), &kgo.Record{Topic: "visible", Partition: 0, Offset: 1}); err != nil {
		t.Fatalf("member commit: %v", err)
	}
	if off, ok := ts.log.Groups().CommittedOffset("vis", "visible", 0); !ok || off != 2 {
		t.Fatalf("committed %d %v, want 2", off, ok)
	}

	g := ts.log.Groups()
	plan, err := g.PlanReset("vis", tlog.ResetSpec{Mode: tlog.ResetToEarliest, AllTopics: true})
	if err != nil {
		t.Fatalf("plan reset (a dry run) of an active group: %v", err)
	}
	if err := g.ApplyReset(t.Context(), "vis", plan); !errors.Is(err, tlog.ErrGroupNotEmpty) {
		t.Fatalf("reset of a group with a joined member: %v, want ErrGroupNotEmpty", err)
	}
	if err := g.Delete(t.Context(), "vis"); !errors.Is(err, tlog.ErrGroupNotEmpty) {
		t.Fatalf("delete of a group with a joined member: %v, want ErrGroupNotEmpty", err)
	}

	// The member leaves (kgo sends LeaveGroup on Close): the reset works.
	cancel()
	wg.Wait()
	m.c.Close()
	waitFor(t, "the member gone from Groups.Describe", 5*time.Second, func() bool {
		return len(owners(t, ts.log, "vis")) == 0
	})
	if err := g.ApplyReset(t.Context(), "vis", plan); err != nil {
		t.Fatalf("reset after the member left: %v", err)
	}
	if off, _ := g.CommittedOffset("vis", "visible", 0); off != 0 {
		t.Fatalf("offset after the reset = %d, want 0", off)
	}
}

// rawJoin joins group with one member by hand and makes it the leader
// owning topic's partition 0.
func rawJoin(t *testing.T, rc *rawConn, group, topic string, session time.Duration) (string, int32) {
	t.Helper()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = group, int32(session.Milliseconds()), 1000
	join.ProtocolType = "consumer"
	md := kmsg.NewConsumerMemberMetadata()
	md.Topics = []string{topic}
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: md.AppendTo(nil)}}
	r := do[*kmsg.JoinGroupResponse](rc, join, 5)
	join.MemberID = r.MemberID
	r = do[*kmsg.JoinGroupResponse](rc, join, 5)
	if r.ErrorCode != 0 {
		t.Fatalf("join: code %d", r.ErrorCode)
	}
	a := kmsg.NewConsumerMemberAssignment()
	a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: topic, Partitions: []int32{0}}}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = group, r.Generation, r.MemberID
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: r.MemberID, MemberAssignment: a.AppendTo(nil)}}
	if s := do[*kmsg.SyncGroupResponse](rc, sync, 3); s.ErrorCode != 0 {
		t.Fatalf("sync: code %d", s.ErrorCode)
	}
	return r.MemberID, r.Generation
}

// A member whose session expires, and every member when the listener
// closes, leave the log's view too. A group emptied by its last member,
// without committed offsets, stays in the log's view (listed, described
// without rows) as long as the listener keeps it Empty, as Kafka's
// coordinator keeps it until its cleanup: tributary groups describe and
// list agree with kafka-consumer-groups.sh against the same process.
func TestMembership_ExpiryAndCloseUnpublish(t *testing.T) {
	var skew atomic.Int64
	ts := startServer(t, func(o *Options) {
		o.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	if err := ts.log.CreateTopic("exp", 1, nil); err != nil {
		t.Fatal(err)
	}
	id, _ := rawJoin(t, ts.raw(t), "expiring", "exp", 300*time.Millisecond)
	if o := owners(t, ts.log, "expiring"); o[0].ConsumerID != id || o[0].ClientID != "raw-test" {
		t.Fatalf("owner of exp-0 = %+v, want %s", o[0], id)
	}
	waitFor(t, "the expired member gone from the log", 5*time.Second, func() bool {
		rows, err := ts.log.Groups().Describe("expiring")
		return err == nil && len(rows) == 0
	})
	listed := func(name string) bool { return slices.Contains(ts.log.Groups().List(), name) }
	if !listed("expiring") {
		t.Fatalf("groups listed by the log: %v, want the emptied group, as the listener lists it", ts.log.Groups().List())
	}
	adm := kadm.NewClient(ts.client(t))
	if lg, err := adm.ListGroups(t.Context()); err != nil || lg["expiring"].State != "Empty" {
		t.Fatalf("ListGroups through the listener: %v, %v; want expiring Empty", lg, err)
	}
	// Past the retention the listener forgets it, and so does the log.
	skew.Store(int64(emptyGroupRetention + time.Second))
	waitFor(t, "the emptied group forgotten after the retention", 5*time.Second, func() bool {
		_, err := ts.log.Groups().Describe("expiring")
		return errors.Is(err, tlog.ErrUnknownGroup) // no commits, no members: no group
	})
	// DeleteGroups through the listener forgets it at once.
	rawJoin(t, ts.raw(t), "deleted", "exp", 300*time.Millisecond)
	waitFor(t, "the deleted group's member expired", 5*time.Second, func() bool {
		rows, err := ts.log.Groups().Describe("deleted")
		return err == nil && len(rows) == 0
	})
	if r, err := adm.DeleteGroup(t.Context(), "deleted"); err != nil || r.Err != nil {
		t.Fatalf("DeleteGroups: %v %v", err, r.Err)
	}
	if listed("deleted") {
		t.Fatalf("groups listed by the log after DeleteGroups: %v", ts.log.Groups().List())
	}

	id, _ = rawJoin(t, ts.raw(t), "staying", "exp", 30*time.Second)
	if o := owners(t, ts.log, "staying"); o[0].ConsumerID != id {
		t.Fatalf("owner of exp-0 = %+v, want %s", o[0], id)
	}
	if err := ts.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.log.Groups().Describe("staying"); !errors.Is(err, tlog.ErrUnknownGroup) {
		t.Fatalf("Describe after the listener closed: %v, want ErrUnknownGroup (no members left)", err)
	}
}

// A static member (kgo.InstanceID, KIP-345) that restarts gets its old
// assignment back in the same generation: franz-go sends no LeaveGroup for
// a static member on Close, and the restarted instance's join without a
// member id replaces the old member id (Kafka's replaceStaticMember), with
// no rebalance. The old member id is fenced from then on.
func TestMembership_StaticMemberRestartKeepsGeneration(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "static", 2, nil)
	if err := ts.log.Produce(t.Context(), "static", []tlog.Record{{Value: []byte("a")}, {Value: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	consumer := func() *kgo.Client {
		return ts.client(t, kgo.ConsumerGroup("static-g"), kgo.ConsumeTopics("static"), kgo.InstanceID("worker-1"),
			kgo.SessionTimeout(30*time.Second), kgo.RebalanceTimeout(30*time.Second),
			kgo.HeartbeatInterval(100*time.Millisecond), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	first := consumer()
	consumeN(t, first, 2)
	oldID, gen := first.GroupMetadata()
	if oldID == "" || gen < 1 {
		t.Fatalf("first instance: member %q generation %d", oldID, gen)
	}
	first.Close()

	second := consumer()
	consumeN(t, second, 2)
	newID, newGen := second.GroupMetadata()
	if newID == oldID || newGen != gen {
		t.Fatalf("restarted instance: member %q generation %d, want a new member id in generation %d (no rebalance)", newID, newGen, gen)
	}
	rc := ts.raw(t)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.InstanceID, hb.Generation = "static-g", oldID, kmsg.StringPtr("worker-1"), gen
	if r := do[*kmsg.HeartbeatResponse](rc, hb, 4); r.ErrorCode != kerr.FencedInstanceID.Code {
		t.Fatalf("heartbeat of the old member id: %s, want FENCED_INSTANCE_ID", codeName(r.ErrorCode))
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"static-g"}
	d := do[*kmsg.DescribeGroupsResponse](rc, dg, 5).Groups[0]
	if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != newID || d.Members[0].InstanceID == nil || *d.Members[0].InstanceID != "worker-1" {
		t.Fatalf("describe: state %s members %+v, want Stable with %s (worker-1) alone", d.State, d.Members, newID)
	}
}
