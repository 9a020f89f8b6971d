package kafka

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produce appends the record batches of a Produce request as the producer
// built them (Log.AppendRaw checks each CRC and assigns offsets). Every
// acks level waits for the fsync: the log acknowledges nothing it could
// lose, so acks=1 and acks=all are the same here, and acks=0 only skips
// the answer.
func (s *Server) produce(ctx context.Context, req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	txn := req.TransactionID != nil
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LogAppendTime = -1
			var base int64 = -1
			var err error
			if txn {
				err = kerr.TransactionalIDAuthorizationFailed
				rp.ErrorMessage = kmsg.StringPtr("transactions are not supported by this listener")
			} else {
				base, err = s.appendBatches(ctx, t.Topic, p.Partition, p.Records)
			}
			rp.BaseOffset = base
			if err != nil {
				rp.ErrorCode = errorCode(err)
				if rp.ErrorMessage == nil {
					rp.ErrorMessage = errorMessage(err)
				}
				s.logger.Debug("kafka produce refused", "topic", t.Topic, "partition", p.Partition, "error", err)
			}
			if start, _, err := s.log.Offsets(t.Topic, p.Partition); err == nil {
				rp.LogStartOffset = start
			} else {
				rp.LogStartOffset = -1
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// appendBatches appends the batches of one partition's records field and
// returns the base offset of the first.
func (s *Server) appendBatches(ctx context.Context, topic string, partition int32, records []byte) (int64, error) {
	if len(records) == 0 {
		return -1, kerr.InvalidRecord
	}
	first := int64(-1)
	for len(records) > 0 {
		if len(records) < 17 {
			return first, fmt.Errorf("%w: %d trailing bytes are no record batch", kerr.CorruptMessage, len(records))
		}
		n := int64(int32(binary.BigEndian.Uint32(records[8:]))) + 12
		if n < 61 || n > int64(len(records)) {
			return first, fmt.Errorf("%w: record batch length %d does not fit the %d bytes sent", kerr.CorruptMessage, n-12, len(records))
		}
		if magic := records[16]; magic != 2 {
			return first, fmt.Errorf("%w: record batch magic %d; this broker stores magic 2 only (upgrade the client)", kerr.UnsupportedForMessageFormat, magic)
		}
		if attrs := binary.BigEndian.Uint16(records[21:]); attrs&0x10 != 0 {
			return first, fmt.Errorf("%w: transactional batches are not supported", kerr.TransactionalIDAuthorizationFailed)
		}
		base, err := s.log.AppendRaw(ctx, topic, partition, records[:n])
		if err != nil {
			return first, fmt.Errorf("produce to %s-%d: %w", topic, partition, err)
		}
		if first < 0 {
			first = base
		}
		records = records[n:]
	}
	return first, nil
}

// initProducerID hands out an idempotent producer id. Transactional ids are
// refused: this log has no transaction coordinator.
func (s *Server) initProducerID(req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp
	}
	id, epoch, err := s.log.InitProducerID()
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, epoch
	return resp
}
