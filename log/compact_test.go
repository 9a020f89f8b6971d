package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// testClock is a settable Options.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock { return &testClock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openCompactLog opens a log whose background cleaner and retention stay
// out of the way, so that tests drive compaction themselves.
func openCompactLog(t *testing.T, dir string, clock *testClock, opts ...func(*Options)) *Log {
	t.Helper()
	return openTestLog(t, dir, append([]func(*Options){func(o *Options) {
		o.Now = clock.now
		o.CleanerInterval = time.Hour
		o.RetentionCheckInterval = time.Hour
	}}, opts...)...)
}

// flushEvery makes appends return before their fsync, so that tests with
// many appends do not depend on how busy the disk is.
func flushEvery(o *Options) { o.FlushInterval = time.Millisecond }

func testPartition(t *testing.T, l *Log, topic string, id int32) *partition {
	t.Helper()
	p, err := l.partition(topic, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rollNow seals the active segment and waits until it is durable, so that
// everything appended so far is cleanable.
func rollNow(t *testing.T, p *partition) {
	t.Helper()
	p.mu.Lock()
	if p.segments[len(p.segments)-1].size > 0 {
		if err := p.rollLocked(p.l.now()); err != nil {
			p.mu.Unlock()
			t.Fatal(err)
		}
	}
	end := p.next
	p.mu.Unlock()
	if _, err := p.waitDurable(t.Context(), end); err != nil {
		t.Fatal(err)
	}
}

func compactNow(t *testing.T, p *partition, force bool) cleanStats {
	t.Helper()
	st, err := p.compact(t.Context(), p.l.now(), force)
	if err != nil {
		t.Fatalf("compact %s: %v", p, err)
	}
	return st
}

// put appends one record; a nil value is a tombstone.
func put(t *testing.T, l *Log, topic, key string, value []byte) int64 {
	t.Helper()
	off, err := l.Append(t.Context(), topic, 0, []Record{{Key: []byte(key), Value: value}})
	if err != nil {
		t.Fatalf("append %s=%q: %v", key, value, err)
	}
	return off
}

// kv renders records as "offset:key=value" ("key=<nil>" for tombstones).
func kv(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		v := "<nil>"
		if r.Value != nil {
			v = string(r.Value)
		}
		out[i] = fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, v)
	}
	return out
}

func wantRecords(t *testing.T, what string, got []Record, want []string) {
	t.Helper()
	if g := kv(got); !slices.Equal(g, want) {
		t.Fatalf("%s:\n got  %v\n want %v", what, g, want)
	}
}

// allBatches returns every stored batch of a partition, from the log start.
func allBatches(t *testing.T, p *partition) []rawBatch {
	t.Helper()
	start, end := p.bounds()
	var out []rawBatch
	for off := start; off < end; {
		bs, _, err := p.readBatches(off, 1<<20, nil)
		if err != nil {
			t.Fatalf("readBatches(%d): %v", off, err)
		}
		if len(bs) == 0 {
			break
		}
		out = append(out, bs...)
		off = bs[len(bs)-1].meta.LastOffset + 1
	}
	return out
}

