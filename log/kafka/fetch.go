package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"sync"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetch answers a Fetch request: data from every requested partition, at
// most MaxBytes in all and PartitionMaxBytes per partition (but always the
// first batch, KIP-74), waiting up to MaxWaitMillis until MinBytes are
// there. Fetch sessions (KIP-227) are not kept: the answer carries session
// id 0, which tells clients to send full requests.
//
// ra, when not nil, holds the connection's read-ahead: reads of the next
// windows started when the previous answer went out, used when this
// request asks for them; the reads after this answer start as it returns.
func (s *Server) fetch(ctx context.Context, req *kmsg.FetchRequest, ra *readAhead) *kmsg.FetchResponse {
	wait := time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond
	deadline := time.Now().Add(wait)
	minBytes := max(int(req.MinBytes), 1)
	for {
		resp, n, idle, failed, next := s.fetchOnce(ctx, req, ra)
		left := time.Until(deadline)
		if n >= minBytes || failed || left <= 0 || len(idle) == 0 || ctx.Err() != nil {
			ra.start(s, next)
			return resp
		}
		if !s.waitForData(ctx, idle, left) {
			return resp
		}
		if release := ra.takeHeld(); release != nil {
			release() // resp is dropped: a new one is built
		}
	}
}

// brokerFetchMaxBytes bounds the record bytes of one Fetch answer, whatever
// the request asks for, as the broker setting fetch.max.bytes (default
// 55 MiB) does in Kafka: an answer is built in memory before it is sent.
const brokerFetchMaxBytes = 57671680

// fetchPos names a partition at the offset a fetch waits at.
type fetchPos struct {
	topic     string
	partition int32
	offset    int64
}

// fetchOnce reads every partition once without waiting. It returns the
// response, its record bytes, the partitions that had no data (to wait on)
// and whether any partition failed (which answers at once, as Kafka does).
func (s *Server) fetchOnce(ctx context.Context, req *kmsg.FetchRequest, ra *readAhead) (*kmsg.FetchResponse, int, []fetchPos, bool, []aheadKey) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	budget := min(int(req.MaxBytes), brokerFetchMaxBytes)
	if req.Version < 3 || budget <= 0 {
		budget = 50 << 20
	}
	total := 0
	var idle []fetchPos
	failed := false
	var next []aheadKey // where the partitions with more data continue
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.RecordBatches = []byte{} // empty, not null: librdkafka rejects a null record set
			limit := min(int(p.PartitionMaxBytes), budget-total)
			if limit <= 0 && total > 0 {
				// Out of budget: report the bounds only.
				if start, end, err := s.log.Offsets(t.Topic, p.Partition); err == nil {
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = end, end, start
				} else {
					rp.ErrorCode = errorCode(err)
					failed = true
				}
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			limit = max(limit, 1)
			pos := fetchPos{t.Topic, p.Partition, p.FetchOffset}
			res, ok := ra.take(s, pos, limit)
			var err error
			if !ok {
				res, err = s.log.ReadBatches(ctx, t.Topic, p.Partition, p.FetchOffset, tlog.ReadOptions{MaxBytes: limit})
			}
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
			ra.hold(res) // its buffers go back once the answer is written
			switch {
			case err != nil:
				rp.ErrorCode = errorCode(err)
				if errors.Is(err, tlog.ErrUnknownTopic) || errors.Is(err, tlog.ErrUnknownPartition) {
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				}
				failed = true
			case len(res.Batches) > 0:
				// The stored batches as they are: compression, producer
				// ids and timestamps as the producer wrote them.
				rp.RecordBatches = joinBatches(res.Batches)
				total += len(rp.RecordBatches)
				if res.NextOffset < res.HighWatermark {
					next = append(next, aheadKey{fetchPos{t.Topic, p.Partition, res.NextOffset}, limit})
				}
			default:
				idle = append(idle, fetchPos{t.Topic, p.Partition, p.FetchOffset})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, total, idle, failed, next
}

// joinBatches returns the batches as one record set: without a copy when
// they lie back to back in one buffer (as the log reads them, from one
// window of a segment), else copied together.
func joinBatches(batches [][]byte) []byte {
	if len(batches) == 1 {
		return batches[0]
	}
	n := 0
	adjacent := true
	for i, b := range batches {
		n += len(b)
		if i > 0 && adjacent {
			prev := batches[i-1]
			adjacent = len(b) > 0 && cap(prev) > len(prev) && &prev[:len(prev)+1][len(prev)] == &b[0]
		}
	}
	if adjacent {
		return batches[0][:n]
	}
	out := make([]byte, 0, n)
	for _, b := range batches {
		out = append(out, b...)
	}
	return out
}

// waitForData waits until one of the partitions has data past its offset,
// ctx ends or wait passes. It reports whether data arrived.
//
// The log has no exported wait over several partitions, so one goroutine
// per partition long-polls Log.Read; the first to see data cancels the
// others, and all are gone when waitForData returns.
func (s *Server) waitForData(ctx context.Context, parts []fetchPos, wait time.Duration) bool {
	if len(parts) == 1 {
		p := parts[0]
		res, err := s.log.Read(ctx, p.topic, p.partition, p.offset, tlog.ReadOptions{MaxBytes: 1, MaxWait: wait})
		return err != nil || res.NextOffset > p.offset
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan bool, len(parts))
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.log.Read(wctx, p.topic, p.partition, p.offset, tlog.ReadOptions{MaxBytes: 1, MaxWait: wait})
			got <- (err != nil && wctx.Err() == nil) || res.NextOffset > p.offset
		}()
	}
	arrived := false
	for range parts {
		if <-got {
			arrived = true
			break
		}
	}
	cancel()
	wg.Wait()
	return arrived
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends one record in its varint framing: kmsg writes the
// length it is given, so the record is written with length 0 (one byte)
// and moved up once its real length is known.
func appendRecord(dst []byte, r *kmsg.Record) []byte {
	r.Length = 0
	start := len(dst)
	dst = r.AppendTo(dst)
	var lb [binary.MaxVarintLen64]byte
	n := binary.PutVarint(lb[:], int64(len(dst)-start-1))
	if n > 1 {
		end := len(dst)
		dst = append(dst, lb[:n-1]...)
		copy(dst[start+n:], dst[start+1:end])
	}
	copy(dst[start:], lb[:n])
	return dst
}

