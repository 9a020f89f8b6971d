package kafka

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn speaks the protocol by hand (kmsg framing), to send requests a
// client library would not: wrong generations, duplicate batches,
// unsupported versions.
type rawConn struct {
	t    *testing.T
	c    net.Conn
	corr int32
}

func (ts *testServer) raw(t *testing.T) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

func (rc *rawConn) send(req kmsg.Request, version int16) {
	rc.t.Helper()
	req.SetVersion(version)
	rc.corr++
	buf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test")).AppendRequest(nil, req, rc.corr)
	if _, err := rc.c.Write(buf); err != nil {
		rc.t.Fatal(err)
	}
}

func (rc *rawConn) recv(resp kmsg.Response, version int16) {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var sz [4]byte
	if _, err := io.ReadFull(rc.c, sz[:]); err != nil {
		rc.t.Fatalf("read response: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(rc.c, body); err != nil {
		rc.t.Fatal(err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != rc.corr {
		rc.t.Fatalf("correlation id %d, want %d", corr, rc.corr)
	}
	body = body[4:]
	resp.SetVersion(version)
	if resp.IsFlexible() && resp.Key() != 18 {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		rc.t.Fatalf("decode %T: %v", resp, err)
	}
}

// do sends req at version and decodes its response.
func do[R kmsg.Response](rc *rawConn, req kmsg.Request, version int16) R {
	rc.t.Helper()
	rc.send(req, version)
	resp := req.ResponseKind().(R)
	rc.recv(resp, version)
	return resp
}

// testBatch encodes a v2 batch of values for an idempotent producer.
func testBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	buf := make([]byte, 61)
	now := time.Now().UnixMilli()
	for i, v := range values {
		buf = appendRecord(buf, &kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)})
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: pid, ProducerEpoch: epoch,
		FirstSequence: seq, NumRecords: int32(len(values)),
	}
	b.AppendTo(buf[:0])
	binary.BigEndian.PutUint32(buf[8:], uint32(len(buf)-12))
	binary.BigEndian.PutUint32(buf[17:], crc32.Checksum(buf[21:], castagnoli))
	return buf
}

func produceReq(topic string, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func TestProduce_IdempotentRetryIsNotAppendedTwice(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("idem", 1, nil); err != nil {
		t.Fatal(err)
	}
	rc := ts.raw(t)
	ip := do[*kmsg.InitProducerIDResponse](rc, kmsg.NewPtrInitProducerIDRequest(), 4)
	if ip.ErrorCode != 0 || ip.ProducerID < 0 {
		t.Fatalf("init producer id: code %d id %d", ip.ErrorCode, ip.ProducerID)
	}
	batch := testBatch(ip.ProducerID, ip.ProducerEpoch, 0, "a", "b", "c")
	for try := range 2 {
		resp := do[*kmsg.ProduceResponse](rc, produceReq("idem", batch), 9)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Fatalf("try %d: code %d base %d, want 0 0", try, p.ErrorCode, p.BaseOffset)
		}
	}
	if _, end, _ := ts.log.Offsets("idem", 0); end != 3 {
		t.Fatalf("end offset %d after a retried batch, want 3", end)
	}
	// A gap in the sequence is refused.
	resp := do[*kmsg.ProduceResponse](rc, produceReq("idem", testBatch(ip.ProducerID, ip.ProducerEpoch, 7, "x")), 9)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("out of order batch: code %d, want %d", code, kerr.OutOfOrderSequenceNumber.Code)
	}
	// A corrupt batch is refused, and the connection stays usable.
	bad := testBatch(-1, -1, -1, "y")
	bad[len(bad)-1] ^= 0xff
	resp = do[*kmsg.ProduceResponse](rc, produceReq("idem", bad), 9)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.CorruptMessage.Code {
		t.Fatalf("corrupt batch: code %d, want %d", code, kerr.CorruptMessage.Code)
	}
	// Transactional producers are refused with a clear error.
	txn := kmsg.NewPtrInitProducerIDRequest()
	txn.TransactionalID = kmsg.StringPtr("tx")
	if r := do[*kmsg.InitProducerIDResponse](rc, txn, 4); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("transactional init: code %d", r.ErrorCode)
	}
}

