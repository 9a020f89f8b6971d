package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// offsets returns the connector's offsets in Kafka Connect's shape. A
// source has one partition, {"pipeline": …}, whose offset is its stored
// position (shown as JSON when it is JSON); a sink has one entry per
// partition of its group: {"kafka_topic","kafka_partition"} → {"kafka_offset"}.
func (r *runner) offsets(ctx context.Context) ([]OffsetEntry, error) {
	switch r.spec.Kind {
	case connect.KindSource:
		pos := r.w.offsets.Get(r.spec.Name)
		if _, shared := r.w.opts.Backend.(SourceLeaser); shared {
			// Workers share the backend: the position may have been stored
			// by the worker holding the source's lease, which this one's
			// store has not seen. Read it from the offsets topic.
			fresh, err := OpenOffsetStore(ctx, r.w.opts.Backend)
			if err != nil {
				return nil, fmt.Errorf("read the position of source %s: %w", r.spec.Name, err)
			}
			pos = fresh.Get(r.spec.Name)
		}
		if pos == nil {
			return []OffsetEntry{}, nil
		}
		var v any
		if err := json.Unmarshal(pos, &v); err != nil {
			v = string(pos)
		}
		return []OffsetEntry{{Partition: map[string]any{"pipeline": r.spec.Pipeline}, Offset: v}}, nil
	default:
		offs, err := r.w.opts.Backend.GroupOffsets(ctx, r.spec.Group)
		if err != nil {
			return nil, err
		}
		out := []OffsetEntry{}
		for _, o := range offs {
			out = append(out, OffsetEntry{
				Partition: map[string]any{"kafka_topic": o.Topic, "kafka_partition": o.Partition},
				Offset:    map[string]any{"kafka_offset": o.Offset},
			})
		}
		return out, nil
	}
}

// alterOffsets applies a PATCH of offsets.
func (r *runner) alterOffsets(ctx context.Context, entries []OffsetEntry) error {
	switch r.spec.Kind {
	case connect.KindSource:
		if err := r.checkNoOtherWorker(ctx); err != nil {
			return err
		}
		for _, e := range entries {
			if e.Offset == nil {
				if err := r.w.offsets.Put(ctx, r.spec.Pipeline, r.spec.Name, nil); err != nil {
					return err
				}
				continue
			}
			b, err := json.Marshal(e.Offset)
			if err != nil {
				return fmt.Errorf("%w: offset %v: %v", ErrBadRequest, e.Offset, err)
			}
			if err := r.w.offsets.Put(ctx, r.spec.Pipeline, r.spec.Name, b); err != nil {
				return err
			}
		}
		return nil
	default:
		set, _, err := r.sinkOffsets(ctx, entries)
		if err != nil {
			return err
		}
		return r.w.opts.Backend.CommitGroupOffsets(ctx, r.spec.Group, set)
	}
}

// AlterOffsetsWithNotes is AlterOffsets that also returns notes on what it
// accepted but will not take effect as written: a sink offset below its
// partition's log start offset, whose records are gone, so the sink starts
// that partition at the log start offset (auto.offset.reset=earliest).
func (w *Worker) AlterOffsetsWithNotes(ctx context.Context, name string, entries []OffsetEntry) ([]string, error) {
	if err := w.AlterOffsets(ctx, name, entries); err != nil {
		return nil, err
	}
	r, err := w.runner(name)
	if err != nil || r.spec.Kind == connect.KindSource {
		return nil, nil
	}
	// The offsets are committed; the notes are information only, so a
	// failure to compute them (a topic deleted meanwhile) is no error.
	_, notes, err := r.sinkOffsets(ctx, entries)
	if err != nil {
		return nil, nil
	}
	return notes, nil
}

