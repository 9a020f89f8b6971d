package log

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock for Options.Now that tests move by hand.
type fakeClock struct{ ms atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.ms.Store(t.UnixMilli())
	return c
}

func (c *fakeClock) now() time.Time         { return time.UnixMilli(c.ms.Load()) }
func (c *fakeClock) add(d time.Duration)    { c.ms.Add(d.Milliseconds()) }
func (c *fakeClock) set(t time.Time)        { c.ms.Store(t.UnixMilli()) }
func withClock(c *fakeClock) func(*Options) { return func(o *Options) { o.Now = c.now } }

// segmentFiles returns the sizes of a partition's .log files by base offset.
func segmentFiles(t *testing.T, dir, topic string, part int32) (bases []int64, sizes []int64) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(partitionDir(dir, topic, part), "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	for _, n := range names {
		fi, err := os.Stat(n)
		if err != nil {
			t.Fatal(err)
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(n), ".log"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		bases, sizes = append(bases, base), append(sizes, fi.Size())
	}
	return bases, sizes
}

func TestIndex_LookupByOffsetAndTime_ManySegments(t *testing.T) {
	// Timestamps mostly rise, three records share each, and every 50th
	// record is an hour late, so "the first offset at or after a time" is
	// not simply the record with that time. A brute-force scan of the model
	// is the answer key.
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("idx", 1, map[string]string{ConfigSegmentBytes: "4096"}); err != nil {
		t.Fatal(err)
	}
	const n = 2000
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = base.Add(time.Duration(i/3) * 100 * time.Millisecond).UnixMilli()
		if i%50 == 49 {
			ts[i] -= time.Hour.Milliseconds()
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for off := 0; off < n; {
		k := min(1+rng.IntN(20), n-off)
		recs := make([]Record, k)
		for j := range recs {
			recs[j] = Record{Value: []byte(fmt.Sprintf("v%05d", off+j)), Timestamp: time.UnixMilli(ts[off+j])}
		}
		if _, err := l.Append(t.Context(), "idx", 0, recs); err != nil {
			t.Fatal(err)
		}
		off += k
	}
	firstAtOrAfter := func(target int64) (int64, bool) {
		for i, x := range ts {
			if x >= target {
				return int64(i), true
			}
		}
		return n, false
	}
	check := func(l *Log, when string) {
		t.Helper()
		if d, _ := l.DescribeTopic("idx"); d.Partitions[0].Segments < 10 {
			t.Fatalf("%s: %d segments, want at least 10", when, d.Partitions[0].Segments)
		}
		for off := int64(0); off < n; off += 1 + rng.Int64N(5) {
			res, err := l.Read(t.Context(), "idx", 0, off, ReadOptions{MaxBytes: 1})
			if err != nil || len(res.Records) == 0 {
				t.Fatalf("%s: Read(%d) = %v, %v", when, off, firstOffset(res.Records), err)
			}
			if r := res.Records[0]; r.Offset != off || string(r.Value) != fmt.Sprintf("v%05d", off) || r.Timestamp.UnixMilli() != ts[off] {
				t.Fatalf("%s: Read(%d) = offset %d %q at %d, want offset %d at %d", when, off, r.Offset, r.Value, r.Timestamp.UnixMilli(), off, ts[off])
			}
		}
		targets := []int64{ts[0] - time.Hour.Milliseconds()*2, ts[n-1] + 1, ts[n-1] + time.Hour.Milliseconds()}
		for i := 0; i < n; i += 1 + rng.IntN(9) {
			targets = append(targets, ts[i], ts[i]-1, ts[i]+1, ts[i]+50) // exact and between
		}
		for _, target := range targets {
			want, wantFound := firstAtOrAfter(target)
			got, found, err := l.OffsetForTime("idx", 0, time.UnixMilli(target))
			if err != nil || got != want || found != wantFound {
				t.Fatalf("%s: OffsetForTime(%d) = %d, %v, %v; want %d, %v, nil", when, target, got, found, err, want, wantFound)
			}
		}
	}
	check(l, "while open")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	check(l, "after reopen")
}

func TestRetention_ByTime(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := newFakeClock(t0)
	l := openTestLog(t, dir, withClock(clock))
	if err := l.CreateTopic("r", 1, map[string]string{ConfigRetentionMs: strconv.Itoa(int(time.Hour.Milliseconds())), ConfigSegmentBytes: "2048"}); err != nil {
		t.Fatal(err)
	}
	appendN := func(n int) {
		for range n / 10 {
			recs := make([]Record, 10)
			for i := range recs {
				recs[i].Value = bytes.Repeat([]byte("r"), 40)
			}
			if _, err := l.Append(t.Context(), "r", 0, recs); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(200) // offsets 0..199 at t0
	clock.add(30 * time.Minute)
	appendN(200) // 200..399 at t0+30m
	bases, _ := segmentFiles(t, dir, "r", 0)
	if len(bases) < 6 {
		t.Fatalf("%d segments, want several", len(bases))
	}
	// Segments holding only records from t0 expire at t0+1h; the one that
	// also holds t0+30m records stays.
	var wantStart int64
	for i := range bases {
		if i+1 == len(bases) || bases[i+1] > 200 {
			wantStart = bases[i]
			break
		}
	}
	clock.set(t0.Add(time.Hour + time.Minute))
	l.EnforceRetention()
	start, end, err := l.Offsets("r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if start != wantStart || end != 400 {
		t.Fatalf("after retention at t0+61m: offsets [%d, %d), want [%d, 400)", start, end, wantStart)
	}
	deleted := l.Metrics().SegmentsDeleted.Load()
	if after, _ := segmentFiles(t, dir, "r", 0); after[0] != wantStart || int64(len(bases)-len(after)) != deleted || deleted == 0 {
		t.Fatalf("segment files %v after retention (before %v), SegmentsDeleted %d", after, bases, deleted)
	}
	if _, err := l.Read(t.Context(), "r", 0, start-1, ReadOptions{}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read(%d) below the log start: %v, want ErrOffsetOutOfRange", start-1, err)
	}
	if res, err := l.Read(t.Context(), "r", 0, start, ReadOptions{MaxBytes: 1}); err != nil || res.Records[0].Offset != start || res.LogStartOffset != start {
		t.Fatalf("Read(%d) at the log start: %v, %v", start, res, err)
	}

	// Everything is past retention now, the active segment too: it is
	// rolled and deleted, as Kafka does (a topic nobody writes to any more
	// keeps nothing past retention.ms), and a new empty one takes appends.
	clock.set(t0.Add(3 * time.Hour))
	l.EnforceRetention()
	d, err := l.DescribeTopic("r")
	if err != nil {
		t.Fatal(err)
	}
	if p := d.Partitions[0]; p.Segments != 1 || p.LogStartOffset != 400 || p.LogEndOffset != 400 {
		t.Fatalf("after everything expired: %+v, want 1 empty segment at 400", p)
	}
	if after, _ := segmentFiles(t, dir, "r", 0); len(after) != 1 || after[0] != 400 {
		t.Fatalf("segment files %v after everything expired, want one at 400", after)
	}
	if base, err := l.Append(t.Context(), "r", 0, []Record{{Value: []byte("new")}}); err != nil || base != 400 {
		t.Fatalf("Append after retention = %d, %v", base, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, withClock(clock))
	defer l.Close()
	if start, end, _ := l.Offsets("r", 0); start != 400 || end != 401 {
		t.Fatalf("after reopen: offsets [%d, %d), want [400, 401)", start, end)
	}
	if res, err := l.Read(t.Context(), "r", 0, 400, ReadOptions{}); err != nil || len(res.Records) != 1 || string(res.Records[0].Value) != "new" {
		t.Fatalf("Read(400) after reopen: %v, %v", res, err)
	}
}

func TestRetention_BySize(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	defer l.Close()
	const limit = 10000
	if err := l.CreateTopic("s", 1, map[string]string{ConfigRetentionBytes: strconv.Itoa(limit), ConfigSegmentBytes: "2048"}); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		recs := make([]Record, 5)
		for j := range recs {
			recs[j].Value = []byte(fmt.Sprintf("%03d-%d-%s", i, j, strings.Repeat("s", 60)))
		}
		if _, err := l.Append(t.Context(), "s", 0, recs); err != nil {
			t.Fatal(err)
		}
	}
	bases, sizes := segmentFiles(t, dir, "s", 0)
	var total int64
	for _, s := range sizes {
		total += s
	}
	if total < 2*limit {
		t.Fatalf("wrote %d bytes, want more than %d", total, 2*limit)
	}
	l.EnforceRetention()
	after, afterSizes := segmentFiles(t, dir, "s", 0)
	var kept int64
	for _, s := range afterSizes {
		kept += s
	}
	// Oldest segments go while the rest still reaches retention.bytes.
	if kept < limit || len(after) > 1 && kept-afterSizes[0] >= limit {
		t.Fatalf("kept %d bytes in %d segments (first %d bytes); retention.bytes %d", kept, len(after), afterSizes[0], limit)
	}
	if after[len(after)-1] != bases[len(bases)-1] {
		t.Fatalf("the active segment %d was deleted", bases[len(bases)-1])
	}
	start, end, _ := l.Offsets("s", 0)
	if start != after[0] || end != 300 {
		t.Fatalf("offsets [%d, %d), want [%d, 300)", start, end, after[0])
	}
	if _, err := l.Read(t.Context(), "s", 0, 0, ReadOptions{}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("Read(0) after retention: %v, want ErrOffsetOutOfRange", err)
	}
	if got := readAll(t, l, "s", 0, start); int64(len(got)) != end-start || got[0].Offset != start {
		t.Fatalf("read %d records from %d, want %d", len(got), start, end-start)
	}
}

func TestIdempotentProducer_Sequences(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	ctx := t.Context()
	id, epoch, err := l.InitProducerID()
	if err != nil || epoch != 0 {
		t.Fatalf("InitProducerID = %d, %d, %v", id, epoch, err)
	}
	if id2, _, _ := l.InitProducerID(); id2 == id {
		t.Fatalf("InitProducerID handed out %d twice", id)
	}
	recs := func(n int, tag string) []Record {
		out := make([]Record, n)
		for i := range out {
			out[i].Value = []byte(fmt.Sprintf("%s-%d", tag, i))
		}
		return out
	}
	p := func(seq int32) ProducerInfo { return ProducerInfo{ID: id, Epoch: epoch, Sequence: seq} }

	if base, err := l.AppendIdempotent(ctx, "idem", 0, recs(3, "a"), p(0)); err != nil || base != 0 {
		t.Fatalf("first batch = %d, %v; want 0", base, err)
	}
	if base, err := l.AppendIdempotent(ctx, "idem", 0, recs(2, "b"), p(3)); err != nil || base != 3 {
		t.Fatalf("second batch = %d, %v; want 3", base, err)
	}
	// A retry of either batch returns its offset and appends nothing.
	for _, retry := range []struct {
		seq  int32
		n    int
		base int64
	}{{0, 3, 0}, {3, 2, 3}} {
		base, err := l.AppendIdempotent(ctx, "idem", 0, recs(retry.n, "retry"), p(retry.seq))
		if err != nil || base != retry.base {
			t.Fatalf("retry of seq %d = %d, %v; want %d, nil", retry.seq, base, err, retry.base)
		}
	}
	if _, end, _ := l.Offsets("idem", 0); end != 5 {
		t.Fatalf("log end %d after retries, want 5", end)
	}
	if got := l.Metrics().DuplicateBatches.Load(); got != 2 {
		t.Fatalf("DuplicateBatches = %d, want 2", got)
	}
	if _, err := l.AppendIdempotent(ctx, "idem", 0, recs(1, "gap"), p(9)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("sequence 9 after 4: %v, want ErrOutOfOrderSequence", err)
	}
	// A new epoch starts over at 0 and fences the old one.
	if base, err := l.AppendIdempotent(ctx, "idem", 0, recs(1, "e1"), ProducerInfo{ID: id, Epoch: 1, Sequence: 0}); err != nil || base != 5 {
		t.Fatalf("epoch 1 seq 0 = %d, %v; want 5", base, err)
	}
	if _, err := l.AppendIdempotent(ctx, "idem", 0, recs(1, "old"), p(5)); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("epoch 0 after epoch 1: %v, want ErrProducerFenced", err)
	}
	got := readAll(t, l, "idem", 0, 0)
	want := []string{"a-0", "a-1", "a-2", "b-0", "b-1", "e1-0"}
	if len(got) != len(want) {
		t.Fatalf("log holds %d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		if string(r.Value) != want[i] {
			t.Fatalf("record %d = %q, want %q", i, r.Value, want[i])
		}
	}
}

// TestIdempotentProducer_StateSurvivesRestart checks that a retry is still
// recognised after a clean Close and Open, and after an unclean stop: the
// data dir copied while the log is open, with appends since the last
// producer snapshot, as a kill -9 would leave it.
func TestIdempotentProducer_StateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("idem", 1, map[string]string{ConfigSegmentBytes: "1024"}); err != nil {
		t.Fatal(err)
	}
	id, epoch, err := l.InitProducerID()
	if err != nil {
		t.Fatal(err)
	}
	var seq int32
	var bases []int64
	appendBatch := func(l *Log) {
		t.Helper()
		recs := []Record{{Value: bytes.Repeat([]byte("i"), 100)}, {Value: bytes.Repeat([]byte("j"), 100)}}
		base, err := l.AppendIdempotent(t.Context(), "idem", 0, recs, ProducerInfo{ID: id, Epoch: epoch, Sequence: seq})
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, base)
		seq += 2
	}
	for range 20 { // several segments, so snapshots were written at rolls
		appendBatch(l)
	}
	retryLast := func(l *Log, when string) {
		t.Helper()
		_, endBefore, _ := l.Offsets("idem", 0)
		recs := []Record{{Value: bytes.Repeat([]byte("i"), 100)}, {Value: bytes.Repeat([]byte("j"), 100)}}
		base, err := l.AppendIdempotent(t.Context(), "idem", 0, recs, ProducerInfo{ID: id, Epoch: epoch, Sequence: seq - 2})
		if err != nil || base != bases[len(bases)-1] {
			t.Fatalf("%s: retry of the last batch = %d, %v; want %d, nil", when, base, err, bases[len(bases)-1])
		}
		if _, end, _ := l.Offsets("idem", 0); end != endBefore {
			t.Fatalf("%s: the retry was appended again (end %d, was %d)", when, end, endBefore)
		}
		if _, err := l.AppendIdempotent(t.Context(), "idem", 0, recs, ProducerInfo{ID: id, Epoch: epoch, Sequence: seq + 6}); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("%s: a sequence gap: %v, want ErrOutOfOrderSequence", when, err)
		}
	}
	retryLast(l, "while open")

	// Unclean: copy the files of the open log.
	crashed := t.TempDir()
	copyDir(t, dir, crashed)
	if _, err := os.Stat(filepath.Join(partitionDir(crashed, "idem", 0), producerSnapshotFile)); err != nil {
		t.Fatalf("no producer snapshot was written at a roll: %v", err)
	}
	lc := openTestLog(t, crashed)
	retryLast(lc, "after an unclean stop")
	appendBatch(lc) // and the producer goes on where it was
	if bases[len(bases)-1] != 40 {
		t.Fatalf("next batch after the unclean stop at %d, want 40", bases[len(bases)-1])
	}
	if err := lc.Close(); err != nil {
		t.Fatal(err)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	bases, seq = bases[:len(bases)-1], seq-2
	l = openTestLog(t, dir)
	defer l.Close()
	retryLast(l, "after Close and Open")
}

