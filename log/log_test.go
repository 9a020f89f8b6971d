package log

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"
)

func openTestLog(t *testing.T, dir string, opts ...func(*Options)) *Log {
	t.Helper()
	o := Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range opts {
		f(&o)
	}
	l, err := Open(o)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l
}

func readAll(t *testing.T, l *Log, topic string, part int32, from int64) []Record {
	t.Helper()
	var out []Record
	for {
		res, err := l.Read(t.Context(), topic, part, from, ReadOptions{MaxBytes: 64 << 10})
		if err != nil {
			t.Fatalf("Read(%s/%d@%d): %v", topic, part, from, err)
		}
		out = append(out, res.Records...)
		if res.NextOffset >= res.HighWatermark || res.NextOffset == from {
			return out
		}
		from = res.NextOffset
	}
}

func TestLog_AppendRead(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i := 0; i < 10; i++ {
		recs := make([]Record, 100)
		for j := range recs {
			recs[j] = Record{Key: []byte(fmt.Sprint("k", j)), Value: []byte(fmt.Sprintf("v%d-%d", i, j)),
				Headers: []Header{{Key: "h", Value: []byte("x")}}}
		}
		base, err := l.Append(ctx, "t", 0, recs)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(i * 100); base != want {
			t.Fatalf("base = %d, want %d", base, want)
		}
	}
	got := readAll(t, l, "t", 0, 0)
	if len(got) != 1000 {
		t.Fatalf("read %d records, want 1000", len(got))
	}
	for i, r := range got {
		if r.Offset != int64(i) {
			t.Fatalf("record %d has offset %d", i, r.Offset)
		}
		if want := fmt.Sprintf("v%d-%d", i/100, i%100); string(r.Value) != want {
			t.Fatalf("record %d value %q, want %q", i, r.Value, want)
		}
		if len(r.Headers) != 1 || r.Headers[0].Key != "h" {
			t.Fatalf("record %d headers %v", i, r.Headers)
		}
	}
	mid := readAll(t, l, "t", 0, 555)
	if len(mid) != 445 || mid[0].Offset != 555 {
		t.Fatalf("read from 555: %d records, first %d", len(mid), mid[0].Offset)
	}
	if _, err := l.Read(ctx, "t", 0, 1001, ReadOptions{}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past end: %v, want ErrOffsetOutOfRange", err)
	}
}