// TestProduce_IdempotentWithoutStateAtAnySequence: as Kafka 2.5+ (KIP-360),
// a producer the partition has no state for (its batches gone with
// retention) is accepted at the sequence it sends, and checked from there.
func TestProduce_IdempotentWithoutStateAtAnySequence(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("idem", 1, nil); err != nil {
		t.Fatal(err)
	}
	rc := ts.raw(t)
	ip := do[*kmsg.InitProducerIDResponse](rc, kmsg.NewPtrInitProducerIDRequest(), 4)
	for _, tc := range []struct {
		seq  int32
		code int16
		base int64
	}{
		{seq: 40, base: 0}, // no state here: taken as it is
		{seq: 40, base: 0}, // a retry
		{seq: 42, base: 2}, // the next one
		{seq: 45, code: kerr.OutOfOrderSequenceNumber.Code, base: -1}, // a gap
	} {
		resp := do[*kmsg.ProduceResponse](rc, produceReq("idem", testBatch(ip.ProducerID, ip.ProducerEpoch, tc.seq, "a", "b")), 9)
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != tc.code || p.BaseOffset != tc.base {
			t.Fatalf("sequence %d: %v base %d, want %v base %d", tc.seq, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, kerr.ErrorForCode(tc.code), tc.base)
		}
	}
}

// TestProduce_SeveralBatchesForOnePartitionStoreNothing: a partition's
// record set whose second batch is well framed but refused by the log (here
// a bad CRC; equally a batch over max.message.bytes, a nil key on a
// compacted topic, an out-of-order sequence) must not leave the first
// stored while the partition is answered with an error: the client's retry
// would store it twice. As Kafka (Produce v3+), a set of more than one
// batch is refused whole with INVALID_RECORD, two sound batches too.
func TestProduce_SeveralBatchesForOnePartitionStoreNothing(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	bad := testBatch(-1, -1, -1, "b")
	bad[len(bad)-1] ^= 0xff // the CRC no longer holds
	rc := ts.raw(t)
	resp := do[*kmsg.ProduceResponse](rc, produceReq("t", append(testBatch(-1, -1, -1, "a"), bad...)), 9)
	code := resp.Topics[0].Partitions[0].ErrorCode
	if code != kerr.InvalidRecord.Code {
		t.Fatalf("record set with a corrupt second batch: %v; want INVALID_RECORD", kerr.ErrorForCode(code))
	}
	two := append(testBatch(-1, -1, -1, "a"), testBatch(-1, -1, -1, "b")...)
	resp = do[*kmsg.ProduceResponse](rc, produceReq("t", two), 9)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidRecord.Code {
		t.Fatalf("record set of two sound batches: %v; want INVALID_RECORD (Kafka takes exactly one batch per partition)", kerr.ErrorForCode(code))
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

// TestProduce_InvalidAcksAppendsNothing: as Kafka, a Produce whose acks is
// not -1, 0 or 1 is answered INVALID_REQUIRED_ACKS for every partition and
// nothing is appended.
func TestProduce_InvalidAcksAppendsNothing(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	rc := ts.raw(t)
	for _, acks := range []int16{2, -2} {
		req := produceReq("t", testBatch(-1, -1, -1, "a"))
		req.Acks = acks
		if code := do[*kmsg.ProduceResponse](rc, req, 9).Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidRequiredAcks.Code {
			t.Fatalf("produce with acks %d: %v; want INVALID_REQUIRED_ACKS", acks, kerr.ErrorForCode(code))
		}
	}
	if _, end, err := ts.log.Offsets("t", 0); err != nil || end != 0 {
		t.Fatalf("end offset %d (%v) after produces with invalid acks; want 0", end, err)
	}
}

func TestUnsupported_AnsweredNotDropped(t *testing.T) {
	ts := startServer(t)
	rc := ts.raw(t)
	// DescribeAcls is not served: its response carries UNSUPPORTED_VERSION.
	acl := do[*kmsg.DescribeACLsResponse](rc, kmsg.NewPtrDescribeACLsRequest(), 1)
	if acl.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("DescribeAcls: code %d", acl.ErrorCode)
	}
	// Fetch v13 (topic ids) is past the served range.
	f := kmsg.NewPtrFetchRequest()
	if r := do[*kmsg.FetchResponse](rc, f, 13); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("Fetch v13: code %d", r.ErrorCode)
	}
	// ApiVersions newer than served: v0 answer with the list.
	rc.send(kmsg.NewPtrApiVersionsRequest(), 9)
	av := kmsg.NewPtrApiVersionsResponse()
	rc.recv(av, 0)
	if av.ErrorCode != kerr.UnsupportedVersion.Code || len(av.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v9: code %d, %d keys", av.ErrorCode, len(av.ApiKeys))
	}
	// The connection still works.
	md := do[*kmsg.MetadataResponse](rc, kmsg.NewPtrMetadataRequest(), 12)
	if len(md.Brokers) != 1 {
		t.Fatalf("metadata after unsupported requests: %d brokers", len(md.Brokers))
	}
}

