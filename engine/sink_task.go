package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// runSink runs a sink task until soft ends (clean stop) or it fails:
// poll the group → transform → Write (retries, dead letters) → commit.
func (r *runner) runSink(hard, soft context.Context, cfg connect.Config, c chain) error {
	cspec, err := r.sinkConsumerSpec()
	if err != nil {
		return err
	}
	// For a sink created again over REST with this name and group
	// (Worker.ResumedSinkPipeline).
	if err := r.w.offsets.PutSinkRun(hard, r.spec.Pipeline, r.spec.Name, cspec.Group); err != nil {
		return fmt.Errorf("sink %s: %w", r.spec.Name, err)
	}
	for _, t := range cspec.Topics {
		if err := r.w.opts.Backend.EnsureTopic(hard, t, 0, nil); err != nil {
			return fmt.Errorf("sink %s: topic %s: %w", r.spec.Name, t, err)
		}
	}
	if dlq := r.spec.Errors.DeadLetterTopic; dlq != "" {
		if err := r.w.opts.Backend.EnsureTopic(hard, dlq, 1, nil); err != nil {
			return fmt.Errorf("sink %s: dead-letter topic %s: %w", r.spec.Name, dlq, err)
		}
	}
	sink := r.conn.NewSink()
	if err := sink.Open(soft, cfg); err != nil {
		if soft.Err() != nil {
			return nil
		}
		return fmt.Errorf("open sink %s: %w", r.spec.Name, err)
	}
	r.setReporter(sink)
	defer func() {
		r.setReporter(nil)
		if err := sink.Close(context.WithoutCancel(hard)); err != nil {
			r.logger.Warn("close sink", "error", err)
		}
	}()
	consumer, err := r.w.opts.Backend.Consumer(hard, cspec)
	if err != nil {
		return fmt.Errorf("sink %s: %w", r.spec.Name, err)
	}
	defer consumer.Close()
	commits := make(chan []PartitionOffset, 16)
	committed := make(chan error, 1)
	pctx, stopPolling := context.WithCancel(soft)
	defer stopPolling()
	go func() {
		committed <- r.commitSinkOffsets(hard, consumer, commits, stopPolling, commitTiming{sinkCommitInterval, sinkIdleCommit})
	}()
	err = r.deliver(hard, pctx, sink, consumer, c, commits)
	close(commits) // drain: the committer stores the last offsets
	if cerr := <-committed; err == nil {
		err = cerr
	}
	return err
}

// flushInterval is how often the worker flushes a buffering sink
// (connect.Flusher) and then commits what the flush made durable. Between
// flushes the sink buffers (an Iceberg sink writes one snapshot per flush),
// so a longer interval means fewer, larger commits downstream and more
// records delivered again after a crash.
var flushInterval = 5 * time.Second // a var for tests