func TestLog_Reopen_KeepsDataAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("t", 2, map[string]string{ConfigSegmentBytes: "2000"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := l.Append(t.Context(), "t", int32(i%2), []Record{{Value: []byte(fmt.Sprintf("value-%04d-padding-padding", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	d, err := l.DescribeTopic("t")
	if err != nil {
		t.Fatal(err)
	}
	if d.Partitions[0].Segments < 3 {
		t.Fatalf("want several segments, got %d", d.Partitions[0].Segments)
	}
	for p := int32(0); p < 2; p++ {
		got := readAll(t, l, "t", p, 0)
		if len(got) != 100 {
			t.Fatalf("partition %d: %d records after reopen, want 100", p, len(got))
		}
		for i, r := range got {
			if want := fmt.Sprintf("value-%04d-padding-padding", 2*i+int(p)); string(r.Value) != want {
				t.Fatalf("p%d record %d = %q, want %q", p, i, r.Value, want)
			}
		}
		// Every offset is reachable through the indexes.
		for off := int64(0); off < 100; off += 7 {
			res, err := l.Read(t.Context(), "t", p, off, ReadOptions{MaxBytes: 1})
			if err != nil || len(res.Records) == 0 || res.Records[0].Offset != off {
				t.Fatalf("read p%d@%d: %v %v", p, off, res.Records, err)
			}
		}
	}
}

func TestLog_ReadWaitsForData(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan ReadResult)
	go func() {
		res, _ := l.Read(context.Background(), "t", 0, 0, ReadOptions{MaxWait: 10 * time.Second})
		done <- res
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := l.Append(t.Context(), "t", 0, []Record{{Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if len(res.Records) != 1 {
			t.Fatalf("got %d records", len(res.Records))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reader did not wake up")
	}
	start := time.Now()
	res, err := l.Read(t.Context(), "t", 0, 1, ReadOptions{MaxWait: 100 * time.Millisecond})
	if err != nil || len(res.Records) != 0 || time.Since(start) < 90*time.Millisecond {
		t.Fatalf("read at end: %v, %v after %v", res.Records, err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.Read(ctx, "t", 0, 1, ReadOptions{MaxWait: time.Minute}); !errors.Is(err, context.Canceled) {
		t.Fatalf("read with cancelled ctx: %v", err)
	}
}

func TestLog_AppendRaw_RefusesUndecodableRecords(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	good := encodeBatch([]Record{{Value: []byte("a")}, {Value: []byte("b")}}, time.Now(), "none", noProducer)
	if _, err := l.AppendRaw(t.Context(), "raw", 0, good); err != nil {
		t.Fatalf("AppendRaw(valid batch): %v", err)
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)-3] = 0x7f // a record length past the end
	setBatchCRC(bad)       // the CRC holds; the records do not
	if _, err := l.AppendRaw(t.Context(), "raw", 0, bad); !errors.Is(err, ErrUnsupportedBatch) {
		t.Fatalf("AppendRaw(bad records) = %v, want ErrUnsupportedBatch", err)
	}
	if got := readAll(t, l, "raw", 0, 0); len(got) != 2 {
		t.Fatalf("read %d records, want the 2 of the good batch", len(got))
	}
}

func TestLog_ReadBatches_ServesStoredBytes(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("t", 1, map[string]string{ConfigCompressionType: "zstd"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := l.Append(t.Context(), "t", 0, []Record{{Value: []byte(fmt.Sprint("a", i))}, {Value: []byte(fmt.Sprint("b", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := l.ReadBatches(t.Context(), "t", 0, 3, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Offset 3 is in the second batch (2..3): it is served whole.
	if len(res.Batches) != 2 || res.NextOffset != 6 || res.HighWatermark != 6 {
		t.Fatalf("ReadBatches = %d batches, next %d, hw %d", len(res.Batches), res.NextOffset, res.HighWatermark)
	}
	kb, meta, reason := checkBatch(res.Batches[0])
	if reason != "" || meta.BaseOffset != 2 || kb.Attributes&attrCompressionMask != 4 {
		t.Fatalf("first batch: base %d, attrs %x, %s", meta.BaseOffset, kb.Attributes, reason)
	}
	start := time.Now()
	res, err = l.ReadBatches(t.Context(), "t", 0, 6, ReadOptions{MaxWait: 50 * time.Millisecond})
	if err != nil || len(res.Batches) != 0 || time.Since(start) < 40*time.Millisecond {
		t.Fatalf("read at the end: %d batches, %v, after %v", len(res.Batches), err, time.Since(start))
	}
	if err := l.CreateTopic("c", 1, map[string]string{ConfigCleanupPolicy: "compact"}); err != nil {
		t.Fatal(err)
	}
	keyless := encodeBatch([]Record{{Value: []byte("x")}}, time.Now(), "none", noProducer)
	if _, err := l.AppendRaw(t.Context(), "c", 0, keyless); !errors.Is(err, ErrCompactedTopicNilKey) {
		t.Fatalf("AppendRaw(keyless, compacted) = %v, want ErrCompactedTopicNilKey", err)
	}
}

func TestLog_TopicID_MatchesDescribeAndChangesWhenMadeAgain(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if _, err := l.TopicID("t"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("TopicID of a missing topic: %v, want ErrUnknownTopic", err)
	}
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	id, err := l.TopicID("t")
	d, derr := l.DescribeTopic("t")
	if err != nil || derr != nil || id == "" || id != d.ID {
		t.Fatalf("TopicID = %q, %v; DescribeTopic ID %q, %v", id, err, d.ID, derr)
	}
	if err := l.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if again, err := l.TopicID("t"); err != nil || again == id {
		t.Fatalf("TopicID after the topic was made again = %q, %v; the old id was %q", again, err, id)
	}
}
