package log

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// appendTens appends n records in batches of ten; the record at offset o
// holds the value "v<o>".
func appendTens(t *testing.T, l *Log, topic string, n int) {
	t.Helper()
	_, end, err := l.Offsets(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 10 {
		recs := make([]Record, 10)
		for j := range recs {
			o := end + int64(i+j)
			recs[j] = Record{Key: fmt.Appendf(nil, "k%d", o%7), Value: fmt.Appendf(bytes.Repeat([]byte("x"), 40), "v%d", o)}
		}
		if _, err := l.Append(t.Context(), topic, 0, recs); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDeleteRecords_MovesTheLogStartOffset(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	defer l.Close()
	if err := l.CreateTopic("d", 1, map[string]string{ConfigSegmentBytes: "2048"}); err != nil {
		t.Fatal(err)
	}
	appendTens(t, l, "d", 100)

	low, err := l.DeleteRecords("d", 0, 25) // inside the batch 20..29
	if err != nil || low != 25 {
		t.Fatalf("DeleteRecords(25) = %d, %v; want 25, nil", low, err)
	}
	if start, end, _ := l.Offsets("d", 0); start != 25 || end != 100 {
		t.Fatalf("Offsets = [%d, %d), want [25, 100)", start, end)
	}
	if _, err := l.Read(t.Context(), "d", 0, 24, ReadOptions{}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read(24) below the log start: %v, want ErrOffsetOutOfRange", err)
	}
	if _, err := l.ReadBatches(t.Context(), "d", 0, 0, ReadOptions{}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("ReadBatches(0) below the log start: %v, want ErrOffsetOutOfRange", err)
	}
	res, err := l.Read(t.Context(), "d", 0, 25, ReadOptions{})
	if err != nil || len(res.Records) == 0 || res.Records[0].Offset != 25 || res.LogStartOffset != 25 {
		t.Fatalf("Read(25) = %+v, %v; want records from 25, log start 25", res, err)
	}
	// A fetch at the log start gets the batch that holds it, as Kafka
	// serves it; the client skips the records below the offset it asked for.
	br, err := l.ReadBatches(t.Context(), "d", 0, 25, ReadOptions{})
	if err != nil || len(br.Batches) == 0 || br.LogStartOffset != 25 {
		t.Fatalf("ReadBatches(25) = %d batches, start %d, %v", len(br.Batches), br.LogStartOffset, err)
	}
	if _, m, _ := batchHeader(br.Batches[0]); m.BaseOffset != 20 {
		t.Fatalf("ReadBatches(25): first batch at %d, want the one at 20 that holds 25", m.BaseOffset)
	}
	br.Release()
	if off, found, err := l.OffsetForTime("d", 0, time.UnixMilli(0)); err != nil || !found || off != 25 {
		t.Fatalf("OffsetForTime(0) = %d, %v, %v; want 25 (never below the log start)", off, found, err)
	}
	if got := readAll(t, l, "d", 0, 25); len(got) != 75 || got[0].Offset != 25 || string(got[0].Value[40:]) != "v25" {
		t.Fatalf("read from the log start: %d records, first %+v", len(got), got[0])
	}
	for _, st := range l.PartitionStats() {
		if st.Topic == "d" && st.LogStartOffset != 25 {
			t.Fatalf("PartitionStats LogStartOffset = %d, want 25", st.LogStartOffset)
		}
	}
	if d, err := l.DescribeTopic("d"); err != nil || d.Partitions[0].LogStartOffset != 25 {
		t.Fatalf("DescribeTopic = %+v, %v; want log start 25", d.Partitions, err)
	}

	// Lower than the log start: nothing changes, the answer is the start.
	if low, err := l.DeleteRecords("d", 0, 10); err != nil || low != 25 {
		t.Fatalf("DeleteRecords(10) = %d, %v; want 25, nil", low, err)
	}
	// Past the high watermark, or negative other than -1: out of range.
	for _, off := range []int64{101, -2} {
		if _, err := l.DeleteRecords("d", 0, off); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("DeleteRecords(%d): %v, want ErrOffsetOutOfRange", off, err)
		}
	}
	if start, _, _ := l.Offsets("d", 0); start != 25 {
		t.Fatalf("log start %d after refused deletions, want 25", start)
	}
	// -1 is the high watermark: everything goes, appends go on.
	if low, err := l.DeleteRecords("d", 0, -1); err != nil || low != 100 {
		t.Fatalf("DeleteRecords(-1) = %d, %v; want 100, nil", low, err)
	}
	if res, err := l.Read(t.Context(), "d", 0, 100, ReadOptions{}); err != nil || len(res.Records) != 0 {
		t.Fatalf("Read(100) at the end = %+v, %v", res, err)
	}
	appendTens(t, l, "d", 10)
	if got := readAll(t, l, "d", 0, 100); len(got) != 10 || got[0].Offset != 100 {
		t.Fatalf("read after deleting all: %d records", len(got))
	}
}

func TestDeleteRecords_Refused(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("kv", 1, map[string]string{ConfigCleanupPolicy: "compact"}); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic("_tributary.positions", 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic("d", 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topic string
		part  int32
		want  error
	}{
		{"nope", 0, ErrUnknownTopic},
		{"d", 1, ErrUnknownPartition},
		{"_tributary.positions", 0, ErrInternalTopic},
		{"kv", 0, ErrPolicyViolation}, // Kafka: only topics whose policy has delete
	} {
		if _, err := l.DeleteRecords(tc.topic, tc.part, -1); !errors.Is(err, tc.want) {
			t.Errorf("DeleteRecords(%s, %d): %v, want %v", tc.topic, tc.part, err, tc.want)
		}
	}
}

func TestDeleteRecords_SurvivesReopenClamped(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("d", 1, map[string]string{ConfigSegmentBytes: "2048"}); err != nil {
		t.Fatal(err)
	}
	appendTens(t, l, "d", 100)
	if _, err := l.DeleteRecords("d", 0, 42); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	if start, end, _ := l.Offsets("d", 0); start != 42 || end != 100 {
		t.Fatalf("after reopen: [%d, %d), want [42, 100)", start, end)
	}
	if _, err := l.Read(t.Context(), "d", 0, 41, ReadOptions{}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read(41) after reopen: %v, want ErrOffsetOutOfRange", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A checkpoint past the end (the end was lost with FlushInterval) is
	// clamped to the end.
	pdir := partitionDir(dir, "d", 0)
	if err := writeLogStartCheckpoint(pdir, 500); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	if start, end, _ := l.Offsets("d", 0); start != 100 || end != 100 {
		t.Errorf("checkpoint 500: offsets [%d, %d) after open, want [100, 100)", start, end)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// One below the first segment (its segments went, a crash before the
	// next deletion's checkpoint) is raised to that segment's base.
	bases, _ := segmentFiles(t, dir, "d", 0)
	for _, ext := range []string{".log", ".index", ".timeindex"} {
		if err := os.Remove(filepath.Join(pdir, segmentName(bases[0], ext))); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeLogStartCheckpoint(pdir, 3); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	if start, _, _ := l.Offsets("d", 0); start != bases[1] {
		t.Errorf("checkpoint 3: log start %d after open, want the first base %d", start, bases[1])
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDeleteRecords_RetentionDeletesSegmentsBelow(t *testing.T) {
	for _, policy := range []string{"delete", "compact,delete"} {
		t.Run(policy, func(t *testing.T) {
			dir := t.TempDir()
			l := openTestLog(t, dir)
			defer l.Close()
			// Nothing expires by time or size: only the log start deletes.
			if err := l.CreateTopic("d", 1, map[string]string{ConfigSegmentBytes: "2048", ConfigCleanupPolicy: policy,
				ConfigRetentionMs: "-1", ConfigRetentionBytes: "-1"}); err != nil {
				t.Fatal(err)
			}
			appendTens(t, l, "d", 200)
			bases, _ := segmentFiles(t, dir, "d", 0)
			if len(bases) < 5 {
				t.Fatalf("%d segments, want several", len(bases))
			}
			cut := bases[3] + 5 // inside the fourth segment
			if _, err := l.DeleteRecords("d", 0, cut); err != nil {
				t.Fatal(err)
			}
			l.EnforceRetention()
			after, _ := segmentFiles(t, dir, "d", 0)
			if after[0] != bases[3] || len(after) != len(bases)-3 {
				t.Fatalf("segments %v after retention (before %v), want those from %d on", after, bases, bases[3])
			}
			if start, _, _ := l.Offsets("d", 0); start != cut {
				t.Fatalf("log start %d after retention, want %d", start, cut)
			}
			// The active segment stays even when the start is at the end.
			if _, err := l.DeleteRecords("d", 0, -1); err != nil {
				t.Fatal(err)
			}
			l.EnforceRetention()
			after, _ = segmentFiles(t, dir, "d", 0)
			if len(after) != 1 || after[0] != bases[len(bases)-1] {
				t.Fatalf("segments %v after deleting everything, want the active one %d", after, bases[len(bases)-1])
			}
			if start, end, _ := l.Offsets("d", 0); start != 200 || end != 200 {
				t.Fatalf("offsets [%d, %d), want [200, 200)", start, end)
			}
		})
	}
}

// TestDeleteRecords_CompactionDoesNotResurrect compacts a compact,delete
// topic after a deletion and reopens it: nothing below the log start comes
// back, neither to reads nor as the log start.
func TestDeleteRecords_CompactionDoesNotResurrect(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("kv", 1, map[string]string{ConfigSegmentBytes: "2048", ConfigCleanupPolicy: "compact,delete",
		ConfigRetentionMs: "-1", ConfigMinCleanableRatio: "0.01"}); err != nil {
		t.Fatal(err)
	}
	appendTens(t, l, "kv", 300)
	if _, err := l.DeleteRecords("kv", 0, 137); err != nil {
		t.Fatal(err)
	}
	l.Compact(t.Context())
	// Compaction may move the start further (a compact,delete topic drops
	// the segments it emptied), never back.
	var want int64
	check := func(when string) {
		t.Helper()
		start, _, _ := l.Offsets("kv", 0)
		if start < 137 || (want != 0 && start != want) {
			t.Fatalf("%s: log start %d, want %d (at least 137)", when, start, max(want, 137))
		}
		want = start
		for _, r := range readAll(t, l, "kv", 0, start) {
			if r.Offset < 137 {
				t.Fatalf("%s: read record at %d below the deleted 137", when, r.Offset)
			}
		}
		if _, err := l.Read(t.Context(), "kv", 0, start-1, ReadOptions{}); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("%s: Read(%d): %v, want ErrOffsetOutOfRange", when, start-1, err)
		}
	}
	check("after compaction")
	l.EnforceRetention()
	check("after retention")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	check("after reopen")
}

func TestDeleteRecords_ResetToEarliestUsesLogStart(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("d", 1, nil); err != nil {
		t.Fatal(err)
	}
	appendTens(t, l, "d", 50)
	if _, err := l.DeleteRecords("d", 0, 33); err != nil {
		t.Fatal(err)
	}
	plan, err := l.Groups().PlanReset("g", ResetSpec{Mode: ResetToEarliest, Topics: []TopicScope{{Topic: "d"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 1 || plan[0].NewOffset != 33 {
		t.Fatalf("reset plan %+v, want offset 33", plan)
	}
}

func TestReadLogStartCheckpoint_Damaged(t *testing.T) {
	dir := t.TempDir()
	for _, data := range []string{"", "0\n", "9\n12\n", "0\nx\n", "0\n-4\n"} {
		if err := os.WriteFile(filepath.Join(dir, logStartCheckpointFile), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if off, err := readLogStartCheckpoint(dir); err == nil {
			t.Errorf("readLogStartCheckpoint(%q) = %d, nil; want an error", data, off)
		}
	}
	if err := writeLogStartCheckpoint(dir, 77); err != nil {
		t.Fatal(err)
	}
	if off, err := readLogStartCheckpoint(dir); err != nil || off != 77 {
		t.Fatalf("readLogStartCheckpoint = %d, %v; want 77", off, err)
	}
	if err := os.Remove(filepath.Join(dir, logStartCheckpointFile)); err != nil {
		t.Fatal(err)
	}
	if off, err := readLogStartCheckpoint(dir); err != nil || off != 0 {
		t.Fatalf("readLogStartCheckpoint without a file = %d, %v; want 0, nil", off, err)
	}
}