// TestIdempotentProducer_NoStateAcceptsAnySequence: as Kafka 2.5+ (KIP-360,
// ProducerAppendInfo.checkSequence), a producer the partition has no state
// for (its batches removed by retention, its state lost) may start at any
// sequence and epoch; from there on it is checked as any other: retries are
// duplicates, gaps and an epoch bump that does not start at 0 are refused,
// an older epoch is fenced. Its state survives Close and Open, and is
// rebuilt the same from the batches when the snapshot is gone.
func TestIdempotentProducer_NoStateAcceptsAnySequence(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("idem", 1, nil); err != nil {
		t.Fatal(err)
	}
	const id = 4242 // never handed out by this log
	p := func(epoch int16, seq int32) ProducerInfo { return ProducerInfo{ID: id, Epoch: epoch, Sequence: seq} }
	recs := func(tag string) []Record { return []Record{{Value: []byte(tag + "-0")}, {Value: []byte(tag + "-1")}} }
	appendAt := func(l *Log, pi ProducerInfo, want int64) {
		t.Helper()
		if base, err := l.AppendIdempotent(t.Context(), "idem", 0, recs("r"), pi); err != nil || base != want {
			t.Fatalf("append epoch %d seq %d = %d, %v; want %d, nil", pi.Epoch, pi.Sequence, base, err, want)
		}
	}
	refused := func(l *Log, pi ProducerInfo, want error) {
		t.Helper()
		_, before, _ := l.Offsets("idem", 0)
		if _, err := l.AppendIdempotent(t.Context(), "idem", 0, recs("bad"), pi); !errors.Is(err, want) {
			t.Fatalf("append epoch %d seq %d: %v, want %v", pi.Epoch, pi.Sequence, err, want)
		}
		if _, after, _ := l.Offsets("idem", 0); after != before {
			t.Fatalf("refused append epoch %d seq %d moved the end from %d to %d", pi.Epoch, pi.Sequence, before, after)
		}
	}

	appendAt(l, p(3, 17), 0) // unknown here: any sequence, any epoch
	appendAt(l, p(3, 17), 0) // a retry
	appendAt(l, p(3, 19), 2)
	checkKnown := func(l *Log, when string) {
		t.Helper()
		t.Log(when)
		appendAt(l, p(3, 19), 2)                    // a retry
		refused(l, p(3, 25), ErrOutOfOrderSequence) // a gap
		refused(l, p(4, 21), ErrOutOfOrderSequence) // a new epoch must start at 0
		refused(l, p(2, 21), ErrProducerFenced)
	}
	checkKnown(l, "while open")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	checkKnown(l, "after Close and Open")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(partitionDir(dir, "idem", 0), producerSnapshotFile)); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	checkKnown(l, "after Open without the snapshot")
	appendAt(l, p(3, 21), 4)
	appendAt(l, p(4, 0), 6) // a new epoch at 0
	// Another unknown producer, at a sequence past the first one's.
	appendAt(l, ProducerInfo{ID: id + 1, Epoch: 0, Sequence: 1000}, 8)
}

