package kafka

import (
	"fmt"
	"syscall"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestErrorCode_RollFailureIsRetriable: a partition that could not roll
// takes appends again once the roll succeeds, so producers must retry, not
// fail the batch as they do on UNKNOWN_SERVER_ERROR.
func TestErrorCode_RollFailureIsRetriable(t *testing.T) {
	err := fmt.Errorf("append: %w", &tlog.RollError{Partition: "t-0", Base: 7, Err: syscall.EMFILE})
	code := errorCode(err)
	if ke := kerr.ErrorForCode(code); ke != kerr.KafkaStorageError || !kerr.IsRetriable(ke) {
		t.Fatalf("errorCode(%v) = %d (%v); want the retriable KAFKA_STORAGE_ERROR", err, code, ke)
	}
}

// TestErrorCode_TopicNotOpened: a topic the log left closed (more
// partitions than its limit) is KAFKA_STORAGE_ERROR to clients, as Kafka
// answers for a partition in an offline log directory: retriable, not
// UNKNOWN_TOPIC_OR_PARTITION (which invites an auto-create).
func TestErrorCode_TopicNotOpened(t *testing.T) {
	err := fmt.Errorf("produce: %w", &tlog.TopicNotOpenedError{Topic: "big", Partitions: 1001, Limit: 1000})
	code := errorCode(err)
	if ke := kerr.ErrorForCode(code); ke != kerr.KafkaStorageError || !kerr.IsRetriable(ke) {
		t.Fatalf("errorCode(%v) = %d (%v), want the retriable KAFKA_STORAGE_ERROR", err, code, ke)
	}
}
