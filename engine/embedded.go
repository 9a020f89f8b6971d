package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// Embedded is the Backend over the built-in log, in process.
type Embedded struct {
	log    *tlog.Log
	logger *slog.Logger
}

var (
	_ Backend        = (*Embedded)(nil)
	_ RangeReader    = (*Embedded)(nil)
	_ TopicDescriber = (*Embedded)(nil)
)

// NewEmbedded returns a backend over an open log. The caller closes the log.
func NewEmbedded(l *tlog.Log, logger *slog.Logger) *Embedded {
	if logger == nil {
		logger = slog.Default()
	}
	return &Embedded{log: l, logger: logger}
}

// Log returns the underlying log.
func (e *Embedded) Log() *tlog.Log { return e.log }

// EnsureTopic implements Backend.
func (e *Embedded) EnsureTopic(ctx context.Context, name string, partitions int, config map[string]string) error {
	if _, err := e.log.Partitions(name); err == nil {
		return nil
	}
	if partitions <= 0 {
		partitions = e.log.DefaultPartitionsOf(name)
	}
	err := e.log.CreateTopic(name, partitions, config)
	if errors.Is(err, tlog.ErrTopicExists) {
		return nil
	}
	return err
}

// DescribeTopic implements TopicDescriber.
func (e *Embedded) DescribeTopic(ctx context.Context, name string) (TopicInfo, error) {
	d, err := e.log.DescribeTopic(name)
	if err != nil {
		return TopicInfo{}, fmt.Errorf("describe topic %s: %w", name, err)
	}
	return TopicInfo{Partitions: len(d.Partitions), Config: d.Config}, nil
}

// Produce implements Backend.
func (e *Embedded) Produce(ctx context.Context, records []connect.Record) error {
	wait, err := e.Append(ctx, records)
	if wait != nil {
		if werr := wait(ctx); werr != nil {
			return errors.Join(err, werr)
		}
	}
	return err
}