// listOffsets answers ListOffsets: -2 the log start, -1 the end (the high
// watermark), -3 the first record with the largest timestamp (KIP-734), a
// timestamp the first offset at or after it (-1 when no record is that new,
// or for -3 none at all, as Kafka answers).
func (s *Server) listOffsets(ctx context.Context, req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch = -1
			off, ts, err := s.offsetFor(ctx, t.Topic, p.Partition, p.Timestamp, req.Version)
			if err != nil {
				rp.ErrorCode = errorCode(err)
			}
			rp.Offset, rp.Timestamp = off, ts
			if req.Version == 0 && err == nil {
				rp.OldStyleOffsets = []int64{off}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// offsetFor answers one partition of a ListOffsets request of version v. A
// timestamp -3 needs v7 (Kafka's timestampMinSupportedVersion).
func (s *Server) offsetFor(ctx context.Context, topic string, partition int32, ts int64, v int16) (int64, int64, error) {
	start, end, err := s.log.Offsets(topic, partition)
	if err != nil {
		return -1, -1, err
	}
	switch {
	case ts == -2:
		return start, -1, nil
	case ts == -1:
		return end, -1, nil
	case ts == -3 && v >= 7:
		off, t, found, err := s.log.OffsetOfMaxTimestamp(ctx, topic, partition)
		if err != nil || !found {
			return -1, -1, err
		}
		return off, t.UnixMilli(), nil
	case ts < 0:
		return -1, -1, kerr.UnsupportedVersion
	}
	off, found, err := s.log.OffsetForTime(topic, partition, time.UnixMilli(ts))
	if err != nil {
		return -1, -1, err
	}
	if !found {
		return -1, -1, nil
	}
	res, err := s.log.Read(ctx, topic, partition, off, tlog.ReadOptions{MaxBytes: 1})
	if err != nil || len(res.Records) == 0 {
		return off, ts, nil
	}
	return off, res.Records[0].Timestamp.UnixMilli(), nil
}
