package log

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"
)

// TestProduceAsync_Partitions checks a keyed produce large enough to spread
// over goroutines, twice in a row: every record lands on its key's
// partition, at offsets that follow the call order within the partition,
// and reads back as written, from the tail cache and from the files (once
// the log is reopened).
func TestProduceAsync_Partitions(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	const parts = 3
	if err := l.CreateTopic("t", parts, nil); err != nil {
		t.Fatal(err)
	}
	var calls [2][]Record
	for c := range calls {
		for i := range 2 * parallelProduceRecords {
			calls[c] = append(calls[c], Record{Key: fmt.Appendf(nil, "user-%d", i%37), Value: fmt.Appendf(nil, "call %d record %d", c, i)})
		}
	}
	for c := range calls {
		pd, err := l.ProduceAsync(t.Context(), "t", calls[c])
		if err != nil {
			t.Fatal(err)
		}
		if err := pd.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	check := func(l *Log) {
		t.Helper()
		next := map[int32]int64{}
		for c := range calls {
			for _, r := range calls[c] {
				if want := KeyPartition(r.Key, parts); r.Partition != want {
					t.Fatalf("%s went to partition %d, want %d", r.Value, r.Partition, want)
				}
				if r.Offset != next[r.Partition] {
					t.Fatalf("%s at offset %d of partition %d, want %d", r.Value, r.Offset, r.Partition, next[r.Partition])
				}
				next[r.Partition]++
				res, err := l.Read(t.Context(), "t", r.Partition, r.Offset, ReadOptions{MaxBytes: 1})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Records) == 0 || res.Records[0].Offset != r.Offset || !bytes.Equal(res.Records[0].Value, r.Value) {
					t.Fatalf("read at %d/%d: %+v, want %s", r.Partition, r.Offset, res.Records, r.Value)
				}
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	check(l)
}

// BenchmarkProduceAsync appends 2,000 keyed records of 1 KiB over three
// partitions per op, as a source task's appender does (interval flushing,
// so that it measures encoding and writing, not fsync).
func BenchmarkProduceAsync(b *testing.B) {
	l := benchLog(b, b.TempDir(), Options{FlushInterval: time.Hour})
	if err := l.CreateTopic("keyed", 3, nil); err != nil {
		b.Fatal(err)
	}
	recs := benchValues(2000, 1024)
	for i := range recs {
		recs[i].Key = fmt.Appendf(nil, "user-%d", i%1000)
	}
	ctx := context.Background()
	b.SetBytes(2000 * 1024)
	b.ReportAllocs()
	for b.Loop() {
		pd, err := l.ProduceAsync(ctx, "keyed", recs)
		if err != nil {
			b.Fatal(err)
		}
		if err := pd.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// TestProduceAsync_RefusedRecordWritesNothing: a call with one record the
// topic refuses (no key, on a compacted topic) fails with nothing written
// in any partition, in the parallel and in the sequential path, so a
// caller that retries the call appends no share of it twice.
func TestProduceAsync_RefusedRecordWritesNothing(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("c", 3, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{8, 2 * parallelProduceRecords} {
		recs := make([]Record, n)
		for i := range recs {
			recs[i] = Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}
		}
		recs[n-1].Key = nil // in the last partition's share, or any
		pd, err := l.ProduceAsync(t.Context(), "c", recs)
		if err == nil {
			t.Fatalf("%d records: a record without a key was accepted on a compacted topic", n)
		}
		if err := pd.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		for p := range int32(3) {
			start, end, err := l.Offsets("c", p)
			if err != nil {
				t.Fatal(err)
			}
			if end != start {
				t.Errorf("%d records: partition %d holds %d records after a refused call", n, p, end-start)
			}
		}
	}
}