func TestConfig_UnknownNamesAndBadValuesRefused(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("ok", 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  map[string]string
		want string
	}{
		{map[string]string{"retention.mss": "1"}, `unknown topic config "retention.mss"`},
		{map[string]string{"retention.ms": "soon"}, "retention.ms=soon"},
		{map[string]string{"retention.ms": "-2"}, "must be at least -1"},
		{map[string]string{"segment.bytes": "1"}, "segment.bytes=1"},
		{map[string]string{"cleanup.policy": "shred"}, "must be one of delete, compact"},
		{map[string]string{"compression.type": "brotli"}, "gzip, snappy, lz4, zstd"},
		{map[string]string{"message.timestamp.type": "Now"}, "CreateTime, LogAppendTime"},
		{map[string]string{"min.cleanable.dirty.ratio": "2"}, "between 0 and 1"},
	} {
		err := l.CreateTopic("bad", 1, tc.cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("CreateTopic with %v: %v; want ErrInvalidConfig mentioning %q", tc.cfg, err, tc.want)
		}
		if _, ok := tc.cfg["retention.mss"]; ok && !strings.Contains(err.Error(), strings.Join(ConfigNames(), ", ")) {
			t.Fatalf("unknown config: %q does not list the valid names", err)
		}
		if err := l.AlterTopicConfig("ok", tc.cfg, nil); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("AlterTopicConfig with %v: %v; want ErrInvalidConfig mentioning %q", tc.cfg, err, tc.want)
		}
	}
	if err := l.AlterTopicConfig("ok", nil, []string{"retention.mss"}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "retention.ms,") {
		t.Fatalf("removing an unknown config: %v; want ErrInvalidConfig listing the valid names", err)
	}
	if topics := l.ListTopics(); len(topics) != 1 {
		t.Fatalf("topics %v: a refused CreateTopic left a topic behind", topics)
	}
	if _, err := Open(Options{Dir: t.TempDir(), Logger: discardLogger(), TopicDefaults: map[string]string{"retention.msec": "1"}}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Open with an unknown topic default: %v, want ErrInvalidConfig", err)
	}
	// Valid overrides take effect and show in DescribeTopic.
	if err := l.AlterTopicConfig("ok", map[string]string{ConfigRetentionMs: "1000", ConfigCompressionType: "zstd"}, nil); err != nil {
		t.Fatal(err)
	}
	d, _ := l.DescribeTopic("ok")
	if d.Config[ConfigRetentionMs] != "1000" || d.Overrides[ConfigCompressionType] != "zstd" || d.Config[ConfigSegmentBytes] != "1073741824" {
		t.Fatalf("DescribeTopic configs %v, overrides %v", d.Config, d.Overrides)
	}
}