// checkGapReads starts a reader at every step-th offset of [start, end)
// (and the last) and checks
// that the first record it gets is the first of want at or after that
// offset. Reads are one batch at a time, so a read may return a batch whose
// surviving records all lie below the offset; the reader then goes on from
// NextOffset, as consumers do.
func checkGapReads(t *testing.T, l *Log, topic string, want []Record, step int64) {
	t.Helper()
	start, end, err := l.Offsets(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int64
	for off := start; off < end; off += step {
		offsets = append(offsets, off)
	}
	if end > start && offsets[len(offsets)-1] != end-1 {
		offsets = append(offsets, end-1)
	}
	for _, off := range offsets {
		i, _ := slices.BinarySearchFunc(want, off, func(r Record, o int64) int { return int(r.Offset - o) })
		var first []Record
		for from := off; from < end && len(first) == 0; {
			res, err := l.Read(t.Context(), topic, 0, from, ReadOptions{MaxBytes: 1})
			if err != nil {
				t.Fatalf("read at %d: %v", from, err)
			}
			first = res.Records
			if res.NextOffset <= from {
				t.Fatalf("read at %d made no progress", from)
			}
			from = res.NextOffset
		}
		if i == len(want) {
			if len(first) != 0 {
				t.Fatalf("reader from %d: got offset %d, want nothing", off, first[0].Offset)
			}
			continue
		}
		if len(first) == 0 || first[0].Offset != want[i].Offset || !bytes.Equal(first[0].Value, want[i].Value) {
			t.Fatalf("reader from %d: got %v first, want %v", off, kv(first[:min(1, len(first))]), kv(want[i:i+1]))
		}
	}
}

func TestCompact_LatestValuePerKeySurvives(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			dir := t.TempDir()
			clock := newTestClock()
			l := openCompactLog(t, dir, clock, flushEvery)
			defer func() { l.Close() }()
			if err := l.CreateTopic("t", 1, map[string]string{
				ConfigCleanupPolicy: "compact", ConfigSegmentBytes: "3000", ConfigCompressionType: codec,
			}); err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			base := clock.now()
			latest := map[string]Record{}
			record := func(off int64, key string) Record {
				return Record{
					Key: []byte(key), Value: []byte(fmt.Sprintf("value-%d", off)),
					Headers:   []Header{{Key: "off", Value: []byte(fmt.Sprint(off))}},
					Timestamp: base.Add(time.Duration(off) * time.Millisecond),
				}
			}
			// An idempotent producer's batch: p5..p9 survive, p0..p4 are
			// overwritten below.
			pid, epoch, err := l.InitProducerID()
			if err != nil {
				t.Fatal(err)
			}
			var recs []Record
			for j := 0; j < 10; j++ {
				recs = append(recs, record(int64(j), fmt.Sprint("p", j)))
			}
			prod := ProducerInfo{ID: pid, Epoch: epoch, Sequence: 0}
			if _, err := l.AppendIdempotent(ctx, "t", 0, recs, prod); err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				r.Offset = int64(len(latest))
				latest[string(r.Key)] = r
			}
			next := int64(10)
			for i := 0; i < 30; i++ {
				recs = recs[:0]
				for j := 0; j < 10; j++ {
					key := fmt.Sprint("k", (i*7+j*3)%25)
					if i == 29 && j < 5 {
						key = fmt.Sprint("p", j)
					}
					recs = append(recs, record(next+int64(j), key))
				}
				if _, err := l.Append(ctx, "t", 0, recs); err != nil {
					t.Fatal(err)
				}
				for j, r := range recs {
					r.Offset = next + int64(j)
					latest[string(r.Key)] = r
				}
				next += 10
			}
			var want []Record
			for _, r := range latest {
				want = append(want, r)
			}
			slices.SortFunc(want, func(a, b Record) int { return int(a.Offset - b.Offset) })

			p := testPartition(t, l, "t", 0)
			rollNow(t, p)
			before := allBatches(t, p)
			st := compactNow(t, p, false) // everything is dirty: ratio 1
			if !st.ran || st.segments == 0 || st.recordsBefore != next || st.recordsAfter != int64(len(want)) {
				t.Fatalf("stats %+v, want a pass over %d records leaving %d", st, next, len(want))
			}
			if st.bytesAfter >= st.bytesBefore {
				t.Fatalf("bytes %d -> %d: nothing shrank", st.bytesBefore, st.bytesAfter)
			}
			if got := l.Metrics().SegmentsCleaned.Load(); got != int64(st.segments) {
				t.Fatalf("SegmentsCleaned = %d, want %d", got, st.segments)
			}

			check := func(when string) {
				t.Helper()
				got := readAll(t, l, "t", 0, 0)
				wantRecords(t, when, got, kv(want))
				for i, r := range got {
					w := want[i]
					if !r.Timestamp.Equal(w.Timestamp) || len(r.Headers) != 1 || string(r.Headers[0].Value) != fmt.Sprint(w.Offset) {
						t.Fatalf("%s: record %d: timestamp %v headers %v, want %v and off=%d", when, r.Offset, r.Timestamp, r.Headers, w.Timestamp, w.Offset)
					}
				}
				step := int64(1)
				if codec != "none" {
					step = 11 // decompressing costs much under -race
				}
				checkGapReads(t, l, "t", want, step)
			}
			check("after compaction")

			// Every batch left is one of the originals with the same base
			// offset, last offset, producer fields and codec.
			orig := map[int64]batchMeta{}
			for _, b := range before {
				orig[b.meta.BaseOffset] = b.meta
			}
			after := allBatches(t, p)
			if len(after) >= len(before) {
				t.Fatalf("%d batches before, %d after", len(before), len(after))
			}
			for _, b := range after {
				o, ok := orig[b.meta.BaseOffset]
				if !ok {
					t.Fatalf("batch at %d is not an original batch", b.meta.BaseOffset)
				}
				if b.meta.LastOffset != o.LastOffset || b.meta.Producer != o.Producer ||
					b.meta.Attributes&attrCompressionMask != o.Attributes&attrCompressionMask {
					t.Fatalf("batch at %d: %+v, original %+v", b.meta.BaseOffset, b.meta, o)
				}
				if codec != "none" && kgo.CompressionCodecType(b.meta.Attributes&attrCompressionMask) == kgo.CodecNone {
					t.Fatalf("batch at %d lost its %s compression", b.meta.BaseOffset, codec)
				}
			}
			if after[0].meta.BaseOffset != 0 || after[0].meta.Producer != prod || after[0].meta.NumRecords != 5 {
				t.Fatalf("producer batch after cleaning: %+v", after[0].meta)
			}

			cp, _, err := readCleanerCheckpoint(p.dir)
			if err != nil || cp != next {
				t.Fatalf("checkpoint = %d, %v; want %d", cp, err, next)
			}
			if st := compactNow(t, p, false); st.ran {
				t.Fatalf("a clean log was cleaned again: %+v", st)
			}

			// The result survives Close and Open, indexes included.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openCompactLog(t, dir, clock, flushEvery)
			check("after reopen")
			if _, err := l.AppendIdempotent(ctx, "t", 0, []Record{record(next, "p9")}, ProducerInfo{ID: pid, Epoch: epoch, Sequence: 10}); err != nil {
				t.Fatalf("producer continues after compaction and reopen: %v", err)
			}

			// The active segment is never touched.
			p = testPartition(t, l, "t", 0)
			put(t, l, "t", "k1", []byte("x"))
			put(t, l, "t", "k1", []byte("y"))
			compactNow(t, p, true)
			got := readAll(t, l, "t", 0, next)
			wantRecords(t, "active segment", got, []string{fmt.Sprintf("%d:p9=value-%d", next, next), fmt.Sprintf("%d:k1=x", next+1), fmt.Sprintf("%d:k1=y", next+2)})
		})
	}
}

