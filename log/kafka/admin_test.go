package kafka

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopics_ReplicationFactorZeroOrBelowMinusOneIsRefused: Kafka refuses a replication
// factor of 0 (or below -1) with INVALID_REPLICATION_FACTOR ("Replication
// factor must be larger than 0, or -1 to use the default value."), and
// creates nothing.
func TestCreateTopics_ReplicationFactorZeroOrBelowMinusOneIsRefused(t *testing.T) {
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
		if _, err := ts.log.Partitions(ct.Topic); err == nil {
			t.Errorf("create topic with replication factor %d: topic %s created", rf, ct.Topic)
		}
	}
}

// TestCreateTopics_AssignmentWithCountsIsRefused: as Kafka
// (ReplicationControlManager.createTopic), a manual replica assignment
// takes the partition count and replication factor from itself: the
// request must leave both at -1, else it is refused with INVALID_REQUEST
// (the replication factor is checked first), for validate_only too, and
// nothing is created. The assignment's partitions must be 0..n-1, each once.
func TestCreateTopics_AssignmentWithCountsIsRefused(t *testing.T) {
	ts := startServer(t)
	rc := ts.raw(t)
	for i, tc := range []struct {
		parts        int32
		rf           int16
		indexes      []int32
		validateOnly bool
		code         int16
		msg          string
	}{
		{parts: 1, rf: 1, indexes: []int32{0}, code: kerr.InvalidRequest.Code, msg: "replication factor was not set to -1"},
		{parts: -1, rf: 1, indexes: []int32{0}, code: kerr.InvalidRequest.Code, msg: "replication factor was not set to -1"},
		{parts: 1, rf: -1, indexes: []int32{0}, code: kerr.InvalidRequest.Code, msg: "numPartitions was not set to -1"},
		{parts: 2, rf: -1, indexes: []int32{0, 1}, validateOnly: true, code: kerr.InvalidRequest.Code, msg: "numPartitions was not set to -1"},
		{parts: -1, rf: -1, indexes: []int32{0, 0}, code: kerr.InvalidReplicaAssignment.Code, msg: "multiple manual partition assignments for partition 0"},
		{parts: -1, rf: -1, indexes: []int32{0, 2}, code: kerr.InvalidReplicaAssignment.Code, msg: "consecutive 0-based"},
		{parts: -1, rf: -1, indexes: []int32{1, 0}}, // any order
	} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis, req.ValidateOnly = 5000, tc.validateOnly
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = fmt.Sprintf("assigned%d", i), tc.parts, tc.rf
		for _, p := range tc.indexes {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = p, []int32{nodeID}
			ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
		}
		req.Topics = append(req.Topics, ct)
		rt := do[*kmsg.CreateTopicsResponse](rc, req, 7).Topics[0]
		if rt.ErrorCode != tc.code {
			t.Errorf("%s (partitions %d, replication factor %d, assignment %v): %v; want %v", ct.Topic, tc.parts, tc.rf, tc.indexes, kerr.ErrorForCode(rt.ErrorCode), kerr.ErrorForCode(tc.code))
			continue
		}
		if tc.code != 0 {
			if rt.ErrorMessage == nil || !strings.Contains(*rt.ErrorMessage, tc.msg) {
				t.Errorf("%s: message %v, want one saying %q", ct.Topic, rt.ErrorMessage, tc.msg)
			}
			if _, err := ts.log.Partitions(ct.Topic); err == nil {
				t.Errorf("%s: created though refused", ct.Topic)
			}
			continue
		}
		if n, err := ts.log.Partitions(ct.Topic); err != nil || n != len(tc.indexes) || rt.NumPartitions != int32(n) || rt.ReplicationFactor != 1 {
			t.Errorf("%s: %d partitions (%v), answered %d partitions replication factor %d; want %d and 1", ct.Topic, n, err, rt.NumPartitions, rt.ReplicationFactor, len(tc.indexes))
		}
	}
}

// TestCreatePartitions_ValidateOnlyAgreesWithTheRealCall: Kafka's
// validate_only runs the same checks as the real request: a validation of
// growing __consumer_offsets (which the real call refuses, its keys would
// move to other partitions) is refused too.
func TestCreatePartitions_ValidateOnlyAgreesWithTheRealCall(t *testing.T) {
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

// TestCreateTopics_WorkerTopicsHaveOnePartition: the worker's topics
// (_tributary.*) have exactly one partition, and this log cannot delete
// them: CreateTopics of one with more is refused with INVALID_PARTITIONS
// (a provisioning script giving every topic 25 partitions), one without a
// count (-1) and one auto-created by Metadata get one partition, not the
// log's default.
func TestCreateTopics_WorkerTopicsHaveOnePartition(t *testing.T) {
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: quietLogger(), NumPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveLog(t, l)
	adm := kadm.NewClient(ts.client(t))
	ctx := t.Context()
	resp, err := adm.CreateTopic(ctx, 25, -1, map[string]*string{"cleanup.policy": kmsg.StringPtr("compact")}, "_tributary.offsets")
	if err == nil {
		err = resp.Err
	}
	if !errors.Is(err, kerr.InvalidPartitions) {
		t.Errorf("create _tributary.offsets with 25 partitions: %v, want INVALID_PARTITIONS", err)
	}
	if resp, err := adm.CreateTopic(ctx, -1, -1, nil, "_tributary.targets"); err != nil || resp.Err != nil {
		t.Fatalf("create _tributary.targets with the default partitions: %v %v", err, resp.Err)
	}
	cl := ts.client(t, kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "_tributary.leases", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce to _tributary.leases (auto-created): %v", err)
	}
	for name, want := range map[string]int{"_tributary.offsets": 0, "_tributary.targets": 1, "_tributary.leases": 1} {
		n, err := ts.log.Partitions(name)
		if want == 0 {
			if err == nil {
				t.Errorf("%s created with %d partitions", name, n)
			}
			continue
		}
		if err != nil || n != want {
			t.Errorf("%s has %d partitions (%v), want %d", name, n, err, want)
		}
	}
}
