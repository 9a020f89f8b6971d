package kafka

import (
	"fmt"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
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
