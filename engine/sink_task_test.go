package engine

import (
	"slices"
	"testing"

	"github.com/tributary-io/tributary/connect"
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