// Append implements Backend: one log append per topic, partitioned by key.
func (e *Embedded) Append(ctx context.Context, records []connect.Record) (func(context.Context) error, error) {
	if len(records) > 0 && oneTopic(records) {
		return e.appendTopic(ctx, records)
	}
	byTopic := map[string][]int{}
	var order []string
	for i, r := range records {
		if r.Topic == "" {
			return nil, fmt.Errorf("produce: record %d has no topic", i)
		}
		if _, ok := byTopic[r.Topic]; !ok {
			order = append(order, r.Topic)
		}
		byTopic[r.Topic] = append(byTopic[r.Topic], i)
	}
	var pending []*tlog.Pending
	wait := func(ctx context.Context) error {
		for _, pd := range pending {
			if err := pd.Wait(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	for _, topic := range order {
		idx := byTopic[topic]
		recs := make([]tlog.Record, len(idx))
		for j, i := range idx {
			recs[j] = toLogRecord(records[i])
		}
		pd, err := e.log.ProduceAsync(ctx, topic, recs)
		pending = append(pending, pd)
		if err != nil {
			return wait, refusal(fmt.Errorf("produce to %s: %w", topic, err))
		}
		for j, i := range idx {
			records[i].Partition, records[i].Offset = recs[j].Partition, recs[j].Offset
		}
	}
	return wait, nil
}

// refusal marks an append error that retrying the same records cannot
// cure as connect.Permanent: a record without a key for a compacted topic
// (a CDC truncate event, say) or one larger than the topic's
// max.message.bytes. The task then stays FAILED with the error, which
// says what to change, instead of restarting on the same records forever.
func refusal(err error) error {
	if errors.Is(err, tlog.ErrCompactedTopicNilKey) || errors.Is(err, tlog.ErrRecordTooLarge) {
		return connect.Permanent(err)
	}
	return err
}

// oneTopic reports whether every record names the first one's topic.
func oneTopic(records []connect.Record) bool {
	t := records[0].Topic
	for i := range records {
		if records[i].Topic != t {
			return false
		}
	}
	return true
}

// appendTopic is Append of records that all go to one topic (the usual
// source batch): one log append, without grouping.
func (e *Embedded) appendTopic(ctx context.Context, records []connect.Record) (func(context.Context) error, error) {
	topic := records[0].Topic
	if topic == "" {
		return nil, errors.New("produce: record 0 has no topic")
	}
	recs := make([]tlog.Record, len(records))
	for i := range records {
		recs[i] = toLogRecord(records[i])
	}
	pd, err := e.log.ProduceAsync(ctx, topic, recs)
	wait := func(ctx context.Context) error { return pd.Wait(ctx) }
	if err != nil {
		return wait, refusal(fmt.Errorf("produce to %s: %w", topic, err))
	}
	for i := range records {
		records[i].Partition, records[i].Offset = recs[i].Partition, recs[i].Offset
	}
	return wait, nil
}

func toLogRecord(r connect.Record) tlog.Record {
	lr := tlog.Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
	if len(r.Headers) > 0 {
		lr.Headers = make([]tlog.Header, len(r.Headers))
		for i, h := range r.Headers {
			lr.Headers[i] = tlog.Header{Key: h.Key, Value: h.Value}
		}
	}
	return lr
}

func fromLogRecord(r tlog.Record) connect.Record {
	cr := connect.Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	if len(r.Headers) > 0 {
		cr.Headers = make([]connect.Header, len(r.Headers))
		for i, h := range r.Headers {
			cr.Headers[i] = connect.Header{Key: h.Key, Value: h.Value}
		}
	}
	return cr
}

// ReadAll implements Backend.
func (e *Embedded) ReadAll(ctx context.Context, topic string, fn func(connect.Record) error) error {
	n, err := e.log.Partitions(topic)
	if errors.Is(err, tlog.ErrUnknownTopic) {
		return nil
	}
	if err != nil {
		return err
	}
	for p := int32(0); p < int32(n); p++ {
		start, end, err := e.log.Offsets(topic, p)
		if err != nil {
			return err
		}
		for off := start; off < end; {
			res, err := e.log.Read(ctx, topic, p, off, tlog.ReadOptions{MaxBytes: 1 << 20})
			if err != nil {
				return fmt.Errorf("read %s/%d at %d: %w", topic, p, off, err)
			}
			for _, r := range res.Records {
				if err := fn(fromLogRecord(r)); err != nil {
					return err
				}
			}
			if res.NextOffset <= off {
				break
			}
			off = res.NextOffset
		}
	}
	return nil
}

// ReadRange implements RangeReader.
func (e *Embedded) ReadRange(ctx context.Context, topic string, partition int32, from, to int64, fn func([]connect.Record) error) error {
	for off := from; off < to; {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := e.log.Read(ctx, topic, partition, off, tlog.ReadOptions{MaxBytes: 1 << 20})
		if errors.Is(err, tlog.ErrOffsetOutOfRange) && off < res.LogStartOffset {
			off = res.LogStartOffset // retention removed them
			continue
		}
		if errors.Is(err, tlog.ErrOffsetOutOfRange) && off >= res.HighWatermark {
			return nil // the range starts at or beyond the end: nothing to read
		}
		if err != nil {
			return fmt.Errorf("read %s/%d at %d: %w", topic, partition, off, err)
		}
		out := make([]connect.Record, 0, len(res.Records))
		for _, r := range res.Records {
			if r.Offset >= to {
				break
			}
			out = append(out, fromLogRecord(r))
		}
		if len(out) > 0 {
			if err := fn(out); err != nil {
				return err
			}
		}
		if res.NextOffset <= off {
			return nil // nothing more is readable
		}
		off = res.NextOffset
	}
	return nil
}

// GroupOffsets implements Backend.
func (e *Embedded) GroupOffsets(ctx context.Context, group string) ([]PartitionOffset, error) {
	var out []PartitionOffset
	for _, c := range e.log.Groups().Committed(group) {
		out = append(out, PartitionOffset{Topic: c.Topic, Partition: c.Partition, Offset: c.Offset})
	}
	return out, nil
}

// CommitGroupOffsets implements Backend.
func (e *Embedded) CommitGroupOffsets(ctx context.Context, group string, offsets []PartitionOffset) error {
	if len(offsets) == 0 {
		return nil
	}
	cs := make([]tlog.OffsetCommit, len(offsets))
	for i, o := range offsets {
		cs[i] = tlog.OffsetCommit{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset}
	}
	return e.log.Groups().Commit(ctx, group, cs)
}

// DeleteGroup implements Backend.
func (e *Embedded) DeleteGroup(ctx context.Context, group string) error {
	err := e.log.Groups().Delete(ctx, group)
	if errors.Is(err, tlog.ErrUnknownGroup) {
		return nil
	}
	return err
}

// ListTopics implements Backend.
func (e *Embedded) ListTopics(ctx context.Context) ([]string, error) { return e.log.ListTopics(), nil }

// EndOffsets implements Backend.
func (e *Embedded) EndOffsets(ctx context.Context, topic string) ([]PartitionBounds, error) {
	n, err := e.log.Partitions(topic)
	if err != nil {
		return nil, err
	}
	out := make([]PartitionBounds, n)
	for p := range out {
		s, en, err := e.log.Offsets(topic, int32(p))
		if err != nil {
			return nil, err
		}
		out[p] = PartitionBounds{Partition: int32(p), Start: s, End: en}
	}
	return out, nil
}

// Consumer implements Backend. Each partition gets a fetcher goroutine that
// long-polls the log and hands batches to Poll through a bounded channel.
// Partitions added to a topic later (CreatePartitions), and with
// TopicsRegex topics created later that match, get theirs when a watcher
// sees them, within partitionCheckInterval, and are read from the group's
// committed offset or from their start, as a new partition is by a Kafka
// consumer (auto.offset.reset=earliest).
func (e *Embedded) Consumer(ctx context.Context, spec ConsumerSpec) (Consumer, error) {
	group := spec.Group
	c := &embeddedConsumer{e: e, group: group, topics: spec.Topics, batches: make(chan []tlog.Record, fetchedBatches), started: map[string]int{}}
	if spec.TopicsRegex != "" {
		re, err := regexp.Compile("^(?:" + spec.TopicsRegex + ")$")
		if err != nil {
			return nil, fmt.Errorf("consumer %s: topics regex: %w", group, err)
		}
		exclude := spec.ExcludeTopics
		c.match = func(topic string) bool {
			return re.MatchString(topic) && !strings.HasPrefix(topic, "_") && !slices.Contains(exclude, topic)
		}
	}
	fctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	for _, topic := range c.subscribed() {
		n, err := e.log.Partitions(topic)
		if c.match != nil && errors.Is(err, tlog.ErrUnknownTopic) {
			continue // deleted since it was listed
		}
		if err == nil {
			err = c.startFetchers(fctx, topic, n)
		}
		if err != nil {
			cancel()
			c.wg.Wait()
			return nil, fmt.Errorf("consumer %s: topic %s: %w", group, topic, err)
		}
	}
	c.wg.Add(1)
	go c.watchPartitions(fctx)
	return c, nil
}

// partitionCheckInterval is how often a consumer looks for partitions
// added to its topics, and for new topics its regex matches.
var partitionCheckInterval = time.Second // a var for tests

// subscribed returns the topics the consumer reads: its list, or the
// topics that exist now and its regex matches.
func (c *embeddedConsumer) subscribed() []string {
	if c.match == nil {
		return c.topics
	}
	var out []string
	for _, t := range c.e.log.ListTopics() {
		if c.match(t) {
			out = append(out, t)
		}
	}
	return out
}

// startFetchers starts the fetchers of a topic's partitions below n that
// have none yet.
func (c *embeddedConsumer) startFetchers(ctx context.Context, topic string, n int) error {
	for p := int32(c.started[topic]); p < int32(n); p++ {
		start, _, err := c.e.log.Offsets(topic, p)
		if err != nil {
			return err
		}
		from := start
		if off, ok := c.e.log.Groups().CommittedOffset(c.group, topic, p); ok && off >= 0 {
			from = off
		}
		c.wg.Add(1)
		go c.fetch(ctx, topic, p, from)
		c.started[topic] = int(p) + 1
	}
	return nil
}

// watchPartitions starts fetchers for partitions added to the topics, and
// for the topics created that the regex matches, until ctx ends.
func (c *embeddedConsumer) watchPartitions(ctx context.Context) {
	defer c.wg.Done()
	t := time.NewTicker(partitionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, topic := range c.subscribed() {
			n, err := c.e.log.Partitions(topic)
			if err != nil || n <= c.started[topic] {
				continue // gone (deleted), or nothing new
			}
			if c.started[topic] == 0 {
				c.e.logger.Info("consumer reads a new topic its regex matches", "group", c.group, "topic", topic, "partitions", n)
			} else {
				c.e.logger.Info("consumer reads partitions added to its topic", "group", c.group, "topic", topic, "from", c.started[topic], "partitions", n)
			}
			if err := c.startFetchers(ctx, topic, n); err != nil {
				c.errMu.Lock()
				c.err = fmt.Errorf("start fetching new partitions of %s: %w", topic, err)
				c.errMu.Unlock()
			}
		}
	}
}

type embeddedConsumer struct {
	e      *Embedded
	group  string
	topics []string // the topics of a list subscription
	// match selects the topics of a regex subscription (ConsumerSpec.TopicsRegex);
	// nil for a list.
	match func(topic string) bool
	// batches are the fetched records, as the log returned them: Poll
	// turns them into connect.Records straight into the slice it returns
	// (one conversion and one copy per record, however many it merges).
	batches chan []tlog.Record
	more    [][]tlog.Record // Poll's scratch: the batches it merges
	// started counts, per topic, the partitions with a fetcher: set by
	// Consumer, then by the watcher alone.
	started map[string]int
	errMu   sync.Mutex
	err     error
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func (c *embeddedConsumer) fetch(ctx context.Context, topic string, p int32, next int64) {
	defer c.wg.Done()
	for ctx.Err() == nil {
		res, err := c.e.log.Read(ctx, topic, p, next, tlog.ReadOptions{MaxBytes: 1 << 20, MaxWait: time.Second})
		if errors.Is(err, tlog.ErrOffsetOutOfRange) && next < res.LogStartOffset {
			// Retention removed what the group had not read: go on from the
			// earliest offset, as auto.offset.reset=earliest does.
			c.e.logger.Warn("committed offset below log start; resetting to earliest",
				"group", c.group, "topic", topic, "partition", p, "offset", next, "log_start_offset", res.LogStartOffset)
			next = res.LogStartOffset
			continue
		}
		if errors.Is(err, tlog.ErrOffsetOutOfRange) && next > res.HighWatermark {
			// The partition ends before the group's position: the topic was
			// deleted and created again (or lost its tail). Waiting for the
			// new topic to grow past it would skip its first records: start
			// from its earliest offset, as auto.offset.reset=earliest does.
			c.e.logger.Warn("committed offset past the end of the partition (topic deleted and created again?); resetting to earliest",
				"group", c.group, "topic", topic, "partition", p, "offset", next, "log_end_offset", res.HighWatermark, "log_start_offset", res.LogStartOffset)
			next = res.LogStartOffset
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.errMu.Lock()
			c.err = fmt.Errorf("fetch %s/%d at %d: %w", topic, p, next, err)
			c.errMu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		if len(res.Records) > 0 {
			select {
			case c.batches <- res.Records:
			case <-ctx.Done():
				return
			}
		}
		next = res.NextOffset
	}
}

// Poll implements Consumer.
func (c *embeddedConsumer) Poll(ctx context.Context, maxWait time.Duration) ([]connect.Record, error) {
	c.errMu.Lock()
	err := c.err
	c.err = nil
	c.errMu.Unlock()
	if err != nil {
		return nil, err
	}
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	var first []tlog.Record
	select {
	case first = <-c.batches:
	case <-timer.C:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Take what else waits, then convert it all into one slice at once.
	more := c.more[:0]
	n, size := len(first), recordBytes(first)
gather:
	for n < pollMaxRecords && size < pollMaxBytes {
		select {
		case b := <-c.batches:
			more = append(more, b)
			n += len(b)
			size += recordBytes(b)
		default:
			break gather
		}
	}
	out := make([]connect.Record, 0, n)
	out = appendFromLog(out, first)
	for i, b := range more {
		out = appendFromLog(out, b)
		more[i] = nil
	}
	c.more = more[:0]
	return out, nil
}

// appendFromLog appends recs, read from the log, to dst as connect.Records.
func appendFromLog(dst []connect.Record, recs []tlog.Record) []connect.Record {
	for i := range recs {
		dst = append(dst, fromLogRecord(recs[i]))
	}
	return dst
}

// A Poll merges the fetched batches already waiting, up to these bounds:
// a sink behind its topic then gets big batches (one fsync of the file
// sink covers more records), a sink keeping up gets what has arrived.
// fetchedBatches bounds the fetches waiting for Poll (each up to 1 MiB),
// so that a sink behind has about a full poll waiting.
const (
	fetchedBatches = 32
	pollMaxRecords = 32768
	pollMaxBytes   = 16 << 20
)

// recordBytes returns the bytes of the keys and values of recs.
func recordBytes(recs []tlog.Record) int {
	n := 0
	for i := range recs {
		n += len(recs[i].Key) + len(recs[i].Value)
	}
	return n
}

// Commit implements Consumer.
func (c *embeddedConsumer) Commit(ctx context.Context, offsets []PartitionOffset) error {
	return c.e.CommitGroupOffsets(ctx, c.group, offsets)
}

// Close implements Consumer.
func (c *embeddedConsumer) Close() error {
	c.cancel()
	c.wg.Wait()
	return nil
}
