package kafka

import (
	"testing"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
