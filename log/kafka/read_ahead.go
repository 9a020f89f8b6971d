package kafka

import (
	"context"
	"sync"

	tlog "github.com/tributary-io/tributary/log"
)

// readAhead reads, for each partition a Fetch answer returned data of, the
// window that follows, in the background while the answer travels and the
// client processes it. Consumers (franz-go, librdkafka, the Java client)
// keep one Fetch in flight per broker and send the next, from where the
// last answer ended, only once they processed it: that next Fetch then
// finds its data read, and the log's read no longer adds to every round
// trip.
//
// A read ahead is used only by the next Fetch of the connection, for the
// same partition and offset and a limit at least as large; the others are
// dropped. The stored batches it read do not change (the log only appends,
// and a compaction's copy holds the same offsets); the bounds it answers
// with (high watermark, log start) are read again when it is used, and a
// log start that moved past it makes the Fetch read again, which answers
// OFFSET_OUT_OF_RANGE as it must. A topic deleted and created again under
// its name has a new topic id: reads ahead of the old one are not served.
//
// A connection's reader goroutine alone calls take and start; close, when
// the connection ends, cancels the reads under way and waits for them.
type readAhead struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	reads  map[fetchPos]*aheadRead
	// ids are topic ids looked up during one Fetch (a topic deleted and
	// created again under its name gets a new id: its old reads ahead are
	// not served).
	ids map[string]string
	// held are the reads the Fetch answer being built refers to: their
	// buffers go back to the log once the answer is written (takeHeld).
	held []tlog.BatchReadResult
}

// aheadKey is a read to do: a partition, from an offset, up to limit bytes.
type aheadKey struct {
	pos   fetchPos
	limit int
}

type aheadRead struct {
	limit   int
	topicID string // of the topic when the read started
	done    chan struct{}
	res     tlog.BatchReadResult
	err     error
}

// Bounds of what is read ahead (in size limits of the reads): per
// connection, and over all connections of a listener.
const (
	maxAheadBytes      = 64 << 20
	maxAheadTotalBytes = 256 << 20
)

func newReadAhead(ctx context.Context) *readAhead {
	ctx, cancel := context.WithCancel(ctx)
	return &readAhead{ctx: ctx, cancel: cancel}
}

// take returns the read ahead of pos when there is one for limit, waiting
// for it to finish, with the partition's bounds as they are now. ok is
// false when the caller must read itself. Every other read is dropped.
func (ra *readAhead) take(s *Server, pos fetchPos, limit int) (res tlog.BatchReadResult, ok bool) {
	if ra == nil || len(ra.reads) == 0 {
		return res, false
	}
	r := ra.reads[pos]
	delete(ra.reads, pos)
	if r != nil {
		s.aheadBytes.Add(-int64(r.limit))
	}
	if r == nil || r.limit > limit {
		if r != nil {
			r.releaseWhenDone()
		}
		return res, false
	}
	<-r.done
	if r.err != nil || len(r.res.Batches) == 0 || ra.topicID(s, pos.topic) != r.topicID {
		r.res.Release()
		return res, false
	}
	start, end, err := s.log.Offsets(pos.topic, pos.partition)
	if err != nil || pos.offset < start || r.res.NextOffset > end {
		r.res.Release()
		return res, false
	}
	if r.res.NextOffset == r.res.HighWatermark && end > r.res.HighWatermark {
		// The read reached the partition's end, and records came since: a
		// fresh read answers them too, up to a high watermark of its own,
		// as Kafka's answers do (their high watermark is the one the read
		// saw). Served as it is, the answer would hold the old window under
		// the newer high watermark, and a consumer at the tail would need
		// another round trip for records that were there.
		r.res.Release()
		return res, false
	}
	res = r.res
	res.HighWatermark, res.LogStartOffset = end, start
	s.aheadServed.Add(1)
	return res, true
}

// start drops the reads not taken and starts the reads of next.
func (ra *readAhead) start(s *Server, next []aheadKey) {
	if ra == nil {
		return
	}
	ra.drop(s)
	defer clear(ra.ids) // the next Fetch looks the ids up again
	if len(next) == 0 || ra.ctx.Err() != nil {
		return
	}
	if ra.reads == nil {
		ra.reads = map[fetchPos]*aheadRead{}
	}
	budget := maxAheadBytes
	for _, k := range next {
		if budget < k.limit {
			break
		}
		id := ra.topicID(s, k.pos.topic) // before the read: a topic made again later has another
		if id == "" {
			continue
		}
		if s.aheadBytes.Add(int64(k.limit)) > maxAheadTotalBytes {
			s.aheadBytes.Add(-int64(k.limit))
			break
		}
		budget -= k.limit
		r := &aheadRead{limit: k.limit, topicID: id, done: make(chan struct{})}
		ra.reads[k.pos] = r
		ra.wg.Add(1)
		go func() {
			defer ra.wg.Done()
			defer close(r.done)
			r.res, r.err = s.log.ReadBatches(ra.ctx, k.pos.topic, k.pos.partition, k.pos.offset, tlog.ReadOptions{MaxBytes: k.limit})
		}()
	}
}

// topicID returns the id of a topic ("" when it does not exist), looked up
// once per Fetch.
func (ra *readAhead) topicID(s *Server, topic string) string {
	if id, ok := ra.ids[topic]; ok {
		return id
	}
	id := ""
	if tid, err := s.log.TopicID(topic); err == nil {
		id = tid
	}
	if ra.ids == nil {
		ra.ids = map[string]string{}
	}
	ra.ids[topic] = id
	return id
}

// drop forgets the reads not taken.
func (ra *readAhead) drop(s *Server) {
	for _, r := range ra.reads {
		s.aheadBytes.Add(-int64(r.limit))
		r.releaseWhenDone()
	}
	clear(ra.reads)
}

// releaseWhenDone gives a finished read's buffers back to the log; one
// still under way keeps them (the garbage collector takes them).
func (r *aheadRead) releaseWhenDone() {
	select {
	case <-r.done:
		r.res.Release()
	default:
	}
}

// hold notes that the Fetch answer being built refers to res.
func (ra *readAhead) hold(res tlog.BatchReadResult) {
	if ra != nil {
		ra.held = append(ra.held, res)
	}
}

// takeHeld returns the function that gives back the buffers of the reads
// the last Fetch answer refers to (nil when there are none), and forgets
// them: the answer's writer calls it once the answer is written.
func (ra *readAhead) takeHeld() func() {
	if ra == nil || len(ra.held) == 0 {
		return nil
	}
	held := ra.held
	ra.held = nil
	return func() {
		for i := range held {
			held[i].Release()
		}
	}
}

// close cancels the reads under way and waits for them.
func (ra *readAhead) close(s *Server) {
	ra.cancel()
	ra.wg.Wait()
	ra.drop(s)
}