func TestGroup_SessionTimeoutAndGenerationChecks(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	rc := ts.raw(t)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", 500, 1000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	r := do[*kmsg.JoinGroupResponse](rc, join, 5)
	if r.ErrorCode != kerr.MemberIDRequired.Code || r.MemberID == "" {
		t.Fatalf("first join: code %d member %q", r.ErrorCode, r.MemberID)
	}
	join.MemberID = r.MemberID
	r = do[*kmsg.JoinGroupResponse](rc, join, 5)
	if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != join.MemberID || len(r.Members) != 1 {
		t.Fatalf("join: code %d gen %d leader %q members %d", r.ErrorCode, r.Generation, r.LeaderID, len(r.Members))
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "g", 1, join.MemberID
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: join.MemberID, MemberAssignment: []byte("mine")}}
	if s := do[*kmsg.SyncGroupResponse](rc, sync, 3); s.ErrorCode != 0 || string(s.MemberAssignment) != "mine" {
		t.Fatalf("sync: code %d assignment %q", s.ErrorCode, s.MemberAssignment)
	}
	commit := func(gen int32, member string) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation, req.MemberID = "g", gen, member
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42}}}}
		return do[*kmsg.OffsetCommitResponse](rc, req, 7).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(0, join.MemberID); code != kerr.IllegalGeneration.Code {
		t.Fatalf("commit of an old generation: code %d", code)
	}
	if code := commit(1, "someone-else"); code != kerr.UnknownMemberID.Code {
		t.Fatalf("commit of an unknown member: code %d", code)
	}
	if code := commit(1, join.MemberID); code != 0 {
		t.Fatalf("commit: code %d", code)
	}
	if off, ok := ts.log.Groups().CommittedOffset("g", "t", 0); !ok || off != 42 {
		t.Fatalf("committed %d %v", off, ok)
	}
	// No heartbeats: the session expires and the group is empty.
	time.Sleep(900 * time.Millisecond)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "g", 1, join.MemberID
	if h := do[*kmsg.HeartbeatResponse](rc, hb, 3); h.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat after expiry: code %d", h.ErrorCode)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g"}
	if d := do[*kmsg.DescribeGroupsResponse](rc, dg, 5); d.Groups[0].State != "Empty" || len(d.Groups[0].Members) != 0 {
		t.Fatalf("describe after expiry: %s with %d members", d.Groups[0].State, len(d.Groups[0].Members))
	}
	// Now a commit from outside the group is fine, and the group can go.
	if code := commit(-1, ""); code != 0 {
		t.Fatalf("simple commit to an empty group: code %d", code)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g", "nope"}
	d := do[*kmsg.DeleteGroupsResponse](rc, del, 2)
	if d.Groups[0].ErrorCode != 0 || d.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete groups: codes %d %d", d.Groups[0].ErrorCode, d.Groups[1].ErrorCode)
	}
}

