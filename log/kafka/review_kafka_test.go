package kafka

import (
	"fmt"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reviewJoin builds a JoinGroup (v3: no KIP-394 member id round trip).
func reviewJoin(group, member string, sessionMs, rebalanceMs int32) *kmsg.JoinGroupRequest {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.MemberID = group, member
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = sessionMs, rebalanceMs
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	return join
}

// TestReview_FollowerAwaitingSyncIsNotExpired: Kafka does not expire a member
// while its SyncGroup waits for the leader's assignment (a member awaiting
// join or sync "automatically satisfies expected heartbeats",
// MemberMetadata.hasSatisfiedHeartbeat / ClassicGroupMember): the follower
// cannot heartbeat, its connection is blocked in the SyncGroup. The pending
// sync bound is the rebalance timeout, not the session timeout. Here the
// reaper expires the follower after its session timeout, answers its
// SyncGroup UNKNOWN_MEMBER_ID and rebalances the group.
func TestReview_FollowerAwaitingSyncIsNotExpired(t *testing.T) {
	ts := startServer(t)
	ra, rb := ts.raw(t), ts.raw(t)
	const session, rebalance = 300, 10000

	// A joins alone and leads generation 1.
	ja := do[*kmsg.JoinGroupResponse](ra, reviewJoin("g", "", session, rebalance), 3)
	if ja.ErrorCode != 0 || ja.Generation != 1 {
		t.Fatalf("A join: code %d gen %d", ja.ErrorCode, ja.Generation)
	}
	a := ja.MemberID
	sa := kmsg.NewPtrSyncGroupRequest()
	sa.Group, sa.Generation, sa.MemberID = "g", 1, a
	sa.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: a, MemberAssignment: []byte("a1")}}
	if s := do[*kmsg.SyncGroupResponse](ra, sa, 3); s.ErrorCode != 0 {
		t.Fatalf("A sync 1: code %d", s.ErrorCode)
	}

	// B joins (blocks until A rejoins); A rejoins: generation 2, A leads.
	rb.send(reviewJoin("g", "", session, rebalance), 3)
	time.Sleep(50 * time.Millisecond)
	ja = do[*kmsg.JoinGroupResponse](ra, reviewJoin("g", a, session, rebalance), 3)
	jb := kmsg.NewPtrJoinGroupResponse()
	rb.recv(jb, 3)
	if ja.ErrorCode != 0 || jb.ErrorCode != 0 || ja.Generation != 2 || ja.LeaderID != a {
		t.Fatalf("rejoin: codes %d %d gen %d leader %q", ja.ErrorCode, jb.ErrorCode, ja.Generation, ja.LeaderID)
	}
	b := jb.MemberID

	// B syncs at once and waits for the leader's assignment.
	sb := kmsg.NewPtrSyncGroupRequest()
	sb.Group, sb.Generation, sb.MemberID = "g", 2, b
	rb.send(sb, 3)

	// The leader takes three of B's session timeouts to assign, and
	// heartbeats meanwhile (it is not awaiting anything).
	for range 18 {
		time.Sleep(50 * time.Millisecond)
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = "g", 2, a
		if h := do[*kmsg.HeartbeatResponse](ra, hb, 3); h.ErrorCode != 0 {
			t.Fatalf("leader heartbeat while the follower awaits its SyncGroup: %v (the follower was expired by its session timeout while blocked in SyncGroup; Kafka exempts members awaiting sync)", kerr.ErrorForCode(h.ErrorCode))
		}
	}
	sa.Generation = 2
	sa.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{
		{MemberID: a, MemberAssignment: []byte("a2")},
		{MemberID: b, MemberAssignment: []byte("b2")},
	}
	if s := do[*kmsg.SyncGroupResponse](ra, sa, 3); s.ErrorCode != 0 {
		t.Fatalf("leader sync 2: %v", kerr.ErrorForCode(s.ErrorCode))
	}
	rsb := kmsg.NewPtrSyncGroupResponse()
	rb.recv(rsb, 3)
	if rsb.ErrorCode != 0 || string(rsb.MemberAssignment) != "b2" {
		t.Fatalf("follower's SyncGroup, waiting for the leader: %v, assignment %q; want its assignment b2", kerr.ErrorForCode(rsb.ErrorCode), rsb.MemberAssignment)
	}
}

