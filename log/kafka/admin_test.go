package kafka

import (
	"fmt"
	"testing"

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