// deliver is the delivering half of a sink task: poll → transform → Write
// → hand the next offsets to the committer; for a Flusher, offsets are
// handed over only after a Flush, every flushInterval and before a pause
// or stop.
func (r *runner) deliver(hard, soft context.Context, sink connect.Sink, consumer Consumer, c chain, commits chan<- []PartitionOffset) error {
	r.setTaskState(StateRunning, "")
	flusher, _ := sink.(connect.Flusher)
	var unflushed []PartitionOffset // written, not yet flushed (Flusher only)
	lastFlush := time.Now()
	// flushErr is the first failed Flush. After it the task flushes and
	// commits nothing more: the sink may have dropped what it buffered, so
	// a later Flush that succeeds says nothing of the records written
	// before the failure. They stay uncommitted and the restarted task
	// writes them again.
	var flushErr error
	flush := func() error {
		if flushErr != nil {
			return flushErr
		}
		if len(unflushed) == 0 {
			return nil
		}
		if err := flusher.Flush(hard); err != nil {
			flushErr = fmt.Errorf("sink %s: flush: %w", r.spec.Name, err)
			return flushErr
		}
		commits <- unflushed
		unflushed, lastFlush = nil, time.Now()
		return nil
	}
	if flusher != nil {
		defer func() {
			// Stopping: make what was written durable and commit it. An
			// error here leaves the offsets uncommitted: redelivered.
			if flushErr != nil {
				return // the task ends with it; nothing more is committed
			}
			if err := flush(); err != nil {
				r.logger.Warn("final flush failed; its records will be delivered again", "error", err)
			}
		}()
	}
	for {
		if flusher != nil && r.targetState() == StatePaused {
			if err := flush(); err != nil {
				return err
			}
		}
		if !r.waitWhilePaused(soft) {
			return nil
		}
		wait := 500 * time.Millisecond
		if flusher != nil && len(unflushed) > 0 {
			wait = max(min(wait, flushInterval-time.Since(lastFlush)), time.Millisecond)
		}
		recs, err := consumer.Poll(soft, wait)
		if soft.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("sink %s: poll: %w", r.spec.Name, err)
		}
		if len(recs) > 0 {
			next := nextOffsets(recs) // before the sink sees the records
			if err := r.deliverBatch(hard, soft, sink, c, recs); err != nil {
				if stopping(soft, err) {
					// The batch is not committed: it is written again
					// when the task runs again.
					r.logger.Info("a stop cut the batch short; it will be delivered again", "records", len(recs), "error", err)
					return nil
				}
				return err
			}
			if flusher == nil {
				commits <- next
			} else {
				unflushed = append(unflushed, next...)
			}
		}
		if flusher != nil && time.Since(lastFlush) >= flushInterval {
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// deliverBatch transforms and writes one polled batch.
func (r *runner) deliverBatch(hard, soft context.Context, sink connect.Sink, c chain, recs []connect.Record) error {
	m := r.w.metrics
	start := time.Now()
	r.m.recordsRead.Add(float64(len(recs)))
	out := recs      // no transforms: the polled records as they are
	var from origins // and each its own origin
	if len(c) > 0 {
		out = make([]connect.Record, 0, len(recs))
		from = origins{polled: recs, index: make([]int32, 0, len(recs))}
		for i, rec := range recs {
			var err error
			out, err = c.appendApplied(out, rec)
			if err != nil {
				m.errors.WithLabelValues(r.spec.Name, "transform").Inc()
				if err := r.badRecord(hard, rec, "TRANSFORMATION", 1, err); err != nil {
					return err
				}
				continue
			}
			for len(from.index) < len(out) {
				from.index = append(from.index, int32(i))
			}
		}
	}
	setOriginals(out, from)
	bad := r.badRecords
	if err := r.write(hard, soft, sink, out, from); err != nil {
		return err
	}
	// Dead-lettered or skipped records were not delivered: they count in
	// the dead-letter metric, not here.
	r.m.recordsWritten.Add(float64(len(out) - (r.badRecords - bad)))
	r.m.batchSeconds.Observe(time.Since(start).Seconds())
	r.m.observeDelivery(recs)
	return nil
}

// setOriginals sets the Original fields of the records handed to the sink
// to the topic, partition and offset of the polled records they came from
// (Kafka Connect's KIP-793), whatever the sink's transforms did to their
// Topic, Partition and Offset: a sink that keeps its own offsets keys them
// on those, so that two records a route gave the same coordinates stay
// two records.
func setOriginals(recs []connect.Record, from origins) {
	for i := range recs {
		r := &recs[i]
		o := r
		if from.index != nil {
			o = &from.polled[from.index[i]]
		}
		r.OriginalTopic, r.OriginalPartition, r.OriginalOffset = o.Topic, o.Partition, o.Offset
	}
}

// origins maps the records a sink task hands to the sink back to the
// polled records they came from: a sink transform may change a record
// (its topic, key, value), or make several or none of one. A dead letter
// for a record the sink refused carries the record as read (topic,
// partition, offset, key, value), as Kafka Connect's dead-letter reporter
// uses the original consumer record. The zero value says the records are
// the polled ones themselves.
type origins struct {
	polled []connect.Record
	index  []int32 // index[i]: the i-th record came from polled[index[i]]
}

// of returns the polled record that recs[i] came from.
func (o origins) of(recs []connect.Record, i int) connect.Record {
	if o.index == nil {
		return recs[i]
	}
	return o.polled[o.index[i]]
}

// slice returns the origins of recs[i:j], as o.of(recs, ·) stands to recs.
func (o origins) slice(i, j int) origins {
	if o.index != nil {
		o.index = o.index[i:j]
	}
	return o
}

// sinkCommitInterval is the least time between two group commits of a
// sink while batches keep coming: offsets of batches delivered meanwhile
// are merged into the next commit. Delivery is at least once either way;
// the interval bounds how much is delivered again after a crash, and saves
// an fsync per batch when batches are small (Kafka Connect commits every
// 60 s by default).
const sinkCommitInterval = 200 * time.Millisecond

// sinkIdleCommit is the least time a sink waits after a delivered batch
// before it commits early, when no other batch came meanwhile: once a
// burst is written, the group's offsets (and the lag that monitoring
// reads from them) catch up at once instead of up to sinkCommitInterval
// later, and a crash after the burst delivers nothing again. The wait is
// twice the gap between the last two batches when that is longer, so that
// a sink whose writes take a while (or whose batches trickle in) does not
// take the gaps of a steady flow for the end of one: while batches keep
// coming at their pace it commits at the interval.
const sinkIdleCommit = 20 * time.Millisecond

// commitTiming says when commitSinkOffsets commits: sinkCommitInterval and
// sinkIdleCommit, but in tests.
type commitTiming struct{ interval, idle time.Duration }

// commitSinkOffsets commits group offsets of delivered batches: at most
// every sinkCommitInterval while batches keep coming, soon after the last
// one when none follows (sinkIdleCommit), and once more when commits is
// closed.
// On a failure it calls stopPolling and drains.
func (r *runner) commitSinkOffsets(ctx context.Context, consumer Consumer, commits <-chan []PartitionOffset, stopPolling func(), timing commitTiming) error {
	type tp struct {
		t string
		p int32
	}
	merged := map[tp]int64{}
	var failed error
	var last time.Time    // of the last commit
	var arrived time.Time // of the last batch
	var timer *time.Timer
	var fire <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	commit := func() {
		if failed != nil || len(merged) == 0 {
			return
		}
		batch := make([]PartitionOffset, 0, len(merged))
		for k, off := range merged {
			batch = append(batch, PartitionOffset{Topic: k.t, Partition: k.p, Offset: off})
		}
		if err := consumer.Commit(ctx, batch); err != nil {
			failed = fmt.Errorf("sink %s: commit offsets: %w", r.spec.Name, err)
			stopPolling()
			return
		}
		clear(merged)
		last = time.Now()
	}
	for {
		select {
		case offs, ok := <-commits:
			if !ok {
				commit()
				return failed
			}
			for _, o := range offs {
				k := tp{o.Topic, o.Partition}
				if o.Offset > merged[k] {
					merged[k] = o.Offset
				}
			}
			now := time.Now()
			idle := timing.idle
			if !arrived.IsZero() {
				idle = max(idle, 2*now.Sub(arrived))
			}
			arrived = now
			wait := timing.interval - now.Sub(last)
			if wait <= 0 {
				commit()
				if timer != nil {
					timer.Stop()
				}
				fire = nil
				continue
			}
			// Commit at the interval, or sooner when no batch follows
			// this one for a while.
			wait = min(wait, idle)
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			fire = timer.C
		case <-fire:
			fire = nil
			commit()
		}
	}
}

// sinkConsumerSpec returns how a sink task consumes: its list of topics,
// or its regex, as a pattern subscription that also reads the topics
// created later (a route transform's), and runs with nothing assigned
// while no topic matches, as Kafka Connect's topics.regex does. Internal
// topics and the sink's own dead-letter topic are never read by a regex:
// reading the latter would feed each failure back into the sink without
// end.
func (r *runner) sinkConsumerSpec() (ConsumerSpec, error) {
	spec := ConsumerSpec{Group: r.spec.Group, Topics: r.spec.Topics, ClientID: fmt.Sprintf("connector-consumer-%s-0", r.spec.Name)}
	if r.spec.TopicsRegex == "" {
		return spec, nil
	}
	re, err := regexp.Compile("^(?:" + r.spec.TopicsRegex + ")$")
	if err != nil {
		return spec, connect.Permanent(fmt.Errorf("sink %s: topics regex: %w", r.spec.Name, err))
	}
	spec.Topics, spec.TopicsRegex = nil, r.spec.TopicsRegex
	if dlq := r.spec.Errors.DeadLetterTopic; dlq != "" {
		spec.ExcludeTopics = []string{dlq}
		if re.MatchString(dlq) && !r.dlqSkipped.Swap(true) {
			r.logger.Warn("topics regex matches the sink's own dead-letter topic; not reading it", "topics_regex", r.spec.TopicsRegex, "dead_letter_topic", dlq)
		}
	}
	return spec, nil
}

// nextOffsets returns, per partition, the offset after the last record, in
// the order the partitions first appear. A poll hands over runs of records
// of one partition, so the map is touched once per run, not per record.
func nextOffsets(recs []connect.Record) []PartitionOffset {
	type tp struct {
		t string
		p int32
	}
	last := map[tp]int64{}
	var order []tp
	note := func(k tp, next int64) {
		prev, ok := last[k]
		if !ok {
			order = append(order, k)
		}
		if !ok || next > prev {
			last[k] = next
		}
	}
	for i := 0; i < len(recs); {
		// The run of records of recs[i]'s partition: its highest offset.
		t, p, next := recs[i].Topic, recs[i].Partition, recs[i].Offset+1
		j := i + 1
		for ; j < len(recs) && recs[j].Partition == p && recs[j].Topic == t; j++ {
			next = max(next, recs[j].Offset+1)
		}
		note(tp{t, p}, next)
		i = j
	}
	out := make([]PartitionOffset, len(order))
	for i, k := range order {
		out[i] = PartitionOffset{Topic: k.t, Partition: k.p, Offset: last[k]}
	}
	return out
}

// stopping reports whether err ended a Write or its retries because the
// task was asked to stop (soft ended): the batch is then not committed,
// and the task ends cleanly.
func stopping(soft context.Context, err error) bool {
	return soft.Err() != nil && (connect.IsStopping(err) || errors.Is(err, context.Canceled))
}

// write delivers a batch with retries; bad records go to the dead-letter
// topic (or fail the task) per the error policy. Write runs under ctx (the
// hard context: a healthy Write finishes its batch during a stop, within
// a shutdown's drain) carrying soft as its stop signal (connect.WithStop),
// so that a sink that retries on its own stops retrying when asked to
// stop; the worker's own retry waits end with soft too. from maps recs to
// the polled records they came from: a dead letter carries those.
func (r *runner) write(ctx, soft context.Context, sink connect.Sink, recs []connect.Record, from origins) error {
	wctx := connect.WithStop(ctx, soft)
	pol := r.spec.Errors
	bo := backoff{initial: pol.BackoffInitial, max: pol.BackoffMax}
	if bo.initial <= 0 {
		bo.initial = 100 * time.Millisecond
	}
	if bo.max <= 0 {
		bo.max = 10 * time.Second
	}
	attempts := 0
	for len(recs) > 0 {
		attempts++
		err := sink.Write(wctx, recs)
		if err == nil {
			return nil
		}
		if stopping(soft, err) {
			return err // not a write error: the task was asked to stop
		}
		r.w.metrics.errors.WithLabelValues(r.spec.Name, "write").Inc()
		var bad *connect.BadRecordError
		switch {
		case errors.As(err, &bad) && bad.Index >= 0 && bad.Index < len(recs):
			if err := r.badRecord(ctx, from.of(recs, bad.Index), "TASK_PUT", attempts, err); err != nil {
				return err
			}
			recs, from, attempts = recs[bad.Index+1:], from.slice(bad.Index+1, len(recs)), 0
			bo.reset()
		case errors.As(err, &bad):
			// Unknown which one: write one at a time to find it.
			if len(recs) == 1 {
				if err := r.badRecord(ctx, from.of(recs, 0), "TASK_PUT", attempts, err); err != nil {
					return err
				}
				return nil
			}
			for i := range recs {
				if err := r.write(ctx, soft, sink, recs[i:i+1], from.slice(i, i+1)); err != nil {
					return err
				}
			}
			return nil
		case connect.IsRetryable(err) && (pol.Retries < 0 || attempts <= pol.Retries):
			wait := bo.next()
			var re *connect.RetryableError
			if errors.As(err, &re) && re.After > wait {
				wait = re.After
			}
			r.logger.Warn("write failed; retrying", "attempt", attempts, "wait", wait, "error", err)
			if err := sleep(soft, wait); err != nil {
				return fmt.Errorf("sink %s: retry of write: %w", r.spec.Name, connect.ErrStopping)
			}
		case connect.IsRetryable(err) && pol.Tolerance == "all":
			for i := range recs {
				if err := r.badRecord(ctx, from.of(recs, i), "TASK_PUT", attempts, err); err != nil {
					return err
				}
			}
			return nil
		default:
			return fmt.Errorf("sink %s: write %d records (attempt %d): %w", r.spec.Name, len(recs), tries(attempts, err), err)
		}
	}
	return nil
}

// badRecord applies the error tolerance to one record: with "all" it goes
// to the dead-letter topic (or is skipped when there is none); with "none"
// the task fails.
func (r *runner) badRecord(ctx context.Context, rec connect.Record, stage string, attempts int, cause error) error {
	if r.spec.Errors.Tolerance != "all" {
		err := fmt.Errorf("sink %s: record %s/%d@%d: %w", r.spec.Name, rec.Topic, rec.Partition, rec.Offset, cause)
		var pe *connect.PermanentError
		if errors.As(cause, &pe) {
			// The sink says no retry can write this record (a value its
			// table cannot hold): the task stays FAILED until the user
			// acts, as Kafka Connect leaves it, rather than restarting
			// on the same record forever.
			return connect.Permanent(errors.New(err.Error()))
		}
		return err
	}
	r.w.metrics.deadLettered.WithLabelValues(r.spec.Name).Inc()
	r.badRecords++
	attempts = tries(attempts, cause)
	dlq := r.spec.Errors.DeadLetterTopic
	if dlq == "" {
		r.logger.Warn("skipping bad record (no dead-letter topic)", "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "error", cause)
		return nil
	}
	d := rec.Clone()
	d.Topic = dlq
	d.Headers = append(d.Headers,
		connect.Header{Key: "__connect.errors.topic", Value: []byte(rec.Topic)},
		connect.Header{Key: "__connect.errors.partition", Value: []byte(strconv.Itoa(int(rec.Partition)))},
		connect.Header{Key: "__connect.errors.offset", Value: []byte(strconv.FormatInt(rec.Offset, 10))},
		connect.Header{Key: "__connect.errors.connector.name", Value: []byte(r.spec.Name)},
		connect.Header{Key: "__connect.errors.task.id", Value: []byte("0")},
		connect.Header{Key: "__connect.errors.stage", Value: []byte(stage)},
		connect.Header{Key: "__connect.errors.exception.class.name", Value: []byte(errorClass(cause))},
		connect.Header{Key: "__connect.errors.exception.message", Value: []byte(r.maskText(cause.Error()))},
		connect.Header{Key: "__connect.errors.exception.stacktrace", Value: []byte(r.maskText(cause.Error()))},
		connect.Header{Key: "__connect.errors.attempts", Value: []byte(strconv.Itoa(attempts))},
	)
	if err := r.w.opts.Backend.Produce(ctx, []connect.Record{d}); err != nil {
		return fmt.Errorf("sink %s: dead-letter record to %s: %w", r.spec.Name, dlq, err)
	}
	return nil
}

// tries is the number of tries behind a failed write: the worker's calls
// of Write for the records, the last one counted as the tries the sink
// says it made itself (connect.WithAttempts), so that the
// __connect.errors.attempts header agrees with a message such as "gave up
// after 3 attempts".
func tries(calls int, err error) int {
	if n := connect.Attempts(err); n > 0 {
		return calls - 1 + n
	}
	return calls
}

func errorClass(err error) string {
	switch {
	case connect.IsBadRecord(err):
		return "connect.BadRecordError"
	case connect.IsRetryable(err):
		return "connect.RetryableError"
	}
	return fmt.Sprintf("%T", errors.Unwrap(err))
}