func TestCompact_Tombstones(t *testing.T) {
	clock := newTestClock()
	l := openCompactLog(t, t.TempDir(), clock)
	defer l.Close()
	if err := l.CreateTopic("t", 1, map[string]string{ConfigCleanupPolicy: "compact", ConfigDeleteRetentionMs: "60000"}); err != nil {
		t.Fatal(err)
	}
	put(t, l, "t", "a", []byte("1"))
	put(t, l, "t", "b", []byte("1"))
	put(t, l, "t", "c", []byte("1"))
	put(t, l, "t", "a", nil)
	put(t, l, "t", "c", []byte("")) // empty, not a tombstone
	p := testPartition(t, l, "t", 0)
	rollNow(t, p)

	clock.advance(time.Second)
	st := compactNow(t, p, true)
	if st.superseded != 2 || st.tombstones != 0 {
		t.Fatalf("stats %+v, want 2 superseded, no tombstone removed", st)
	}
	wantRecords(t, "first pass", readAll(t, l, "t", 0, 0), []string{"1:b=1", "3:a=<nil>", "4:c="})

	clock.advance(59 * time.Second) // exactly delete.retention.ms old: stays
	compactNow(t, p, true)
	wantRecords(t, "at delete.retention.ms", readAll(t, l, "t", 0, 0), []string{"1:b=1", "3:a=<nil>", "4:c="})

	// A tombstone in the active segment stays whatever its age.
	put(t, l, "t", "b", nil)
	clock.advance(2 * time.Second)
	st = compactNow(t, p, true)
	if st.tombstones != 1 {
		t.Fatalf("stats %+v, want 1 tombstone removed", st)
	}
	wantRecords(t, "after delete.retention.ms", readAll(t, l, "t", 0, 0), []string{"1:b=1", "4:c=", "5:b=<nil>"})
	checkGapReads(t, l, "t", readAll(t, l, "t", 0, 0), 1)

	rollNow(t, p)
	compactNow(t, p, true) // b's tombstone supersedes b=1 and is young
	wantRecords(t, "new tombstone", readAll(t, l, "t", 0, 0), []string{"4:c=", "5:b=<nil>"})
	clock.advance(61 * time.Second)
	compactNow(t, p, true)
	wantRecords(t, "new tombstone expired", readAll(t, l, "t", 0, 0), []string{"4:c="})
	if start, end, _ := l.Offsets("t", 0); start != 0 || end != 6 {
		t.Fatalf("offsets [%d, %d), want [0, 6)", start, end)
	}
}