func TestFeature_CreatePartitions_NeverShrink(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("p", 3, nil); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 2, 3} {
		if err := l.CreatePartitions("p", n); !errors.Is(err, ErrInvalidPartitions) {
			t.Fatalf("CreatePartitions(p, %d) of a 3-partition topic: %v, want ErrInvalidPartitions", n, err)
		}
	}
	if err := l.CreatePartitions("p", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), "p", 4, []Record{{Value: []byte("x")}}); err != nil {
		t.Fatalf("append to the new partition 4: %v", err)
	}
	if _, err := l.Append(t.Context(), "p", 5, []Record{{Value: []byte("x")}}); !errors.Is(err, ErrUnknownPartition) {
		t.Fatalf("append to partition 5 of 5: %v, want ErrUnknownPartition", err)
	}
	if err := l.CreatePartitions("nope", 5); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("CreatePartitions of an unknown topic: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	if n, err := l.Partitions("p"); err != nil || n != 5 {
		t.Fatalf("after reopen: %d partitions, %v; want 5", n, err)
	}
	if got := readAll(t, l, "p", 4, 0); len(got) != 1 {
		t.Fatalf("partition 4 holds %d records after reopen, want 1", len(got))
	}
}

// TestCheckCreatePartitions_AgreesWithCreatePartitions: the validate-only
// check (the Kafka listener's CreatePartitions with validate_only) refuses
// what the real call refuses, with the same error, and changes nothing.
func TestCheckCreatePartitions_AgreesWithCreatePartitions(t *testing.T) {
	l := openTestLog(t, t.TempDir(), func(o *Options) { o.MaxPartitions = 8 })
	defer l.Close()
	created := map[string]int{"p": 3, "_tributary.offsets": 1} // the worker's topics have one
	for name, n := range created {
		if err := l.CreateTopic(name, n, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		topic string
		total int
		want  error
	}{
		{"p", 2, ErrInvalidPartitions}, // shrink
		{"p", 3, ErrInvalidPartitions}, // same count
		{"p", 9, ErrTooManyPartitions}, // over MaxPartitions
		{"_tributary.offsets", 4, ErrInternalTopic},
		{"nope", 4, ErrUnknownTopic},
		{"p", 5, nil},
	} {
		check := l.CheckCreatePartitions(c.topic, c.total)
		if n, err := l.Partitions(c.topic); err == nil && n != created[c.topic] {
			t.Fatalf("CheckCreatePartitions(%s, %d) changed the count to %d", c.topic, c.total, n)
		}
		real := l.CreatePartitions(c.topic, c.total)
		if !errors.Is(check, c.want) || !errors.Is(real, c.want) || fmt.Sprint(check) != fmt.Sprint(real) {
			t.Fatalf("grow %s to %d: check %v, real call %v; want both %v", c.topic, c.total, check, real, c.want)
		}
	}
	if err := l.CheckCreatePartitions("p", 5); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("check after growing p to 5: %v, want ErrInvalidPartitions", err)
	}
}

