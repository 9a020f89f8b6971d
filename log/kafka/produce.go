package kafka

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produce appends the record batch of each partition of a Produce request
// as the producer built it (Log.AppendRawAsync checks its CRC and records
// and assigns offsets, in request order) and returns the function that
// completes the answer: it waits until every append is durable and builds
// the response. The
// connection runs it in request order while it reads the next requests, so
// that the produce requests a client pipelines share fsyncs. Every acks
// level waits for the fsync: the log acknowledges nothing it could lose, so
// acks=1 and acks=all are the same here, and acks=0 only skips the answer.
func (s *Server) produce(ctx context.Context, req *kmsg.ProduceRequest) func() *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	txn := req.TransactionID != nil
	// As Kafka (ReplicaManager.appendRecords): acks other than -1 (all),
	// 0 and 1 append nothing and every partition says so.
	badAcks := req.Acks != -1 && req.Acks != 0 && req.Acks != 1
	type pending struct {
		t, p int
		wait func(context.Context) error
	}
	var appends []pending // the partitions to append to; wait set once appended
	for ti, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LogAppendTime = -1
			rp.BaseOffset = -1
			if txn {
				rp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				rp.ErrorMessage = kmsg.StringPtr("transactions are not supported by this listener")
			} else if badAcks {
				rp.ErrorCode = kerr.InvalidRequiredAcks.Code
				rp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("acks %d: a producer's acks must be -1 (all), 0 or 1", req.Acks))
			} else {
				appends = append(appends, pending{t: ti, p: pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	appendOne := func(a *pending) {
		t, rp := &req.Topics[a.t], &resp.Topics[a.t].Partitions[a.p]
		base, wait, err := s.appendBatch(ctx, req.Version, t.Topic, rp.Partition, t.Partitions[a.p].Records)
		a.wait, rp.BaseOffset = wait, base
		if err != nil {
			rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
			s.logger.Debug("kafka produce refused", "topic", t.Topic, "partition", rp.Partition, "error", err)
		}
	}
	if len(appends) == 1 {
		appendOne(&appends[0])
	} else {
		// Partitions are independent: their batches are checked and
		// written in parallel (the CPU of one request spreads over the
		// cores, as in-process appenders do). All are appended before the
		// connection reads its next request, which keeps each partition's
		// order across requests.
		var (
			wg       sync.WaitGroup
			panicked atomic.Value
		)
		sem := make(chan struct{}, maxParallelAppends)
		for i := range appends {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() {
					if r := recover(); r != nil {
						panicked.CompareAndSwap(nil, fmt.Sprint(r))
					}
					<-sem
					wg.Done()
				}()
				appendOne(&appends[i])
			}()
		}
		wg.Wait()
		if r := panicked.Load(); r != nil {
			panic(r) // in the connection's goroutine, whose guard closes it
		}
	}
	var waits []pending
	for _, a := range appends {
		if a.wait != nil && resp.Topics[a.t].Partitions[a.p].ErrorCode == 0 {
			waits = append(waits, a)
		}
	}
	return func() *kmsg.ProduceResponse {
		for _, w := range waits {
			if err := w.wait(ctx); err != nil {
				rp := &resp.Topics[w.t].Partitions[w.p]
				rp.BaseOffset, rp.ErrorCode, rp.ErrorMessage = -1, kerr.KafkaStorageError.Code, errorMessage(err)
				s.logger.Warn("kafka produce not durable", "topic", resp.Topics[w.t].Topic, "partition", rp.Partition, "error", err)
			}
		}
		for ti := range resp.Topics {
			rt := &resp.Topics[ti]
			for pi := range rt.Partitions {
				rp := &rt.Partitions[pi]
				if start, _, err := s.log.Offsets(rt.Topic, rp.Partition); err == nil {
					rp.LogStartOffset = start
				} else {
					rp.LogStartOffset = -1
				}
			}
		}
		return resp
	}
}

// appendBatch appends the record batch of one partition's records field
// without waiting for durability. It returns its base offset and the wait
// for it.
//
// As Kafka (ProduceRequest.validateRecords, Produce v3 and later), the
// field holds exactly one batch: a set of several is refused whole with
// INVALID_RECORD, so that no batch of it is stored while the partition is
// answered with an error (a later batch refused by the log, for its CRC,
// size, keys or sequence, would otherwise leave the earlier ones stored,
// and the client's retry would store them twice). The framing of every
// batch is checked first, so that bytes that are no batch are
// CORRUPT_MESSAGE, as Kafka's batch iterator finds them.
func (s *Server) appendBatch(ctx context.Context, version int16, topic string, partition int32, records []byte) (int64, func(context.Context) error, error) {
	if len(records) == 0 {
		return -1, nil, kerr.InvalidRecord
	}
	if topic == tlog.OffsetsTopic {
		// As Kafka: the groups' commits are written by the log alone
		// (a client's records there could move any group's offsets).
		return -1, nil, fmt.Errorf("%w: cannot append to internal topic %s (commit a group's offsets with OffsetCommit)", tlog.ErrInternalTopic, topic)
	}
	batches := 0
	var first int64
	for rest := records; len(rest) > 0; {
		if len(rest) < 17 {
			return -1, nil, fmt.Errorf("%w: %d trailing bytes are no record batch", kerr.CorruptMessage, len(rest))
		}
		n := int64(int32(binary.BigEndian.Uint32(rest[8:]))) + 12
		if n < 61 || n > int64(len(rest)) {
			return -1, nil, fmt.Errorf("%w: record batch length %d does not fit the %d bytes sent", kerr.CorruptMessage, n-12, len(rest))
		}
		if magic := rest[16]; magic != 2 {
			return -1, nil, fmt.Errorf("%w: record batch magic %d; this broker stores magic 2 only (upgrade the client)", kerr.UnsupportedForMessageFormat, magic)
		}
		if attrs := binary.BigEndian.Uint16(rest[21:]); attrs&0x10 != 0 {
			return -1, nil, fmt.Errorf("%w: transactional batches are not supported", kerr.TransactionalIDAuthorizationFailed)
		}
		if batches == 0 {
			first = n
		}
		batches++
		rest = rest[n:]
	}
	if batches > 1 {
		return -1, nil, fmt.Errorf("%w: produce to %s-%d: %d record batches; Produce requests with version %d are only allowed to contain exactly one record batch per partition (send one batch per partition per request)", kerr.InvalidRecord, topic, partition, batches, version)
	}
	base, wait, err := s.log.AppendRawAsync(ctx, topic, partition, records[:first])
	if err != nil {
		return -1, wait, fmt.Errorf("produce to %s-%d: %w", topic, partition, err)
	}
	return base, wait, nil
}

// maxParallelAppends bounds the partitions of one Produce request appended
// at once.
var maxParallelAppends = max(runtime.GOMAXPROCS(0), 2)

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

// maxProduceEntries bounds the topic and partition entries of one Produce
// request. A producer sends one entry per partition it has a batch for;
// the log holds at most DefaultMaxPartitions per topic by default.
const maxProduceEntries = 1 << 17

// checkProduceShape walks the body of a Produce request (v3 and later; the
// compact encodings when flexible) and checks that every topic and
// partition entry it declares is there and that there are at most
// maxProduceEntries of them, before kmsg allocates them: a count field
// alone would otherwise make it allocate ~32 bytes of memory per byte of
// the request. The rest (the records, the tags) is checked as it is
// decoded.
func checkProduceShape(body []byte, flexible bool) error {
	b := body
	bad := func(what string) error {
		return fmt.Errorf("%w: Produce: %s at byte %d of %d", errMalformed, what, len(body)-len(b), len(body))
	}
	tooMany := fmt.Errorf("%w: Produce request with more than %d topic and partition entries (send fewer partitions per request)", errMalformed, maxProduceEntries)
	// length reads a length or count of the given kind as kmsg does (and
	// Kafka: any negative one is null). Compact encodings store it plus
	// one in a 32-bit uvarint, where an array count wraps to int32.
	const (
		str16   = iota // string: int16 length
		bytes32        // bytes: int32 length
		array32        // array: int32 count
	)
	length := func(kind int) (int64, bool) {
		if flexible {
			n, sz := binary.Uvarint(b)
			if sz <= 0 || sz > 5 || n > math.MaxUint32 {
				return 0, false
			}
			b = b[sz:]
			if kind == array32 {
				return int64(int32(uint32(n))) - 1, true
			}
			return int64(n) - 1, true
		}
		if kind == str16 {
			if len(b) < 2 {
				return 0, false
			}
			n := int16(binary.BigEndian.Uint16(b))
			b = b[2:]
			return int64(n), true
		}
		if len(b) < 4 {
			return 0, false
		}
		n := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		return int64(n), true
	}
	skip := func(kind int) bool { // a string or bytes; negative: null
		n, ok := length(kind)
		if !ok || n > int64(len(b)) {
			return false
		}
		b = b[max(n, 0):]
		return true
	}
	tags := func() bool {
		if !flexible {
			return true
		}
		rest, err := skipTags(b)
		b = rest
		return err == nil
	}
	if !skip(str16) { // transactional id
		return bad("bad transactional id")
	}
	if len(b) < 6 { // acks, timeout
		return bad("truncated header")
	}
	b = b[6:]
	topics, ok := length(array32)
	if !ok || topics > int64(len(b)) {
		return bad("bad topic count")
	}
	entries := max(topics, 0)
	for range topics {
		if !skip(str16) {
			return bad("bad topic name")
		}
		parts, ok := length(array32)
		if !ok || parts > int64(len(b)) {
			return bad("bad partition count")
		}
		if entries += max(parts, 0); entries > maxProduceEntries {
			return tooMany
		}
		for range parts {
			if len(b) < 4 {
				return bad("truncated partition")
			}
			b = b[4:]
			if !skip(bytes32) || !tags() {
				return bad("bad records")
			}
		}
		if !tags() {
			return bad("bad topic tags")
		}
	}
	if entries > maxProduceEntries {
		return tooMany
	}
	return nil
}
