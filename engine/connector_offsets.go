package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tributary-io/tributary/connect"
)

// offsets returns the connector's offsets in Kafka Connect's shape. A
// source has one partition, {"pipeline": …}, whose offset is its stored
// position (shown as JSON when it is JSON); a sink has one entry per
// partition of its group: {"kafka_topic","kafka_partition"} → {"kafka_offset"}.
func (r *runner) offsets(ctx context.Context) ([]OffsetEntry, error) {
	switch r.spec.Kind {
	case connect.KindSource:
		pos := r.w.offsets.Get(r.spec.Name)
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
		var set []PartitionOffset
		for _, e := range entries {
			topic, ok := e.Partition["kafka_topic"].(string)
			if !ok || topic == "" {
				return fmt.Errorf("%w: sink offsets need a partition with kafka_topic and kafka_partition", ErrBadRequest)
			}
			part, ok := asInt(e.Partition["kafka_partition"])
			if !ok {
				return fmt.Errorf("%w: kafka_partition of %s is not an integer", ErrBadRequest, topic)
			}
			if e.Offset == nil {
				// Reset: start from the earliest offset again.
				bounds, err := r.w.opts.Backend.EndOffsets(ctx, topic)
				if err != nil {
					return err
				}
				var start int64
				for _, b := range bounds {
					if b.Partition == int32(part) {
						start = b.Start
					}
				}
				set = append(set, PartitionOffset{Topic: topic, Partition: int32(part), Offset: start})
				continue
			}
			om, ok := e.Offset.(map[string]any)
			if !ok {
				return fmt.Errorf("%w: offset of %s/%d must be {\"kafka_offset\": N}", ErrBadRequest, topic, part)
			}
			off, ok := asInt(om["kafka_offset"])
			if !ok || off < 0 {
				return fmt.Errorf("%w: kafka_offset of %s/%d must be a non-negative integer", ErrBadRequest, topic, part)
			}
			set = append(set, PartitionOffset{Topic: topic, Partition: int32(part), Offset: off})
		}
		return r.w.opts.Backend.CommitGroupOffsets(ctx, r.spec.Group, set)
	}
}

func (r *runner) resetOffsets(ctx context.Context) error {
	if r.spec.Kind == connect.KindSource {
		return r.w.offsets.Put(ctx, r.spec.Pipeline, r.spec.Name, nil)
	}
	return r.w.opts.Backend.DeleteGroup(ctx, r.spec.Group)
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