func TestCompact_DirtyRatio(t *testing.T) {
	clock := newTestClock()
	l := openCompactLog(t, t.TempDir(), clock)
	defer l.Close()
	if err := l.CreateTopic("t", 1, map[string]string{ConfigCleanupPolicy: "compact", ConfigMinCleanableRatio: "0.5"}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, "t", 0)
	appendKeys := func(from, to int, round string) {
		var recs []Record
		for i := from; i < to; i++ {
			recs = append(recs, Record{Key: []byte(fmt.Sprint("k", i)), Value: []byte(round)})
		}
		if _, err := l.Append(t.Context(), "t", 0, recs); err != nil {
			t.Fatal(err)
		}
		rollNow(t, p)
	}
	appendKeys(0, 100, "a")
	appendKeys(0, 100, "b")
	if st := compactNow(t, p, false); !st.ran || st.dirtyRatio != 1 || st.recordsAfter != 100 {
		t.Fatalf("first pass %+v, want a run over a dirty log", st)
	}
	appendKeys(0, 10, "c") // about 10% dirty
	if st := compactNow(t, p, false); st.ran || st.dirtyRatio <= 0 || st.dirtyRatio >= 0.5 {
		t.Fatalf("second pass %+v, want no run below the ratio", st)
	}
	l.Compact(t.Context()) // the public pass keeps to the ratio too
	if got := len(readAll(t, l, "t", 0, 0)); got != 110 {
		t.Fatalf("%d records after Compact below the ratio, want 110", got)
	}
	appendKeys(10, 100, "c") // now mostly dirty
	cleaned := l.Metrics().SegmentsCleaned.Load()
	l.Compact(t.Context())
	if l.Metrics().SegmentsCleaned.Load() == cleaned {
		t.Fatal("Compact did not clean a dirty log")
	}
	got := readAll(t, l, "t", 0, 0)
	if len(got) != 100 {
		t.Fatalf("%d records, want 100", len(got))
	}
	for i, r := range got {
		if string(r.Value) != "c" || r.Offset != int64(200+i) {
			t.Fatalf("record %d: %v", i, kv(got[i:i+1]))
		}
	}
	// A broken checkpoint only makes everything dirty again.
	if err := os.WriteFile(filepath.Join(p.dir, cleanerCheckpointFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st := compactNow(t, p, false); !st.ran || st.dirtyRatio != 1 || st.recordsAfter != 100 {
		t.Fatalf("pass after a broken checkpoint: %+v", st)
	}
}

func TestCompact_EmptySegments(t *testing.T) {
	for _, policy := range []string{"compact", "compact,delete"} {
		t.Run(policy, func(t *testing.T) {
			dir := t.TempDir()
			clock := newTestClock()
			l := openCompactLog(t, dir, clock)
			defer func() { l.Close() }()
			if err := l.CreateTopic("t", 1, map[string]string{ConfigCleanupPolicy: policy}); err != nil {
				t.Fatal(err)
			}
			p := testPartition(t, l, "t", 0)
			put(t, l, "t", "a", []byte("1")) // segment 0
			put(t, l, "t", "b", []byte("1"))
			rollNow(t, p)
			put(t, l, "t", "a", []byte("2")) // segment 2
			put(t, l, "t", "b", []byte("2"))
			rollNow(t, p)
			put(t, l, "t", "c", []byte("1")) // segment 4
			rollNow(t, p)
			compactNow(t, p, true)

			wantStart := int64(0)
			wantSegs := 4 // the first one kept, empty
			if policy == "compact,delete" {
				wantStart, wantSegs = 2, 3
			}
			start, _, _ := l.Offsets("t", 0)
			if start != wantStart || len(p.segments) != wantSegs {
				t.Fatalf("log start %d with %d segments, want %d with %d", start, len(p.segments), wantStart, wantSegs)
			}
			want := []string{"2:a=2", "3:b=2", "4:c=1"}
			wantRecords(t, "first pass", readAll(t, l, "t", 0, start), want)

			put(t, l, "t", "a", []byte("3"))
			put(t, l, "t", "b", []byte("3"))
			rollNow(t, p)
			// Segment 2 is left empty: it goes (with compact only, as a
			// middle segment; with compact,delete, as the first one).
			compactNow(t, p, true)
			if _, err := os.Stat(filepath.Join(p.dir, segmentName(2, ".log"))); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("emptied segment 2 still there: %v", err)
			}
			if policy == "compact,delete" {
				wantStart = 4
			}
			want = []string{"4:c=1", "5:a=3", "6:b=3"}
			wantRecords(t, "second pass", readAll(t, l, "t", 0, wantStart), want)
			all := readAll(t, l, "t", 0, wantStart)
			checkGapReads(t, l, "t", all, 1)
			if start, _, _ := l.Offsets("t", 0); start != wantStart {
				t.Fatalf("log start %d after the second pass, want %d", start, wantStart)
			}
			if policy == "compact,delete" {
				if _, err := l.Read(t.Context(), "t", 0, 0, ReadOptions{}); !errors.Is(err, ErrOffsetOutOfRange) {
					t.Fatalf("read below the log start: %v", err)
				}
			}

			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openCompactLog(t, dir, clock)
			if start, _, _ := l.Offsets("t", 0); start != wantStart {
				t.Fatalf("log start %d after reopen, want %d", start, wantStart)
			}
			wantRecords(t, "after reopen", readAll(t, l, "t", 0, wantStart), want)
			checkGapReads(t, l, "t", all, 1)

			if policy == "compact" {
				// Once retention applies too, the empty first segment goes.
				if err := l.AlterTopicConfig("t", map[string]string{ConfigCleanupPolicy: "compact,delete"}, nil); err != nil {
					t.Fatal(err)
				}
				compactNow(t, testPartition(t, l, "t", 0), true)
				if start, _, _ := l.Offsets("t", 0); start != 4 {
					t.Fatalf("log start %d after the policy became compact,delete, want 4", start)
				}
				wantRecords(t, "compact,delete", readAll(t, l, "t", 0, 4), want)
			}
		})
	}
}

func TestCompact_CompactDeleteAppliesBoth(t *testing.T) {
	clock := newTestClock()
	l := openCompactLog(t, t.TempDir(), clock)
	defer l.Close()
	if err := l.CreateTopic("t", 1, map[string]string{ConfigCleanupPolicy: "compact,delete", ConfigRetentionMs: "3600000"}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, "t", 0)
	for i := 0; i < 10; i++ {
		put(t, l, "t", fmt.Sprint("k", i), []byte("old"))
	}
	rollNow(t, p)
	clock.advance(30 * time.Minute)
	for i := 0; i < 5; i++ {
		put(t, l, "t", fmt.Sprint("k", i), []byte("new"))
	}
	rollNow(t, p)
	compactNow(t, p, false)
	want := []string{"5:k5=old", "6:k6=old", "7:k7=old", "8:k8=old", "9:k9=old",
		"10:k0=new", "11:k1=new", "12:k2=new", "13:k3=new", "14:k4=new"}
	wantRecords(t, "compacted", readAll(t, l, "t", 0, 0), want)

	clock.advance(31 * time.Minute) // the first segment is past retention.ms
	l.EnforceRetention()
	start, _, _ := l.Offsets("t", 0)
	if start != 10 {
		t.Fatalf("log start %d after retention, want 10", start)
	}
	wantRecords(t, "after retention", readAll(t, l, "t", 0, start), want[5:])
}

func TestCompact_KeylessRecordsGo(t *testing.T) {
	clock := newTestClock()
	l := openCompactLog(t, t.TempDir(), clock)
	defer l.Close()
	if err := l.CreateTopic("t", 1, nil); err != nil { // delete: keys optional
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), "t", 0, []Record{{Value: []byte("x")}, {Key: []byte("k"), Value: []byte("1")}, {Value: []byte("y")}}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, "t", 0)
	rollNow(t, p)
	if err := l.AlterTopicConfig("t", map[string]string{ConfigCleanupPolicy: "compact"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), "t", 0, []Record{{Value: []byte("z")}}); !errors.Is(err, ErrCompactedTopicNilKey) {
		t.Fatalf("keyless append to a compacted topic: %v", err)
	}
	if st := compactNow(t, p, false); st.keyless != 2 {
		t.Fatalf("stats %+v, want 2 keyless records removed", st)
	}
	wantRecords(t, "keyless gone", readAll(t, l, "t", 0, 0), []string{"1:k=1"})
}

