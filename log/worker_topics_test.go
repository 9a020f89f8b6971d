package log

import (
	"errors"
	"strings"
	"testing"
)

// TestCreateTopic_WorkerTopicsHaveOnePartition: the worker's topics
// (_tributary.*) are made with one partition, whatever creates them: the
// worker refuses to start on one with more, and the log can neither shrink
// nor delete it, so a data directory holding one could not be fixed. A
// CreateTopic (or its check) with another count is refused, and an
// auto-creation makes one partition where other topics get the log's
// default.
func TestCreateTopic_WorkerTopicsHaveOnePartition(t *testing.T) {
	l := openTestLog(t, t.TempDir(), func(o *Options) { o.NumPartitions = 3 })
	defer l.Close()
	compact := map[string]string{"cleanup.policy": "compact"}
	for _, parts := range []int{3, 25} {
		err := l.CheckCreateTopic("_tributary.offsets", parts, compact)
		if !errors.Is(err, ErrInvalidPartitions) {
			t.Errorf("CheckCreateTopic(_tributary.offsets, %d) = %v, want ErrInvalidPartitions", parts, err)
		}
		err = l.CreateTopic("_tributary.offsets", parts, compact)
		if !errors.Is(err, ErrInvalidPartitions) || !strings.Contains(err.Error(), "exactly one") {
			t.Errorf("CreateTopic(_tributary.offsets, %d) = %v, want ErrInvalidPartitions saying it needs exactly one", parts, err)
		}
		if _, err := l.Partitions("_tributary.offsets"); err == nil {
			t.Fatalf("_tributary.offsets created with %d partitions", parts)
		}
	}
	if err := l.CreateTopic("_tributary.offsets", 1, compact); err != nil {
		t.Fatalf("CreateTopic(_tributary.offsets, 1): %v", err)
	}
	if err := l.CreateTopic("tributary.events", 3, nil); err != nil {
		t.Fatalf("CreateTopic(tributary.events, 3): %v", err)
	}
	for name, want := range map[string]int{"_tributary.leases": 1, "events": 3} {
		if got := l.DefaultPartitionsOf(name); got != want {
			t.Errorf("DefaultPartitionsOf(%s) = %d, want %d", name, got, want)
		}
		if _, err := l.Append(t.Context(), name, 0, []Record{{Value: []byte("x")}}); err != nil {
			t.Fatalf("append to %s (auto-created): %v", name, err)
		}
		if n, err := l.Partitions(name); err != nil || n != want {
			t.Errorf("%s auto-created with %d partitions (%v), want %d", name, n, err, want)
		}
	}
}