func TestProduce_AutoCreateUsesNumPartitions(t *testing.T) {
	l := openTestLog(t, t.TempDir(), func(o *Options) { o.NumPartitions = 4 })
	defer l.Close()
	if err := l.Produce(t.Context(), "auto", []Record{{Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Partitions("auto"); err != nil || n != 4 {
		t.Fatalf("auto-created topic has %d partitions, %v; want 4", n, err)
	}
	if _, err := l.Append(t.Context(), "auto2", 3, []Record{{Value: []byte("x")}}); err != nil {
		t.Fatalf("Append auto-creates too: %v", err)
	}
	strict := openTestLog(t, t.TempDir(), func(o *Options) { o.DisableAutoCreate = true })
	defer strict.Close()
	if err := strict.Produce(t.Context(), "auto", []Record{{Value: []byte("x")}}); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Produce with auto-create off: %v, want ErrUnknownTopic", err)
	}
}

func TestProduce_KeysAndKeylessSpread(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	const parts = 6
	if err := l.CreateTopic("k", parts, nil); err != nil {
		t.Fatal(err)
	}
	recs := make([]Record, 100)
	for i := range recs {
		recs[i] = Record{Key: []byte(fmt.Sprintf("user-%d", i)), Value: []byte(fmt.Sprint(i))}
	}
	if err := l.Produce(t.Context(), "k", recs); err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if want := KeyPartition(r.Key, parts); r.Partition != want || r.Topic != "k" {
			t.Fatalf("record %d (key %s) went to %s/%d, want k/%d", i, r.Key, r.Topic, r.Partition, want)
		}
		res, err := l.Read(t.Context(), "k", r.Partition, r.Offset, ReadOptions{MaxBytes: 1})
		if err != nil || len(res.Records) == 0 || string(res.Records[0].Value) != fmt.Sprint(i) {
			t.Fatalf("record %d is not at %d/%d: %v, %v", i, r.Partition, r.Offset, res.Records, err)
		}
	}
	// Kafka's vector: "foobar" lands on partition 6 of 12.
	if got := KeyPartition([]byte("foobar"), 12); got != 6 {
		t.Fatalf("KeyPartition(foobar, 12) = %d, want 6", got)
	}
	// Keyless records stick to one partition per call and move on between
	// calls.
	used := map[int32]bool{}
	for call := range 12 {
		batch := make([]Record, 5)
		for i := range batch {
			batch[i].Value = []byte(fmt.Sprintf("c%d-%d", call, i))
		}
		if err := l.Produce(t.Context(), "k", batch); err != nil {
			t.Fatal(err)
		}
		for i, r := range batch {
			if r.Partition != batch[0].Partition || r.Offset != batch[0].Offset+int64(i) {
				t.Fatalf("call %d: keyless record %d at %d/%d, want all of one call together at %d/%d..", call, i, r.Partition, r.Offset, batch[0].Partition, batch[0].Offset)
			}
		}
		used[batch[0].Partition] = true
	}
	if len(used) < parts/2 {
		t.Fatalf("12 calls of keyless records used %d partitions, want at least %d", len(used), parts/2)
	}
}

func TestFeature_MaxMessageBytes(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	defer l.Close()
	if err := l.CreateTopic("m", 1, map[string]string{ConfigMaxMessageBytes: "1000"}); err != nil {
		t.Fatal(err)
	}
	big := []Record{{Value: bytes.Repeat([]byte("b"), 2000)}}
	if _, err := l.Append(t.Context(), "m", 0, big); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("a 2000-byte record with max.message.bytes 1000: %v, want ErrRecordTooLarge", err)
	}
	if _, err := l.Append(t.Context(), "m", 0, append([]Record{{Value: []byte("small")}}, big...)); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("a call holding one too-large record: %v, want ErrRecordTooLarge", err)
	}
	if _, end, _ := l.Offsets("m", 0); end != 0 {
		t.Fatalf("a refused append left %d records", end)
	}
	recs := make([]Record, 50)
	for i := range recs {
		recs[i].Value = []byte(fmt.Sprintf("%02d-%s", i, strings.Repeat("m", 100)))
	}
	base, err := l.Append(t.Context(), "m", 0, recs)
	if err != nil || base != 0 {
		t.Fatalf("50 records of 100 bytes = %d, %v; want them split into batches", base, err)
	}
	got := readAll(t, l, "m", 0, 0)
	if len(got) != 50 {
		t.Fatalf("read %d records, want 50", len(got))
	}
	for i, r := range got {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, recs[i].Value) {
			t.Fatalf("record %d: offset %d %q", i, r.Offset, r.Value)
		}
	}
	segs := scanLayout(t, partitionDir(dir, "m", 0))
	n := 0
	for _, b := range segs[0].batches {
		n++
		if b.size > 1000 {
			t.Fatalf("stored a %d-byte batch, max.message.bytes is 1000", b.size)
		}
	}
	if n < 5 {
		t.Fatalf("50 records of ~100 bytes went into %d batches, want at least 5", n)
	}
}

