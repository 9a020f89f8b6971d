package engine

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// TestNextOffsets checks the offsets committed after a polled batch
// against a per-record model: runs of one partition, partitions and
// topics interleaved, a partition seen again after another.
func TestNextOffsets(t *testing.T) {
	rec := func(topic string, p int32, off int64) connect.Record {
		return connect.Record{Topic: topic, Partition: p, Offset: off}
	}
	recs := []connect.Record{
		rec("a", 0, 10), rec("a", 0, 11), rec("a", 0, 12),
		rec("a", 1, 5),
		rec("b", 1, 7), rec("b", 1, 8),
		rec("a", 0, 13), rec("a", 0, 14),
		rec("a", 1, 6), rec("a", 1, 3), // lower after higher: the highest counts
		rec("b", 0, 0),
	}
	want := []PartitionOffset{
		{Topic: "a", Partition: 0, Offset: 15},
		{Topic: "a", Partition: 1, Offset: 7},
		{Topic: "b", Partition: 1, Offset: 9},
		{Topic: "b", Partition: 0, Offset: 1},
	}
	if got := nextOffsets(recs); !slices.Equal(got, want) {
		t.Errorf("nextOffsets = %v, want %v", got, want)
	}
	if got := nextOffsets(nil); len(got) != 0 {
		t.Errorf("nextOffsets(nil) = %v, want none", got)
	}
}

// TestWorker_SinkRecordsCarryTheirOriginalCoordinates: every record handed
// to a sink carries the topic, partition and offset it was read at
// (KIP-793's original coordinates), the same as its own without
// transforms, and unchanged by a route that merges two topics, whose
// records then share topic, partition and offset, so that a sink keeping
// its own offsets can tell them apart.
func TestWorker_SinkRecordsCarryTheirOriginalCoordinates(t *testing.T) {
	for _, route := range []bool{false, true} {
		t.Run(fmt.Sprintf("route=%v", route), func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			ctx := t.Context()
			h.worker.opts.Transforms = func(typ string, cfg map[string]string) (Transformer, error) {
				return routeTransform{to: "shop.orders", copies: 1}, nil
			}
			want := map[string]bool{}
			for _, topic := range []string{"shop1.orders", "shop2.orders"} {
				if err := h.log.CreateTopic(topic, 1, nil); err != nil {
					t.Fatal(err)
				}
				if _, err := h.log.Append(ctx, topic, 0, []tlog.Record{{Value: []byte(`"a"`)}, {Value: []byte(`"b"`)}}); err != nil {
					t.Fatal(err)
				}
				want[topic+"/0@0"], want[topic+"/0@1"] = true, true
			}
			spec := ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"shop1.orders", "shop2.orders"}}
			if route {
				spec.Transforms = []TransformSpec{{Type: "route", Config: map[string]string{}}}
			}
			if err := h.worker.Start(ctx, spec, ""); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "4 records at the sink", func() bool { return len(h.received()) >= 4 })
			got := map[string]bool{}
			for _, r := range h.received() {
				topic, p, off := r.Original()
				got[fmt.Sprintf("%s/%d@%d", topic, p, off)] = true
				if r.OriginalTopic == "" {
					t.Errorf("record %s/%d@%d: OriginalTopic not set", r.Topic, r.Partition, r.Offset)
				}
				if !route && (r.OriginalTopic != r.Topic || r.OriginalPartition != r.Partition || r.OriginalOffset != r.Offset) {
					t.Errorf("without transforms, record %s/%d@%d has originals %s/%d@%d", r.Topic, r.Partition, r.Offset, r.OriginalTopic, r.OriginalPartition, r.OriginalOffset)
				}
				if route && r.Topic != "shop.orders" {
					t.Errorf("record routed to %q, want shop.orders", r.Topic)
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("original coordinates %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
		})
	}
}
