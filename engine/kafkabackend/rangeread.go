package kafkabackend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var _ engine.RangeReader = (*Backend)(nil)

// rangeBatchBytes bounds one fetch of ReadRange, and so one call of its fn.
const rangeBatchBytes = 1 << 20

// rangeRetries bounds the retries of ReadRange on retriable fetch errors
// (leader moved, leader not yet elected) in a row.
const rangeRetries = 5

// ReadRange implements engine.RangeReader.
//
// It sends its own Fetch requests to the partition's leader, without a
// consumer: each answer says which offset comes next, past transaction
// markers and compacted-away records alike, and which is the high
// watermark, so a range that ends in a gap or beyond the end of the
// partition ends when the partition has nothing more below it, instead of
// waiting for a record that never comes. Reading is read-uncommitted, as
// the worker's producer writes no transactions.
func (b *Backend) ReadRange(ctx context.Context, topic string, partition int32, from, to int64, fn func([]connect.Record) error) error {
	next := max(from, 0)
	var (
		leader  int32
		topicID [16]byte
		located bool
		retries int
	)
	dec := kgo.DefaultDecompressor()
	for next < to {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %s/%d at %d: %w", topic, partition, next, err)
		}
		if !located {
			var err error
			if leader, topicID, err = b.partitionLeader(ctx, topic, partition); err != nil {
				return err
			}
			located = true
		}
		rp, err := b.fetchOnce(ctx, leader, topic, topicID, partition, next)
		if err == nil {
			err = kerr.ErrorForCode(rp.ErrorCode)
		}
		switch {
		case err == nil:
		case errors.Is(err, kerr.OffsetOutOfRange) && retries < rangeRetries:
			// Below the log start (retention removed them) or beyond the
			// end. Kafka's error answer carries neither bound: ask.
			retries++
			start, end, berr := b.partitionBounds(ctx, topic, partition)
			if berr != nil {
				return berr
			}
			if next >= end {
				return nil
			}
			next = max(next, start)
			continue
		case ctx.Err() == nil && kerr.IsRetriable(err) && retries < rangeRetries:
			retries++
			located = false // the leader may have moved
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(retries) * 100 * time.Millisecond):
			}
			continue
		default:
			return fmt.Errorf("read %s/%d at %d: %w (check that the topic and partition exist and the worker may read them)", topic, partition, next, err)
		}
		fp, after := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
			Offset: next, Topic: topic, Partition: partition,
		}, rp, dec, nil)
		if fp.Err != nil {
			return fmt.Errorf("read %s/%d at %d: %w", topic, partition, next, fp.Err)
		}
		if err := emitBounded(fp.Records, next, to, fn); err != nil {
			return err
		}
		if after <= next {
			if rp.HighWatermark <= next {
				return nil // the end of the partition: nothing more to read
			}
			// Records below the high watermark and none in the answer (a
			// throttled or otherwise empty answer): ask again, a few times.
			if retries++; retries > rangeRetries {
				return fmt.Errorf("read %s/%d at %d: the broker answered no record below its high watermark %d %d times in a row (check the broker's logs and quotas)", topic, partition, next, rp.HighWatermark, retries)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(retries) * 100 * time.Millisecond):
			}
			continue
		}
		retries = 0
		next = after
	}
	return nil
}

// emitBounded hands fn the records of recs with offsets in [from, to), in
// batches of about rangeBatchBytes: a fetch is bounded in bytes as stored,
// which compression may make many times smaller than the records.
func emitBounded(recs []*kgo.Record, from, to int64, fn func([]connect.Record) error) error {
	var (
		out   []connect.Record
		bytes int
	)
	for _, r := range recs {
		if r.Offset >= to {
			break
		}
		if r.Offset < from {
			continue
		}
		out = append(out, fromKgo(r))
		bytes += len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			bytes += len(h.Key) + len(h.Value)
		}
		if bytes >= rangeBatchBytes {
			if err := fn(out); err != nil {
				return err
			}
			out, bytes = nil, 0
		}
	}
	if len(out) > 0 {
		return fn(out)
	}
	return nil
}

// partitionBounds returns the log start and high watermark of a partition.
func (b *Backend) partitionBounds(ctx context.Context, topic string, partition int32) (start, end int64, err error) {
	bounds, err := b.EndOffsets(ctx, topic)
	if err != nil {
		return 0, 0, fmt.Errorf("read %s/%d: %w", topic, partition, err)
	}
	for _, pb := range bounds {
		if pb.Partition == partition {
			return pb.Start, pb.End, nil
		}
	}
	return 0, 0, fmt.Errorf("read %s/%d: %w (the topic has %d partitions)", topic, partition, kerr.UnknownTopicOrPartition, len(bounds))
}

// partitionLeader returns the broker that leads topic/partition and the
// topic's ID (zero when the cluster has none).
func (b *Backend) partitionLeader(ctx context.Context, topic string, partition int32) (int32, [16]byte, error) {
	md, err := b.adm.Metadata(ctx, topic)
	if err != nil {
		return 0, [16]byte{}, fmt.Errorf("read %s/%d: metadata: %w", topic, partition, err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		var err error = kerr.UnknownTopicOrPartition
		if ok {
			err = td.Err
		}
		return 0, [16]byte{}, fmt.Errorf("read %s/%d: %w (check the topic name)", topic, partition, err)
	}
	pd, ok := td.Partitions[partition]
	if !ok {
		return 0, [16]byte{}, fmt.Errorf("read %s/%d: %w (the topic has %d partitions)", topic, partition, kerr.UnknownTopicOrPartition, len(td.Partitions))
	}
	if pd.Err != nil && !kerr.IsRetriable(pd.Err) {
		return 0, [16]byte{}, fmt.Errorf("read %s/%d: %w", topic, partition, pd.Err)
	}
	if pd.Leader < 0 {
		return 0, [16]byte{}, fmt.Errorf("read %s/%d: %w (the partition has no leader; retry when the cluster recovered)", topic, partition, kerr.LeaderNotAvailable)
	}
	return pd.Leader, td.ID, nil
}

// fetchOnce sends one sessionless Fetch of a partition from offset to its
// leader, answering at once with what is there (no long poll).
func (b *Backend) fetchOnce(ctx context.Context, leader int32, topic string, topicID [16]byte, partition int32, offset int64) (*kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = rangeBatchBytes
	req.IsolationLevel = 0 // read uncommitted: up to the high watermark
	req.SessionID = 0
	req.SessionEpoch = -1 // no fetch session
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rt.TopicID = topicID
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = partition
	p.FetchOffset = offset
	p.CurrentLeaderEpoch = -1
	p.LastFetchedEpoch = -1
	p.LogStartOffset = -1
	p.PartitionMaxBytes = rangeBatchBytes
	rt.Partitions = append(rt.Partitions, p)
	req.Topics = append(req.Topics, rt)

	kresp, err := b.client.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s/%d at %d from broker %d: %w", topic, partition, offset, leader, err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("fetch %s/%d at %d from broker %d: %w", topic, partition, offset, leader, err)
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.Topic != topic && t.TopicID != topicID {
			continue
		}
		for j := range t.Partitions {
			if t.Partitions[j].Partition == partition {
				return &t.Partitions[j], nil
			}
		}
	}
	return nil, fmt.Errorf("fetch %s/%d at %d from broker %d: the answer has no such partition", topic, partition, offset, leader)
}
