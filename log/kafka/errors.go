package kafka

import (
	"errors"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
)

// errorCode maps an error of the log to the Kafka error code a client
// understands. Unknown errors become UNKNOWN_SERVER_ERROR.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	var re *tlog.RollError
	var notOpened *tlog.TopicNotOpenedError
	switch {
	case errors.As(err, &ke):
		return ke.Code
	case errors.As(err, &notOpened):
		// A topic the log left closed (more partitions than its limit) is
		// served as Kafka serves a partition in an offline log directory
		// (ReplicaManager: HostedPartition.Offline): retriable, so clients
		// wait for it to come back (the limit raised) instead of taking it
		// for unknown. Metadata shows its partitions without a leader.
		return kerr.KafkaStorageError.Code
	case errors.Is(err, tlog.ErrUnknownTopic), errors.Is(err, tlog.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, tlog.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, tlog.ErrInvalidTopicName), errors.Is(err, tlog.ErrInternalTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, tlog.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, tlog.ErrPolicyViolation):
		return kerr.PolicyViolation.Code
	case errors.Is(err, tlog.ErrInvalidConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, tlog.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, tlog.ErrRecordTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, tlog.ErrUnsupportedBatch):
		return kerr.CorruptMessage.Code
	case errors.Is(err, tlog.ErrCompactedTopicNilKey):
		return kerr.InvalidRecord.Code
	case errors.Is(err, tlog.ErrProducerFenced):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, tlog.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, tlog.ErrUnknownProducerID):
		return kerr.UnknownProducerID.Code
	case errors.Is(err, tlog.ErrUnknownGroup):
		return kerr.GroupIDNotFound.Code
	case errors.Is(err, tlog.ErrGroupNotEmpty):
		return kerr.NonEmptyGroup.Code
	case errors.Is(err, tlog.ErrClosed):
		return kerr.NotLeaderForPartition.Code // retriable: the client comes back
	case tlog.IsCorruption(err):
		return kerr.KafkaStorageError.Code
	case errors.As(err, &re):
		// Retriable for clients: the partition retries the roll on the
		// next append (out of descriptors or disk space, for now).
		return kerr.KafkaStorageError.Code
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is the message Kafka's newer responses carry beside a code.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
