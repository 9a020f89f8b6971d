package log

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Run with: go test -run XXX -bench . -benchtime 2x ./log/
//
// Append benchmarks fsync before every acknowledgement (the default Options).
// One op is one Append call of batch records; inflight appenders share the
// ops, so with several in flight group commit covers many calls per fsync.

func benchLog(b *testing.B, dir string, opts Options) *Log {
	b.Helper()
	opts.Dir = dir
	opts.Logger = slog.New(slog.DiscardHandler)
	l, err := Open(opts)
	if err != nil {
		b.Fatalf("Open(%s): %v", dir, err)
	}
	b.Cleanup(func() { l.Close() })
	if err := l.CreateTopic("bench", 1, nil); err != nil {
		b.Fatal(err)
	}
	return l
}

func benchValues(n, size int) []Record {
	buf := make([]byte, n*size)
	for i := range buf {
		buf[i] = byte('a' + i%26)
	}
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{Value: buf[i*size : (i+1)*size : (i+1)*size]}
	}
	return recs
}

func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{100, 1024} {
		for _, batch := range []int{1, 100, 1000} {
			for _, inflight := range []int{1, 8} {
				name := fmt.Sprintf("size=%dB/batch=%d/inflight=%d", size, batch, inflight)
				b.Run(name, func(b *testing.B) { benchAppend(b, size, batch, inflight) })
			}
		}
	}
}

func benchAppend(b *testing.B, size, batch, inflight int) {
	l := benchLog(b, b.TempDir(), Options{})
	recs := benchValues(batch, size)
	ctx := context.Background()
	fsyncs := l.Metrics().Fsyncs.Load()
	b.SetBytes(int64(size * batch))
	b.ReportAllocs()
	b.ResetTimer()
	var (
		ops  atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, inflight)
	)
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ops.Add(1) <= int64(b.N) {
				if _, err := l.Append(ctx, "bench", 0, recs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	n := float64(b.N) * float64(batch)
	b.ReportMetric(n/b.Elapsed().Seconds(), "records/s")
	if f := l.Metrics().Fsyncs.Load() - fsyncs; f > 0 {
		b.ReportMetric(n/float64(f), "records/fsync")
	}
}

// BenchmarkReadSequential reads a whole partition from offset 0 with reads of
// 1 MiB; one op is one pass. The partition is filled once, with interval
// flushing to keep setup short; reads come from the page cache.
func BenchmarkReadSequential(b *testing.B) {
	const records = 200_000
	for _, size := range []int{100, 1024} {
		l := benchLog(b, b.TempDir(), Options{FlushInterval: time.Hour})
		recs := benchValues(1000, size)
		ctx := context.Background()
		for i := 0; i < records; i += len(recs) {
			if _, err := l.Append(ctx, "bench", 0, recs); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("size=%dB/records=%d", size, records), func(b *testing.B) {
			b.SetBytes(int64(records * size))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if n := readPartition(b, l); n != records {
					b.Fatalf("read %d records, want %d", n, records)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)*records/b.Elapsed().Seconds(), "records/s")
		})
	}
}

func readPartition(b *testing.B, l *Log) int {
	ctx := context.Background()
	_, end, err := l.Offsets("bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for from := int64(0); from < end; {
		res, err := l.Read(ctx, "bench", 0, from, ReadOptions{MaxBytes: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		if res.NextOffset <= from {
			b.Fatalf("read made no progress at offset %d", from)
		}
		n += len(res.Records)
		from = res.NextOffset
	}
	return n
}

// BenchmarkReadTail reads the newest 20,000 records of a partition, as a
// consumer close behind its producers does, with the tail cache (the
// default) and without it (every read a pread into a fresh buffer, and a
// CRC check). One op is one pass.
func BenchmarkReadTail(b *testing.B) {
	const records = 20_000
	for _, cache := range []struct {
		name  string
		bytes int
	}{{"cache=on", 0}, {"cache=off", -1}} {
		l := benchLog(b, b.TempDir(), Options{FlushInterval: time.Hour, TailCacheBytes: cache.bytes})
		recs := benchValues(500, 1024)
		ctx := context.Background()
		for i := 0; i < records; i += len(recs) {
			if _, err := l.Append(ctx, "bench", 0, recs); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("size=1024B/records=%d/%s", records, cache.name), func(b *testing.B) {
			b.SetBytes(int64(records * 1024))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if n := readPartition(b, l); n != records {
					b.Fatalf("read %d records, want %d", n, records)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)*records/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkReadBatches reads a whole partition with ReadBatches of 1 MiB, as
// the Kafka listener's Fetch does, from batches appended raw (as the
// listener's Produce appends them, so the tail cache does not hold them):
// one op is one pass. Batches of ~1 MB are what franz-go and the Java
// client send at their default batch size; 100 KB ones put several in a
// read.
func BenchmarkReadBatches(b *testing.B) {
	const records = 100_000
	for _, perBatch := range []int{975, 100} {
		l := benchLog(b, b.TempDir(), Options{FlushInterval: time.Hour})
		recs := benchValues(perBatch, 1024)
		ctx := context.Background()
		for i := 0; i < records; i += perBatch {
			raw := encodeBatch(recs, time.Now(), "none", noProducer)
			if _, err := l.AppendRaw(ctx, "bench", 0, raw); err != nil {
				b.Fatal(err)
			}
		}
		_, end, err := l.Offsets("bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("size=1024B/batch=%d/records=%d", perBatch, end), func(b *testing.B) {
			b.SetBytes(end * 1024)
			b.ReportAllocs()
			for b.Loop() {
				for from := int64(0); from < end; {
					res, err := l.ReadBatches(ctx, "bench", 0, from, ReadOptions{MaxBytes: 1 << 20})
					if err != nil {
						b.Fatal(err)
					}
					if res.NextOffset <= from {
						b.Fatalf("read made no progress at offset %d", from)
					}
					from = res.NextOffset
					res.Release() // as the Kafka listener does once the answer is written
				}
			}
			b.ReportMetric(float64(b.N)*float64(end)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkEncodeBatch encodes 1000 records of 1 KiB into one batch, as
// Append and ProduceAsync do for every call (the engine's path).
func BenchmarkEncodeBatch(b *testing.B) {
	recs := benchValues(1000, 1024)
	for i := range recs {
		recs[i].Key = fmt.Appendf(nil, "key-%d", i)
	}
	now := time.Now()
	b.SetBytes(1000 * 1024)
	b.ReportAllocs()
	for b.Loop() {
		encodeBatch(recs, now, "none", noProducer)
	}
}

// BenchmarkDecodeRecords decodes a batch of 1000 records of 1 KiB, as a
// read does for every batch it returns (the embedded consumer's path).
func BenchmarkDecodeRecords(b *testing.B) {
	recs := benchValues(1000, 1024)
	for i := range recs {
		recs[i].Key = fmt.Appendf(nil, "key-%d", i)
	}
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(encodeBatch(recs, time.Now(), "none", noProducer)); err != nil {
		b.Fatal(err)
	}
	dst := make([]Record, 0, len(recs))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = decodeRecords(dst[:0], &kb, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
}