func TestFeature_FlushInterval(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, func(o *Options) { o.FlushInterval = time.Hour })
	for i := range 20 {
		if _, err := l.Append(t.Context(), "fi", 0, []Record{{Value: []byte(fmt.Sprint(i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.Metrics().Fsyncs.Load(); got != 0 {
		t.Fatalf("%d fsyncs with FlushInterval of an hour, want none before an acknowledgement", got)
	}
	if got := readAll(t, l, "fi", 0, 0); len(got) != 20 {
		t.Fatalf("read %d records right after the appends, want 20", len(got))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := l.Metrics().Fsyncs.Load(); got == 0 {
		t.Fatal("Close did not fsync")
	}
	l = openTestLog(t, dir)
	defer l.Close()
	got := readAll(t, l, "fi", 0, 0)
	if len(got) != 20 || string(got[19].Value) != "19" {
		t.Fatalf("after Close and Open: %d records", len(got))
	}

	// With a short interval the syncer catches up without being asked.
	l2 := openTestLog(t, t.TempDir(), func(o *Options) { o.FlushInterval = 10 * time.Millisecond })
	defer l2.Close()
	if _, err := l2.Append(t.Context(), "fi", 0, []Record{{Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for l2.Metrics().Fsyncs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no interval fsync within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCompression_RoundTripAndSmallerOnDisk(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	defer l.Close()
	recs := make([]Record, 200)
	for i := range recs {
		recs[i] = Record{
			Key:     []byte(fmt.Sprintf("key-%d", i)),
			Value:   []byte(fmt.Sprintf(`{"id":%d,"name":"compressible compressible compressible","tags":["a","b","c"]}`, i)),
			Headers: []Header{{Key: "source", Value: []byte("test")}},
		}
	}
	sizeOf := func(topic string) int64 {
		_, sizes := segmentFiles(t, dir, topic, 0)
		var n int64
		for _, s := range sizes {
			n += s
		}
		return n
	}
	if _, err := l.Append(t.Context(), "plain", 0, recs); err != nil {
		t.Fatal(err)
	}
	plain := sizeOf("plain")
	for codec, bits := range map[string]int16{"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4} {
		if err := l.CreateTopic(codec, 1, map[string]string{ConfigCompressionType: codec}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(t.Context(), codec, 0, recs); err != nil {
			t.Fatal(err)
		}
		got := readAll(t, l, codec, 0, 0)
		if len(got) != len(recs) {
			t.Fatalf("%s: read %d records, want %d", codec, len(got), len(recs))
		}
		for i, r := range got {
			if !bytes.Equal(r.Key, recs[i].Key) || !bytes.Equal(r.Value, recs[i].Value) || len(r.Headers) != 1 || string(r.Headers[0].Value) != "test" {
				t.Fatalf("%s: record %d = %q/%q %v", codec, i, r.Key, r.Value, r.Headers)
			}
		}
		if size := sizeOf(codec); size*2 > plain {
			t.Fatalf("%s: %d bytes on disk, uncompressed %d: want less than half", codec, size, plain)
		}
		data, err := os.ReadFile(filepath.Join(partitionDir(dir, codec, 0), segmentName(0, ".log")))
		if err != nil {
			t.Fatal(err)
		}
		if attrs := int16(data[21])<<8 | int16(data[22]); attrs&attrCompressionMask != bits {
			t.Fatalf("%s: stored batch has codec bits %d, want %d", codec, attrs&attrCompressionMask, bits)
		}
	}
}

func TestTimestampType_LogAppendTime(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
	l := openTestLog(t, t.TempDir(), withClock(clock))
	defer l.Close()
	if err := l.CreateTopic("lat", 1, map[string]string{ConfigTimestampType: "LogAppendTime"}); err != nil {
		t.Fatal(err)
	}
	if err := l.CreateTopic("ct", 1, nil); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := []Record{{Value: []byte("a"), Timestamp: old}, {Value: []byte("b"), Timestamp: old.Add(time.Second)}}
	for _, topic := range []string{"lat", "ct"} {
		if _, err := l.Append(t.Context(), topic, 0, recs); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range readAll(t, l, "lat", 0, 0) {
		if !r.Timestamp.Equal(clock.now()) {
			t.Fatalf("LogAppendTime topic: record %d has timestamp %v, want the log's clock %v", r.Offset, r.Timestamp, clock.now())
		}
	}
	for i, r := range readAll(t, l, "ct", 0, 0) {
		if !r.Timestamp.Equal(recs[i].Timestamp) {
			t.Fatalf("CreateTime topic: record %d has timestamp %v, want %v", i, r.Timestamp, recs[i].Timestamp)
		}
	}
	if off, found, err := l.OffsetForTime("lat", 0, old.Add(time.Hour)); err != nil || !found || off != 0 {
		t.Fatalf("OffsetForTime on a LogAppendTime topic = %d, %v, %v; want 0, true", off, found, err)
	}
	if off, found, err := l.OffsetForTime("lat", 0, clock.now().Add(time.Millisecond)); err != nil || found || off != 2 {
		t.Fatalf("OffsetForTime after the append time = %d, %v, %v; want 2, false", off, found, err)
	}
}

func TestFeature_MetricsCountersMove(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("met", 2, map[string]string{ConfigSegmentBytes: "1024"}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		recs := []Record{{Value: bytes.Repeat([]byte("m"), 100)}, {Value: []byte("n")}}
		if _, err := l.Append(t.Context(), "met", int32(i%2), recs); err != nil {
			t.Fatal(err)
		}
	}
	readAll(t, l, "met", 0, 0)
	m := l.Metrics()
	if m.RecordsAppended.Load() != 60 || m.Batches.Load() != 30 || m.BytesAppended.Load() < 60*50 {
		t.Fatalf("RecordsAppended %d, Batches %d, BytesAppended %d; want 60, 30, >= 3000", m.RecordsAppended.Load(), m.Batches.Load(), m.BytesAppended.Load())
	}
	if m.RecordsRead.Load() != 30 {
		t.Fatalf("RecordsRead %d, want 30", m.RecordsRead.Load())
	}
	if m.Fsyncs.Load() == 0 || m.FsyncNanos.Load() == 0 || m.SegmentsRolled.Load() == 0 {
		t.Fatalf("Fsyncs %d, FsyncNanos %d, SegmentsRolled %d; want all > 0", m.Fsyncs.Load(), m.FsyncNanos.Load(), m.SegmentsRolled.Load())
	}
	var inBuckets int64
	for i := range m.FsyncBuckets {
		inBuckets += m.FsyncBuckets[i].Load()
	}
	if inBuckets != m.Fsyncs.Load() {
		t.Fatalf("fsync histogram holds %d, Fsyncs is %d", inBuckets, m.Fsyncs.Load())
	}
	var stats []PartitionStats
	for _, s := range l.PartitionStats() {
		if s.Topic == "met" {
			stats = append(stats, s)
		}
	}
	if len(stats) != 2 || stats[0].LogEndOffset != 30 || stats[1].LogEndOffset != 30 || stats[0].Segments < 2 || stats[0].Size == 0 {
		t.Fatalf("PartitionStats = %+v", stats)
	}
}

// TestValidateConfig_AsKafkaParsesThem: cleanup.policy is a list (spaces
// around its items allowed, as Kafka's list configs take them) and
// max.message.bytes an int (Kafka's INT: at most 2147483647).
func TestValidateConfig_AsKafkaParsesThem(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		ok          bool
	}{
		{ConfigCleanupPolicy, "compact, delete", true},
		{ConfigCleanupPolicy, " delete ", true},
		{ConfigCleanupPolicy, "delete,compact", true},
		{ConfigCleanupPolicy, "compact,compact", false},
		{ConfigCleanupPolicy, "compact,", false},
		{ConfigCleanupPolicy, "purge", false},
		{ConfigMaxMessageBytes, "2147483647", true},
		{ConfigMaxMessageBytes, "4294967296", false},
	} {
		err := ValidateConfig(map[string]string{tt.name: tt.value})
		if (err == nil) != tt.ok {
			t.Errorf("%s=%q: %v, want ok %v", tt.name, tt.value, err, tt.ok)
		}
	}
	cfg := parseTopicConfig(nil, map[string]string{ConfigCleanupPolicy: "compact, delete"})
	if !cfg.Compact || !cfg.Delete {
		t.Errorf("cleanup.policy \"compact, delete\" parsed as %+v", cfg)
	}
}

// TestOffsetOfMaxTimestamp: as Kafka's ListOffsets MAX_TIMESTAMP (-3,
// KIP-734): the offset and timestamp of the record with the largest
// timestamp in the partition, the first of several such (Kafka's
// RecordBatch.offsetOfMaxTimestamp), whatever segment or place in its batch
// it has; timestamps need not grow with offsets. Sealed segments reopened
// from their indexes answer the same.
func TestOffsetOfMaxTimestamp(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("ts", 1, map[string]string{ConfigSegmentBytes: "1024"}); err != nil {
		t.Fatal(err)
	}
	if off, ts, found, err := l.OffsetOfMaxTimestamp(t.Context(), "ts", 0); err != nil || found {
		t.Fatalf("empty partition: %d %v %v %v; want not found", off, ts, found, err)
	}
	if _, _, _, err := l.OffsetOfMaxTimestamp(t.Context(), "nope", 0); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v, want ErrUnknownTopic", err)
	}
	base := time.UnixMilli(1_700_000_000_000)
	var all []int64 // each record's timestamp, in ms after base, by offset
	appendBatch := func(ms ...int64) {
		t.Helper()
		recs := make([]Record, len(ms))
		for i, m := range ms {
			recs[i] = Record{Value: bytes.Repeat([]byte("v"), 100), Timestamp: base.Add(time.Duration(m) * time.Millisecond)}
		}
		if _, err := l.Append(t.Context(), "ts", 0, recs); err != nil {
			t.Fatal(err)
		}
		all = append(all, ms...)
	}
	want := func() (int64, int64) { // the dumb model: the first of the largest
		best := int64(0)
		for i, m := range all {
			if m > all[best] {
				best = int64(i)
			}
		}
		return best, all[best]
	}
	check := func(l *Log, when string) {
		t.Helper()
		wantOff, wantMs := want()
		off, ts, found, err := l.OffsetOfMaxTimestamp(t.Context(), "ts", 0)
		if err != nil || !found || off != wantOff || !ts.Equal(base.Add(time.Duration(wantMs)*time.Millisecond)) {
			t.Fatalf("%s: OffsetOfMaxTimestamp = %d, %v, %v, %v; want %d at +%dms", when, off, ts.UnixMilli()-base.UnixMilli(), found, err, wantOff, wantMs)
		}
	}
	for b := range int64(30) { // about two batches a segment
		appendBatch((b*7)%20, (b*7+3)%20, (b*7+6)%20, (b*7+9)%20)
	}
	if st, _, _ := l.Offsets("ts", 0); st != 0 {
		t.Fatalf("log start %d, want 0", st)
	}
	check(l, "max in a sealed segment, not first in its batch")
	appendBatch(50, 100, 60, 100) // in the active segment, twice
	check(l, "max in the active segment")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	check(l, "after Close and Open")
	appendBatch(100, 1) // a tie later: the first stays
	check(l, "a later tie")
	// A batch written but maybe not yet fsync'ed, hence not readable: the
	// answer waits for it rather than miss it.
	async := encodeBatch([]Record{{Value: []byte("a"), Timestamp: base.Add(time.Second)}}, time.Now(), "none", noProducer)
	_, wait, err := l.AppendRawAsync(t.Context(), "ts", 0, async)
	if err != nil {
		t.Fatal(err)
	}
	all = append(all, 1000)
	check(l, "max in a batch appended without waiting")
	if wait != nil {
		if err := wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}