// sinkOffsets turns a PATCH of a sink's offsets into the offsets to commit.
// As Kafka's AlterConsumerGroupOffsets does, it refuses a topic or partition
// that does not exist; an offset it checks as `groups reset-offsets` does,
// against the partition's [log start, log end] (tlog.CheckOffset), but
// refuses one past the end (or negative) instead of clamping it: a sink
// whose committed offset is past the end starts the partition over from its
// start, delivering every record again. One below the log start is
// accepted, as Kafka Connect does, with a note: the sink then starts at the
// log start offset. A null offset resets the partition to its log start.
func (r *runner) sinkOffsets(ctx context.Context, entries []OffsetEntry) (set []PartitionOffset, notes []string, err error) {
	var topics []string
	bounds := map[string][]PartitionBounds{}
	for i, e := range entries {
		topic, ok := e.Partition["kafka_topic"].(string)
		if !ok || topic == "" {
			return nil, nil, fmt.Errorf("%w: offsets[%d]: sink offsets need a partition with kafka_topic and kafka_partition", ErrBadRequest, i)
		}
		part, ok := asInt(e.Partition["kafka_partition"])
		if !ok {
			return nil, nil, fmt.Errorf("%w: offsets[%d]: kafka_partition of %s is not an integer", ErrBadRequest, i, topic)
		}
		b, ok := bounds[topic]
		if !ok {
			if topics == nil {
				if topics, err = r.w.opts.Backend.ListTopics(ctx); err != nil {
					return nil, nil, fmt.Errorf("list topics: %w", err)
				}
			}
			if !slices.Contains(topics, topic) {
				return nil, nil, fmt.Errorf("%w: offsets[%d] (kafka_topic %s, kafka_partition %d): topic %s does not exist; list topics with `tributary topics list`",
					ErrBadRequest, i, topic, part, topic)
			}
			if b, err = r.w.opts.Backend.EndOffsets(ctx, topic); err != nil {
				return nil, nil, fmt.Errorf("end offsets of %s: %w", topic, err)
			}
			bounds[topic] = b
		}
		pb, found := PartitionBounds{}, false
		for _, x := range b {
			if int64(x.Partition) == part {
				pb, found = x, true
			}
		}
		if !found {
			msg := fmt.Sprintf("%v: %s has no partition %d", tlog.ErrUnknownPartition, topic, part)
			if part >= math.MinInt32 && part <= math.MaxInt32 {
				if err := tlog.CheckPartition(topic, int32(part), len(b)); err != nil {
					msg = err.Error()
				}
			}
			return nil, nil, fmt.Errorf("%w: offsets[%d] (kafka_topic %s, kafka_partition %d): %s", ErrBadRequest, i, topic, part, msg)
		}
		tp := tlog.TopicPartition{Topic: topic, Partition: pb.Partition}
		if e.Offset == nil {
			// Reset: start from the earliest offset again.
			set = append(set, PartitionOffset{Topic: topic, Partition: pb.Partition, Offset: pb.Start})
			continue
		}
		om, ok := e.Offset.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("%w: offsets[%d]: offset of %s-%d must be {\"kafka_offset\": N}", ErrBadRequest, i, topic, part)
		}
		off, ok := asInt(om["kafka_offset"])
		if !ok {
			return nil, nil, fmt.Errorf("%w: offsets[%d]: kafka_offset of %s-%d must be an integer", ErrBadRequest, i, topic, part)
		}
		var re *tlog.OffsetRangeError
		switch err := tlog.CheckOffset(tp, off, pb.Start, pb.End); {
		case err == nil:
		case off < 0:
			return nil, nil, fmt.Errorf("%w: offsets[%d] (kafka_topic %s, kafka_partition %d): kafka_offset %d is negative; offsets start at 0 (valid offsets of %s-%d: [%d, %d], from the log start to the log end offset)",
				ErrBadRequest, i, topic, part, off, topic, part, pb.Start, pb.End)
		case errors.As(err, &re) && re.Below():
			notes = append(notes, fmt.Sprintf("%v: its records are gone, so the connector will start %s-%d at the log start offset (auto.offset.reset=earliest)", err, topic, part))
		default:
			return nil, nil, fmt.Errorf("%w: offsets[%d] (kafka_topic %s, kafka_partition %d): %v; a committed offset past the end makes the sink start the partition over (auto.offset.reset=earliest) and deliver its records again",
				ErrBadRequest, i, topic, part, err)
		}
		set = append(set, PartitionOffset{Topic: topic, Partition: pb.Partition, Offset: off})
	}
	return set, notes, nil
}

func (r *runner) resetOffsets(ctx context.Context) error {
	if r.spec.Kind == connect.KindSource {
		if err := r.checkNoOtherWorker(ctx); err != nil {
			return err
		}
		return r.w.offsets.Put(ctx, r.spec.Pipeline, r.spec.Name, nil)
	}
	return r.w.opts.Backend.DeleteGroup(ctx, r.spec.Group)
}

// checkNoOtherWorker refuses to change a source's offsets while other workers
// run it or stand by for it: on a backend that leases sources (kafka),
// stopping the source here stops this worker's task only, and the worker
// holding the lease would go on from its own position, overwriting the one
// changed here.
func (r *runner) checkNoOtherWorker(ctx context.Context) error {
	l, ok := r.w.opts.Backend.(SourceLeaser)
	if !ok {
		return nil
	}
	members, err := l.LeaseMembers(ctx, r.spec.Pipeline, r.spec.Name)
	if err != nil {
		return fmt.Errorf("find out whether another worker runs source %s: %w", r.spec.Name, err)
	}
	if len(members) > 0 {
		return fmt.Errorf("%w: source %s still runs on (or stands by in) worker %s: stop it on every worker that runs the pipeline (PUT /connectors/%s/stop on each) before changing its offsets", ErrBadRequest, r.spec.Name, strings.Join(members, ", worker "), r.spec.Name)
	}
	return nil
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), n == float64(int64(n))
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}
