package log

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestReviewLog_SegmentMsMaxDoesNotRollEveryAppend: Kafka accepts segment.ms
// up to Long.MAX_VALUE ("never roll by time"). rollDue converts it with
// time.Duration(ms)*time.Millisecond, which overflows (MaxInt64 ms is -1 ms
// in nanoseconds), so every append rolls a new segment.
func TestReviewLog_SegmentMsMaxDoesNotRollEveryAppend(t *testing.T) {
	for _, ms := range []string{"9223372036854775807", "10000000000000"} {
		t.Run(ms, func(t *testing.T) {
			l := openTestLog(t, t.TempDir())
			defer l.Close()
			if err := l.CreateTopic("t", 1, map[string]string{ConfigSegmentMs: ms}); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if _, err := l.Append(context.Background(), "t", 0, []Record{{Value: []byte(fmt.Sprint(i))}}); err != nil {
					t.Fatal(err)
				}
			}
			d, err := l.DescribeTopic("t")
			if err != nil {
				t.Fatal(err)
			}
			if n := d.Partitions[0].Segments; n != 1 {
				t.Fatalf("segment.ms=%s: 5 small appends made %d segments; want 1 (no roll is due)", ms, n)
			}
		})
	}
}

// TestReviewLog_GrowingOffsetsTopicLosesCommits: groups.go says the
// partition count of __consumer_offsets must never change (a group's
// records are ordered by their offset in its partition, and apply compares
// those offsets), but CreatePartitions (Kafka CreatePartitions, the CLI, the
// REST API) grows it like any topic. After that, a group's new commits go to
// another partition at lower offsets and lose to its old ones.
func TestReviewLog_GrowingOffsetsTopicLosesCommits(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	ctx := context.Background()
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	// A group that KeyPartition moves off partition 0 once there are 4.
	group := ""
	for i := 0; ; i++ {
		group = fmt.Sprint("g", i)
		if KeyPartition([]byte(group), 4) != 0 {
			break
		}
	}
	for off := int64(1); off <= 5; off++ {
		if err := l.Groups().Commit(ctx, group, []OffsetCommit{{Topic: "t", Partition: 0, Offset: off}}); err != nil {
			t.Fatal(err)
		}
	}
	growErr := l.CreatePartitions(OffsetsTopic, 4)
	if growErr != nil {
		l.Close()
		return // refused: the invariant holds
	}
	if err := l.Groups().Commit(ctx, group, []OffsetCommit{{Topic: "t", Partition: 0, Offset: 42}}); err != nil {
		t.Fatal(err)
	}
	live, _ := l.Groups().CommittedOffset(group, "t", 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	reopened, _ := l.Groups().CommittedOffset(group, "t", 0)
	if live != 42 || reopened != 42 {
		t.Fatalf("after growing %s to 4 partitions (accepted), a commit of offset 42 returned nil; committed offset then %d, after reopen %d; want 42 (or the growth refused)", OffsetsTopic, live, reopened)
	}
}

// TestReviewLog_ProducerSnapshotNullEntryPanics: a producer.snapshot that
// parses but holds null for a producer (damage, a hand edit) makes Open
// panic (nil *producerEntry in producerState.update) instead of falling
// back to a scan, as an unreadable snapshot does.
func TestReviewLog_ProducerSnapshotNullEntryPanics(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	id, epoch, err := l.InitProducerID()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendIdempotent(context.Background(), "t", 0, []Record{{Value: []byte("a")}}, ProducerInfo{ID: id, Epoch: epoch, Sequence: 0}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	snap := fmt.Sprintf(`{"offset":0,"producers":{"%d":null}}`, id)
	if err := os.WriteFile(filepath.Join(partitionDir(dir, "t", 0), producerSnapshotFile), []byte(snap), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Open panicked on a damaged producer snapshot: %v", r)
		}
	}()
	l2, err := Open(Options{Dir: dir, Logger: discardLogger()})
	if err == nil {
		l2.Close()
	}
}