// TestReview_OffsetCommitUnknownTopic: Kafka answers an OffsetCommit for a
// topic that does not exist with UNKNOWN_TOPIC_OR_PARTITION for its
// partitions (KafkaApis.handleOffsetCommitRequest: !metadataCache.contains)
// and stores nothing; a misspelt topic in a reset (kadm CommitOffsets,
// kafka-consumer-groups) fails instead of storing offsets that a topic
// created later under that name would start from. Here the commit is
// stored and answered with no error.
func TestReview_OffsetCommitUnknownTopic(t *testing.T) {
	ts := startServer(t)
	rc := ts.raw(t)
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = "g", -1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "no-such-topic", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42}}}}
	code := do[*kmsg.OffsetCommitResponse](rc, req, 7).Topics[0].Partitions[0].ErrorCode
	_, stored := ts.log.Groups().CommittedOffset("g", "no-such-topic", 0)
	if code != kerr.UnknownTopicOrPartition.Code || stored {
		t.Fatalf("commit to a topic that does not exist: %v, stored %v; want UNKNOWN_TOPIC_OR_PARTITION and nothing stored", kerr.ErrorForCode(code), stored)
	}
}

// TestReview_CreateTopicsReplicationFactorZero: Kafka refuses a replication
// factor of 0 (or below -1) with INVALID_REPLICATION_FACTOR ("Replication
// factor must be larger than 0, or -1 to use the default value."). Here
// only factors above 1 are refused: 0 creates the topic.
func TestReview_CreateTopicsReplicationFactorZero(t *testing.T) {
	ts := startServer(t)
	rc := ts.raw(t)
	for _, rf := range []int16{0, -2} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 5000
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = fmt.Sprintf("rf%d", rf), 1, rf
		req.Topics = append(req.Topics, ct)
		resp := do[*kmsg.CreateTopicsResponse](rc, req, 7)
		if code := resp.Topics[0].ErrorCode; code != kerr.InvalidReplicationFactor.Code {
			t.Errorf("create topic with replication factor %d: %v; want INVALID_REPLICATION_FACTOR", rf, kerr.ErrorForCode(code))
		}
	}
}

// TestReview_ProduceSecondBatchBadCRCStoresFirst: a partition's record set
// is appended batch by batch; only the framing of all of them is checked
// first (TestProduce_MalformedBatchRefusesTheWholeSet). A second batch that
// is well framed but refused by the log (here a bad CRC; equally a batch
// over max.message.bytes, a nil key on a compacted topic, an out-of-order
// sequence) leaves the first stored while the partition is answered with an
// error: the client's retry stores it twice. Kafka validates the whole
// record set before appending any of it.
func TestReview_ProduceSecondBatchBadCRCStoresFirst(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	bad := testBatch(-1, -1, -1, "b")
	bad[len(bad)-1] ^= 0xff // the CRC no longer holds
	rc := ts.raw(t)
	resp := do[*kmsg.ProduceResponse](rc, produceReq("t", append(testBatch(-1, -1, -1, "a"), bad...)), 9)
	code := resp.Topics[0].Partitions[0].ErrorCode
	if code == 0 {
		t.Fatalf("record set with a corrupt batch accepted")
	}
	// The next append (durable when it returns) shows what was stored.
	base, err := ts.log.Append(t.Context(), "t", 0, []tlog.Record{{Value: []byte("next")}})
	if err != nil {
		t.Fatal(err)
	}
	if base != 0 {
		t.Fatalf("produce answered %v, yet %d record(s) of the refused set were stored: the client's retry stores them again", kerr.ErrorForCode(code), base)
	}
}

// TestReview_CreatePartitionsValidateOnlyAgreesWithTheRealCall: Kafka's
// validate_only runs the same checks as the real request. Here it checks
// only that the count grows: a validation of growing __consumer_offsets
// (which the real call refuses, its keys would move to other partitions)
// answers success.
func TestReview_CreatePartitionsValidateOnlyAgreesWithTheRealCall(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.Groups().Commit(t.Context(), "g", []tlog.OffsetCommit{{Topic: "t", Partition: 0, Offset: 1}}); err != nil {
		t.Fatal(err)
	}
	n, err := ts.log.Partitions(tlog.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	rc := ts.raw(t)
	codes := map[bool]int16{}
	for _, validate := range []bool{true, false} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis, req.ValidateOnly = 5000, validate
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = tlog.OffsetsTopic, int32(n+1)
		req.Topics = append(req.Topics, rt)
		codes[validate] = do[*kmsg.CreatePartitionsResponse](rc, req, 3).Topics[0].ErrorCode
	}
	if codes[false] == 0 {
		t.Fatalf("growing %s accepted", tlog.OffsetsTopic)
	}
	if codes[true] != codes[false] {
		t.Fatalf("CreatePartitions of %s: validate_only answers %v, the real call %v", tlog.OffsetsTopic, kerr.ErrorForCode(codes[true]), kerr.ErrorForCode(codes[false]))
	}
}