// joinV3 builds a JoinGroup (v3: no KIP-394 member id round trip).
func joinV3(group, member string, sessionMs, rebalanceMs int32) *kmsg.JoinGroupRequest {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.MemberID = group, member
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = sessionMs, rebalanceMs
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	return join
}

// TestGroup_FollowerAwaitingSyncIsNotExpired: Kafka does not expire a member
// while its SyncGroup waits for the leader's assignment (a member awaiting
// join or sync "automatically satisfies expected heartbeats",
// MemberMetadata.hasSatisfiedHeartbeat / ClassicGroupMember): the follower
// cannot heartbeat, its connection is blocked in the SyncGroup. The pending
// sync bound is the rebalance timeout, not the session timeout.
func TestGroup_FollowerAwaitingSyncIsNotExpired(t *testing.T) {
	ts := startServer(t)
	ra, rb := ts.raw(t), ts.raw(t)
	const session, rebalance = 300, 10000

	// A joins alone and leads generation 1.
	ja := do[*kmsg.JoinGroupResponse](ra, joinV3("g", "", session, rebalance), 3)
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
	rb.send(joinV3("g", "", session, rebalance), 3)
	time.Sleep(50 * time.Millisecond)
	ja = do[*kmsg.JoinGroupResponse](ra, joinV3("g", a, session, rebalance), 3)
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

// TestOffsetCommit_UnknownTopicIsRefused: Kafka answers an OffsetCommit for a
// topic that does not exist with UNKNOWN_TOPIC_OR_PARTITION for its
// partitions (KafkaApis.handleOffsetCommitRequest: !metadataCache.contains)
// and stores nothing; a misspelt topic in a reset (kadm CommitOffsets,
// kafka-consumer-groups) fails instead of storing offsets that a topic
// created later under that name would start from.
func TestOffsetCommit_UnknownTopicIsRefused(t *testing.T) {
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

// TestConnection_IdleIsClosed: a connection that sends no request for
// ConnectionsMaxIdle is closed (Kafka's connections.max.idle.ms), but not
// while a request it sent still waits for its answer: a long-poll Fetch
// longer than the idle time gets its answer on the same connection.
func TestConnection_IdleIsClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	ts := startServer(t, func(o *Options) { o.ConnectionsMaxIdle = idle })
	ts.createTopic(t, "empty", 1, nil)
	closedWithin := func(rc *rawConn, limit time.Duration) bool {
		t.Helper()
		rc.c.SetReadDeadline(time.Now().Add(limit))
		_, err := rc.c.Read(make([]byte, 1))
		return errors.Is(err, io.EOF)
	}

	// Timed from before the dial: the server's idle clock starts when it
	// accepts, which a start taken after the dial returns may follow (the
	// check then saw 299 ms of a 300 ms idle time under load).
	start := time.Now()
	silent := ts.raw(t)
	if !closedWithin(silent, 5*time.Second) {
		t.Fatalf("a silent connection was not closed within 5 s (idle %v)", idle)
	}
	if waited := time.Since(start); waited < idle {
		t.Fatalf("a silent connection was closed after %v, before its idle time %v", waited, idle)
	}

	polling := ts.raw(t)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 1500, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "empty"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	start = time.Now()
	resp := do[*kmsg.FetchResponse](polling, fetch, 4)
	if waited := time.Since(start); waited < time.Second || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("long-poll fetch answered after %v: %+v", waited, resp)
	}
	if !closedWithin(polling, 5*time.Second) {
		t.Fatalf("the connection was not closed once idle after its fetch's answer")
	}
}