func TestCompact_ConcurrentAppendsAndReads(t *testing.T) {
	const (
		perBatch   = 10
		keys       = 37
		readers    = 2
		minPasses  = 10   // passes that cleaned something while appends went on
		minRecords = 1000 // appended at least
		perPass    = 40   // batches (about two segments) appended per pass that cleaned
	)
	clock := newTestClock()
	l := openCompactLog(t, t.TempDir(), clock, flushEvery)
	defer l.Close()
	if err := l.CreateTopic("t", 1, map[string]string{ConfigCleanupPolicy: "compact", ConfigSegmentBytes: "4096"}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, "t", 0)
	keyOf := func(off int64) string { return fmt.Sprint("k", off%keys) }
	valueOf := func(off int64) string { return fmt.Sprint("v", off) }

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
		cancel()
	}
	var passes, cleaningPasses atomic.Int64
	appended := make(chan struct{})
	var end int64
	wg.Add(1)
	go func() { // the appender: offset i holds key k(i%keys), value v<i>
		defer wg.Done()
		defer close(appended)
		for ; end < minRecords || cleaningPasses.Load() < minPasses; end += perBatch {
			// Keep pace with the cleaner, whatever the disk's speed, so
			// that passes keep finding new segments to clean.
			waitFor(ctx, func() bool { return end/perBatch <= (cleaningPasses.Load()+1)*perPass })
			recs := make([]Record, perBatch)
			for j := range recs {
				recs[j] = Record{Key: []byte(keyOf(end + int64(j))), Value: []byte(valueOf(end + int64(j)))}
			}
			base, err := l.Append(ctx, "t", 0, recs)
			if err != nil {
				fail(fmt.Errorf("append: %w", err))
				return
			}
			if base != end {
				fail(fmt.Errorf("append got base %d, want %d", base, end))
				return
			}
		}
	}()
	for range readers {
		wg.Add(1)
		go func() { // readers: offsets rise, every record is the one appended there
			defer wg.Done()
			for ctx.Err() == nil {
				last, from := int64(-1), int64(0)
				for ctx.Err() == nil {
					res, err := l.Read(ctx, "t", 0, from, ReadOptions{MaxBytes: 1500})
					if err != nil {
						if ctx.Err() == nil {
							fail(fmt.Errorf("read at %d: %w", from, err))
						}
						return
					}
					for _, r := range res.Records {
						if r.Offset <= last || r.Offset < from {
							fail(fmt.Errorf("read at %d: offset %d after %d", from, r.Offset, last))
							return
						}
						if string(r.Key) != keyOf(r.Offset) || string(r.Value) != valueOf(r.Offset) {
							fail(fmt.Errorf("offset %d holds %s=%s", r.Offset, r.Key, r.Value))
							return
						}
						last = r.Offset
					}
					if res.NextOffset >= res.HighWatermark {
						break
					}
					from = res.NextOffset
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // the cleaner, as often as it can
		defer wg.Done()
		for {
			select {
			case <-appended:
				return
			default:
			}
			st, err := p.compact(ctx, clock.now(), true)
			if err != nil {
				if ctx.Err() == nil {
					fail(fmt.Errorf("compact: %w", err))
				}
				return
			}
			passes.Add(1)
			if st.segments > 0 {
				cleaningPasses.Add(1)
			} else {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	<-appended
	time.Sleep(20 * time.Millisecond) // let the readers finish a scan of the end
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d records appended during %d passes, %d of which cleaned", end, passes.Load(), cleaningPasses.Load())

	rollNow(t, p)
	compactNow(t, p, true)
	got := readAll(t, l, "t", 0, 0)
	if len(got) != keys {
		t.Fatalf("%d records after the last pass, want %d", len(got), keys)
	}
	for i, r := range got {
		if want := end - keys + int64(i); r.Offset != want || string(r.Value) != valueOf(want) {
			t.Fatalf("record %d: %v, want offset %d", i, kv(got[i:i+1]), want)
		}
	}
}

func TestCompact_OnlyDurableSegments(t *testing.T) {
	clock := newTestClock()
	l := openCompactLog(t, t.TempDir(), clock, func(o *Options) { o.FlushInterval = time.Hour })
	defer l.Close()
	if err := l.CreateTopic("t", 1, map[string]string{ConfigCleanupPolicy: "compact"}); err != nil {
		t.Fatal(err)
	}
	put(t, l, "t", "k", []byte("1"))
	put(t, l, "t", "k", []byte("2"))
	p := testPartition(t, l, "t", 0)
	p.mu.Lock()
	if err := p.rollLocked(clock.now()); err != nil {
		t.Fatal(err)
	}
	end := p.next
	p.mu.Unlock()
	if st := compactNow(t, p, true); st.ran {
		t.Fatalf("cleaned a segment above the durable end: %+v", st)
	}
	if _, err := p.waitDurable(t.Context(), end); err != nil {
		t.Fatal(err)
	}
	if st := compactNow(t, p, true); st.segments != 1 {
		t.Fatalf("durable sealed segment not cleaned: %+v", st)
	}
	wantRecords(t, "compacted", readAll(t, l, "t", 0, 0), []string{"1:k=2"})
}

// waitFor polls cond for up to 100ms: long enough to let a cleaning pass
// finish most of the time, short enough that a test never stalls on it.
func waitFor(ctx context.Context, cond func() bool) {
	deadline := time.Now().Add(100 * time.Millisecond)
	for ctx.Err() == nil && !cond() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// leftovers lists the *.cleaned files of a partition directory.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+cleanedSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCompact_CrashBeforeSwapLosesNothing(t *testing.T) {
	dir := t.TempDir()
	clock := newTestClock()
	l := openCompactLog(t, dir, clock)
	if err := l.CreateTopic("t", 1, map[string]string{ConfigCleanupPolicy: "compact"}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, "t", 0)
	for i := 0; i < 40; i++ {
		put(t, l, "t", fmt.Sprint("k", i%4), []byte(fmt.Sprint(i)))
	}
	rollNow(t, p)
	all := kv(readAll(t, l, "t", 0, 0))

	// A pass that wrote its cleaned copy and removed the old indexes, then
	// "crashed" before the rename.
	w := p.cleanerView()
	rules := &cleanRules{latest: map[string]int64{}, nowMs: clock.now().UnixMilli(), deleteRetentionMs: 1 << 40}
	if err := rules.mapKeys(t.Context(), w.segs[0], w.sizes[0], w.ends[0]); err != nil {
		t.Fatal(err)
	}
	ns, _, err := writeCleaned(t.Context(), w.segs[0], w.sizes[0], w.ends[0], rules)
	if err != nil {
		t.Fatal(err)
	}
	ns.close()
	w.release()
	for _, ext := range []string{".index", ".timeindex"} {
		if err := os.Remove(p.segments[0].path(ext)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(leftovers(t, p.dir)) != 3 {
		t.Fatalf("leftovers before reopen: %v", leftovers(t, p.dir))
	}

	l = openCompactLog(t, dir, clock)
	defer l.Close()
	p = testPartition(t, l, "t", 0)
	if got := leftovers(t, p.dir); len(got) != 0 {
		t.Fatalf("leftovers after reopen: %v", got)
	}
	wantRecords(t, "after the interrupted pass", readAll(t, l, "t", 0, 0), all)
	for _, ext := range []string{".index", ".timeindex"} {
		if _, err := os.Stat(p.segments[0].path(ext)); err != nil {
			t.Fatalf("index not rebuilt: %v", err)
		}
	}
	compactNow(t, p, false)
	wantRecords(t, "after a full pass", readAll(t, l, "t", 0, 0), []string{"36:k0=36", "37:k1=37", "38:k2=38", "39:k3=39"})
}

func TestCompact_CrashBeforeIndexRenameLosesNothing(t *testing.T) {
	dir := t.TempDir()
	clock := newTestClock()
	l := openCompactLog(t, dir, clock)
	if err := l.CreateTopic("t", 1, map[string]string{ConfigCleanupPolicy: "compact", ConfigSegmentBytes: "1000"}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, "t", 0)
	for i := 0; i < 200; i++ {
		put(t, l, "t", fmt.Sprint("k", i%40), []byte(strings.Repeat("x", i)))
	}
	rollNow(t, p)
	compactNow(t, p, true)
	want := readAll(t, l, "t", 0, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// The cleaned .log files are in place but their indexes still carry the
	// .cleaned suffix, as after a crash between the two renames.
	idx, err := filepath.Glob(filepath.Join(p.dir, "*.index"))
	if err != nil || len(idx) < 3 {
		t.Fatalf("indexes: %v %v", idx, err)
	}
	for _, f := range idx {
		if err := os.Rename(f, f+cleanedSuffix); err != nil {
			t.Fatal(err)
		}
		tf := strings.TrimSuffix(f, ".index") + ".timeindex"
		if err := os.Rename(tf, tf+cleanedSuffix); err != nil {
			t.Fatal(err)
		}
	}

	l = openCompactLog(t, dir, clock)
	defer l.Close()
	p = testPartition(t, l, "t", 0)
	if got := leftovers(t, p.dir); len(got) != 0 {
		t.Fatalf("leftovers after reopen: %v", got)
	}
	wantRecords(t, "after reopen", readAll(t, l, "t", 0, 0), kv(want))
	checkGapReads(t, l, "t", want, 1)
}

func TestCompact_Background(t *testing.T) {
	clock := newTestClock()
	l := openTestLog(t, t.TempDir(), func(o *Options) {
		o.Now = clock.now
		o.CleanerInterval = 10 * time.Millisecond
		o.RetentionCheckInterval = time.Hour
	})
	defer l.Close()
	if err := l.CreateTopic("c", 1, map[string]string{ConfigCleanupPolicy: "compact"}); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic("d", 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"c", "d"} {
		for i := 0; i < 10; i++ {
			put(t, l, topic, "k", []byte(fmt.Sprint(i)))
		}
		rollNow(t, testPartition(t, l, topic, 0))
	}
	deadline := time.Now().Add(5 * time.Second)
	for l.Metrics().SegmentsCleaned.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the background cleaner did not run")
		}
		time.Sleep(5 * time.Millisecond)
	}
	wantRecords(t, "compacted topic", readAll(t, l, "c", 0, 0), []string{"9:k=9"})
	if got := len(readAll(t, l, "d", 0, 0)); got != 10 {
		t.Fatalf("delete-only topic has %d records, want all 10", got)
	}
}

func TestCompact_ConcurrentRetention(t *testing.T) {
	const tick = 100 * time.Millisecond // of the clock, per append
	clock := newTestClock()
	l := openCompactLog(t, t.TempDir(), clock, flushEvery)
	defer l.Close()
	if err := l.CreateTopic("t", 1, map[string]string{
		ConfigCleanupPolicy: "compact,delete", ConfigSegmentBytes: "500", ConfigRetentionMs: "5000",
	}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, "t", 0)
	// Most keys are overwritten soon; every tenth record has a key of its
	// own, which only retention removes.
	keyOf := func(off int64) string {
		if off%10 == 0 {
			return fmt.Sprint("u", off)
		}
		return fmt.Sprint("k", off%13)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
		cancel()
	}
	var passes, cleaningPasses, deleted atomic.Int64
	wg.Add(2)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			st, err := p.compact(ctx, clock.now(), true)
			if err != nil && ctx.Err() == nil {
				fail(fmt.Errorf("compact: %w", err))
			}
			passes.Add(1)
			if st.segments > 0 {
				cleaningPasses.Add(1)
			} else {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			n, err := p.enforceRetention(clock.now())
			if err != nil {
				fail(fmt.Errorf("retention: %w", err))
			}
			deleted.Add(int64(n))
			time.Sleep(time.Millisecond)
		}
	}()
	var end int64
	for ; ctx.Err() == nil && (end < 200 || cleaningPasses.Load() < 5 || deleted.Load() < 5); end++ {
		waitFor(ctx, func() bool { return end <= (cleaningPasses.Load()+1)*20 })
		clock.advance(tick)
		if _, err := l.Append(ctx, "t", 0, []Record{{Key: []byte(keyOf(end)), Value: []byte(fmt.Sprint("v", end))}}); err != nil {
			fail(err)
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d appends, %d passes (%d cleaned), %d segments deleted by retention", end, passes.Load(), cleaningPasses.Load(), deleted.Load())
	start, hw := p.bounds()
	for _, r := range readAll(t, l, "t", 0, start) {
		if string(r.Key) != keyOf(r.Offset) || string(r.Value) != fmt.Sprint("v", r.Offset) {
			t.Fatalf("offset %d holds %s=%s", r.Offset, r.Key, r.Value)
		}
	}
	if got := leftovers(t, p.dir); len(got) != 0 {
		t.Fatalf("leftovers: %v", got)
	}
	if start == 0 || hw != end {
		t.Fatalf("offsets [%d, %d), want retention to have moved the start and the end at %d", start, hw, end)
	}
}

func TestCompact_CorruptSegmentIsNotCleaned(t *testing.T) {
	// Each batch below is 76 bytes; batch 5 starts at byte 380.
	for name, pos := range map[string]int{"base offset": 380, "crc-covered byte": 380 + 40} {
		t.Run(name, func(t *testing.T) {
			clock := newTestClock()
			l := openCompactLog(t, t.TempDir(), clock)
			defer l.Close()
			if err := l.CreateTopic("t", 1, map[string]string{ConfigCleanupPolicy: "compact"}); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10; i++ {
				put(t, l, "t", "k", []byte(fmt.Sprint("value-", i)))
			}
			p := testPartition(t, l, "t", 0)
			rollNow(t, p)
			path := p.segments[0].path(".log")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) != 760 {
				t.Fatalf("segment of %d bytes, want 10 batches of 76", len(data))
			}
			data[pos] ^= 0xff
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = p.compact(t.Context(), clock.now(), true)
			if !IsCorruption(err) {
				t.Fatalf("compact over a damaged batch: %v, want a corruption error", err)
			}
			if got := leftovers(t, p.dir); len(got) != 0 {
				t.Fatalf("leftovers: %v", got)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatal("the damaged segment was rewritten")
			}
		})
	}
}

func TestCompact_ConsumerOffsetsTopic(t *testing.T) {
	dir := t.TempDir()
	clock := newTestClock()
	l := openCompactLog(t, dir, clock)
	defer func() { l.Close() }()
	g := l.Groups()
	for i := int64(1); i <= 20; i++ {
		commits := []OffsetCommit{{Topic: "t", Partition: 0, Offset: i}, {Topic: "t", Partition: 1, Offset: 100 + i}}
		if err := g.Commit(t.Context(), "g1", commits); err != nil {
			t.Fatal(err)
		}
		if err := g.Commit(t.Context(), "g2", commits[:1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Delete(t.Context(), "g2"); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, OffsetsTopic, 0)
	rollNow(t, p)
	if st := compactNow(t, p, false); !st.ran || st.recordsAfter != 3 {
		t.Fatalf("stats %+v, want g1's two offsets and g2's tombstone left", st)
	}
	clock.advance(25 * time.Hour) // past the default delete.retention.ms
	if st := compactNow(t, p, true); st.tombstones != 1 || st.recordsAfter != 2 {
		t.Fatalf("stats %+v, want g2's tombstone gone", st)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openCompactLog(t, dir, clock)
	g = l.Groups()
	if got := g.Committed("g1"); len(got) != 2 || got[0].Offset != 20 || got[1].Offset != 120 {
		t.Fatalf("g1 after compaction and reopen: %+v", got)
	}
	if got := g.List(); !slices.Equal(got, []string{"g1"}) {
		t.Fatalf("groups after compaction and reopen: %v", got)
	}
}

// A pass that stops while writing a cleaned copy (here: its context ends)
// leaves nothing behind and does not panic.
func TestCompact_WriteCleaned_ErrorLeavesNothing(t *testing.T) {
	clock := &testClock{t: time.Unix(1_700_000_000, 0)}
	l := openCompactLog(t, t.TempDir(), clock)
	defer l.Close()
	if err := l.CreateTopic("c", 1, map[string]string{ConfigCleanupPolicy: "compact"}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		put(t, l, "c", "k", []byte(fmt.Sprint(i)))
	}
	p := testPartition(t, l, "c", 0)
	rollNow(t, p)
	v, err := p.snapshot(0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.release()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ns, _, err := writeCleaned(ctx, v.segs[0], v.sizes[0], v.segs[1].base, &cleanRules{})
	if err == nil || ns != nil {
		t.Fatalf("writeCleaned with a cancelled context = %v, %v; want an error and no segment", ns, err)
	}
	if _, statErr := os.Stat(cleanedPath(v.segs[0], ".log")); !os.IsNotExist(statErr) {
		t.Fatalf("the cleaned copy was left behind: %v", statErr)
	}
}

// TestCompact_MinCompactionLag: with min.compaction.lag.ms, a segment
// holding a record younger than the lag is not cleaned, nor is any segment
// after it; once old enough, it is.
func TestCompact_MinCompactionLag(t *testing.T) {
	clock := newTestClock()
	l := openCompactLog(t, t.TempDir(), clock)
	defer l.Close()
	if err := l.CreateTopic("t", 1, map[string]string{ConfigCleanupPolicy: "compact", ConfigMinCompactionLag: "60000"}); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, "t", 0)
	put(t, l, "t", "a", []byte("1"))
	put(t, l, "t", "b", []byte("1"))
	put(t, l, "t", "a", []byte("2"))
	rollNow(t, p) // segment 1 at T0: a=1 superseded within it
	clock.advance(30 * time.Second)
	put(t, l, "t", "b", []byte("2"))
	rollNow(t, p) // segment 2 at T0+30s
	all := []string{"0:a=1", "1:b=1", "2:a=2", "3:b=2"}

	clock.advance(time.Second) // T0+31s: nothing is 60 s old
	if st := compactNow(t, p, true); st.superseded != 0 {
		t.Fatalf("stats %+v before the lag, want nothing removed", st)
	}
	wantRecords(t, "before the lag", readAll(t, l, "t", 0, 0), all)

	clock.advance(30 * time.Second) // T0+61s: segment 1 is old enough, segment 2 not
	if st := compactNow(t, p, true); st.superseded != 1 {
		t.Fatalf("stats %+v with segment 1 past the lag, want a=1 removed", st)
	}
	wantRecords(t, "segment 1 past the lag", readAll(t, l, "t", 0, 0), []string{"1:b=1", "2:a=2", "3:b=2"})

	clock.advance(30 * time.Second) // T0+91s: both
	compactNow(t, p, true)
	wantRecords(t, "both past the lag", readAll(t, l, "t", 0, 0), []string{"2:a=2", "3:b=2"})

	if err := ValidateConfig(map[string]string{ConfigMinCompactionLag: "-1"}); err == nil {
		t.Fatal("min.compaction.lag.ms=-1 accepted")
	}
}

// TestCompact_TombstoneKeptSinceTheCleanerFirstSawIt: a tombstone stays
// delete.retention.ms after the cleaner first saw it, not only after its
// own timestamp (as Kafka since KIP-534): one appended late with an old
// timestamp (a source catching up on yesterday's deletes) is not dropped
// by the first pass, before a consumer behind the head could read it. When
// it was first seen survives a reopen (the cleaner checkpoint's marks),
// and a version 0 checkpoint still reads.
func TestCompact_TombstoneKeptSinceTheCleanerFirstSawIt(t *testing.T) {
	dir := t.TempDir()
	clock := newTestClock()
	l := openCompactLog(t, dir, clock)
	if err := l.CreateTopic("t", 1, map[string]string{ConfigCleanupPolicy: "compact", ConfigDeleteRetentionMs: "3600000"}); err != nil {
		t.Fatal(err)
	}
	old := clock.now().Add(-48 * time.Hour)
	for _, r := range []Record{{Key: []byte("a"), Value: []byte("1"), Timestamp: old}, {Key: []byte("a"), Timestamp: old}, {Key: []byte("b"), Value: []byte("1")}} {
		if _, err := l.Append(t.Context(), "t", 0, []Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	p := testPartition(t, l, "t", 0)
	rollNow(t, p)
	if st := compactNow(t, p, true); st.tombstones != 0 {
		t.Fatalf("first pass: %+v; the tombstone, 48 h old by its timestamp but never seen by the cleaner, must stay", st)
	}
	wantRecords(t, "first pass", readAll(t, l, "t", 0, 0), []string{"1:a=<nil>", "2:b=1"})

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	clock.advance(59 * time.Minute)
	l = openCompactLog(t, dir, clock)
	p = testPartition(t, l, "t", 0)
	compactNow(t, p, true)
	wantRecords(t, "59 minutes after the first pass", readAll(t, l, "t", 0, 0), []string{"1:a=<nil>", "2:b=1"})
	clock.advance(2 * time.Minute)
	if st := compactNow(t, p, true); st.tombstones != 1 {
		t.Fatalf("61 minutes after the first pass: %+v, want the tombstone removed", st)
	}
	wantRecords(t, "61 minutes after the first pass", readAll(t, l, "t", 0, 0), []string{"2:b=1"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A version 0 checkpoint (no marks): the log below it counts as first
	// seen by the next pass.
	pdir := partitionDir(dir, "t", 0)
	if err := os.WriteFile(filepath.Join(pdir, cleanerCheckpointFile), []byte("0\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	off, marks, err := readCleanerCheckpoint(pdir)
	if err != nil || off != 3 || len(marks) != 0 {
		t.Fatalf("version 0 checkpoint: %d, %v, %v", off, marks, err)
	}
}

func TestFirstSeenAndMarks(t *testing.T) {
	marks := []cleanMark{{end: 10, time: 100}, {end: 20, time: 200}}
	for _, tt := range []struct{ offset, want int64 }{{0, 100}, {9, 100}, {10, 200}, {19, 200}, {20, 999}} {
		if got := firstSeen(marks, tt.offset, 999); got != tt.want {
			t.Errorf("firstSeen(%d) = %d, want %d", tt.offset, got, tt.want)
		}
	}
	var ms []cleanMark
	for i := range int64(maxCleanMarks + 5) {
		ms = addMark(ms, cleanMark{end: 10 * (i + 1), time: i}, 0)
	}
	if len(ms) != maxCleanMarks || ms[0].end != 60 || ms[len(ms)-1].end != 10*(maxCleanMarks+5) {
		t.Fatalf("addMark kept %d marks from %+v to %+v", len(ms), ms[0], ms[len(ms)-1])
	}
	if ms = addMark(ms, cleanMark{end: 1000, time: 9}, 300); ms[0].end != 310 {
		t.Fatalf("addMark kept a mark at or below the log start: %+v", ms[0])
	}
}
