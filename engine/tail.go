package engine

import (
	"context"
	"fmt"
	"slices"

	"github.com/tributary-io/tributary/connect"
)

// RangeReader is implemented by a Backend that can read a range of one
// partition. The worker needs it for sources that implement
// connect.TailRecoverer; on a backend without it such a source is never
// handed its tail (a warning says so), and it sees its unacknowledged
// records again as any source does (at least once).
type RangeReader interface {
	// ReadRange calls fn with the records of one partition whose offsets
	// lie in [from, to), in offset order, a bounded batch at a time (about
	// a megabyte), with Topic, Partition and Offset set. It stops early at
	// the first error of fn and returns it. Offsets below the partition's
	// start (removed by retention) are skipped.
	ReadRange(ctx context.Context, topic string, partition int32, from, to int64, fn func([]connect.Record) error) error
}

// tailHeader is the header of a position record (in OffsetsTopic) that
// carries the log offsets the source task had reached, for
// connect.TailRecoverer: a JSON array of {"topic","partition","offset"},
// each offset the next one after the task's records covered by the
// position. Records without it (older workers, positions set through the
// REST API) simply have no tail.
const tailHeader = "tributary.tail"

// tailOffset is one element of tailHeader's value.
type tailOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// tailTracker follows, for a source that implements connect.TailRecoverer,
// the log offsets its task has reached in the partitions of its tail
// topics: a baseline (each partition's end when the task started, after
// the recovery), raised by every durable append of the task. It is used by
// one goroutine, the committer.
type tailTracker struct {
	topics map[string]bool
	next   map[topicPartition]int64
}

type topicPartition struct {
	topic     string
	partition int32
}

// note raises the offsets to cover recs, which are durable and carry
// their Partition and Offset.
func (t *tailTracker) note(recs []connect.Record) {
	for i := range recs {
		r := &recs[i]
		if !t.topics[r.Topic] {
			continue
		}
		k := topicPartition{r.Topic, r.Partition}
		if next := r.Offset + 1; next > t.next[k] {
			t.next[k] = next
		}
	}
}

// snapshot returns the offsets reached, sorted.
func (t *tailTracker) snapshot() []PartitionOffset {
	out := make([]PartitionOffset, 0, len(t.next))
	for k, off := range t.next {
		out = append(out, PartitionOffset{Topic: k.topic, Partition: k.partition, Offset: off})
	}
	slices.SortFunc(out, func(a, b PartitionOffset) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// recoverTail hands src the records of its tail topics appended after the
// offsets stored with its last position (when there is one), and returns
// the tracker that starts from where that reading ended.
func (r *runner) recoverTail(ctx context.Context, src connect.TailRecoverer, resumed bool) (*tailTracker, error) {
	b := r.w.opts.Backend
	t := &tailTracker{topics: map[string]bool{}, next: map[topicPartition]int64{}}
	for _, topic := range src.TailTopics() {
		if topic == "" {
			topic = r.spec.Topic // as a record with no topic goes to the source's topic
		}
		t.topics[topic] = true
	}
	ends := map[topicPartition]PartitionBounds{}
	for topic := range t.topics {
		bounds, err := b.EndOffsets(ctx, topic)
		if err != nil {
			// Not created yet: the task's appends will create it and the
			// tracker covers them; there is nothing to recover.
			r.logger.Debug("tail topic not readable; nothing to recover from it", "topic", topic, "error", err)
			continue
		}
		for _, pb := range bounds {
			k := topicPartition{topic, pb.Partition}
			ends[k] = pb
			t.next[k] = pb.End
		}
	}
	stored := r.w.offsets.Tail(r.spec.Pipeline, r.spec.Name)
	if !resumed || stored == nil {
		return t, nil
	}
	rr, ok := b.(RangeReader)
	if !ok {
		r.logger.Warn("the log backend cannot read partition ranges: the source is not told which records reached the log after its last stored position, and may see them again")
		return t, nil
	}
	// A partition of a topic the stored tail knows, but absent from it,
	// came to be after the storing run started (the topic was created by
	// its appends, or grew): all it holds may be that run's tail. A topic
	// the stored tail does not know at all is new to TailTopics (a config
	// change): its history is not this source's tail.
	from := map[topicPartition]int64{}
	known := map[string]bool{}
	for _, po := range stored {
		from[topicPartition{po.Topic, po.Partition}] = po.Offset
		known[po.Topic] = true
	}
	for k, pb := range ends {
		if _, ok := from[k]; !ok && known[k.topic] {
			from[k] = pb.Start
		}
	}
	for k, off := range from {
		po := PartitionOffset{Topic: k.topic, Partition: k.partition, Offset: off}
		pb, ok := ends[k]
		if !ok || !t.topics[po.Topic] || po.Offset >= pb.End {
			continue
		}
		from := max(po.Offset, pb.Start)
		err := rr.ReadRange(ctx, po.Topic, po.Partition, from, pb.End, func(recs []connect.Record) error {
			return src.RecoverTail(ctx, recs)
		})
		if err != nil {
			return nil, fmt.Errorf("recover the tail of source %s in %s/%d from offset %d: %w", r.spec.Name, po.Topic, po.Partition, from, err)
		}
	}
	return t, nil
}
