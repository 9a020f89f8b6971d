package log

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Corruption tests: a partition of several segments is written once, copied
// for every seed, damaged (bytes flipped, files cut or removed) and opened.
// Whatever the damage, opening and reading never panic, records that come
// back are exactly the records written at their offsets, everything before
// the damage reads back, and damage that reads reach is a *CorruptionError
// naming the segment file and a byte position.

const (
	corruptTopic   = "c"
	corruptRecords = 600
	corruptSegSize = 6 << 10
	corruptSeeds   = 50
)

var numTimeBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// numValue, numKey and numTime are what the tests store at offset off, so a
// record read back can be checked against its offset alone.
func numValue(off int64) []byte {
	return []byte(fmt.Sprintf("value-%08d-%s", off, strings.Repeat("x", int(off%41))))
}

func numKey(off int64) []byte { return []byte(fmt.Sprintf("key-%d", off%57)) }

func numTime(off int64) time.Time { return numTimeBase.Add(time.Duration(off) * 10 * time.Millisecond) }

// checkNumRecord fails unless r is the record written at its offset.
func checkNumRecord(t *testing.T, what string, r Record) {
	t.Helper()
	if got, want := string(r.Value), string(numValue(r.Offset)); got != want {
		t.Fatalf("%s: record at offset %d has value %q, want %q", what, r.Offset, got, want)
	}
	if got, want := string(r.Key), string(numKey(r.Offset)); got != want {
		t.Fatalf("%s: record at offset %d has key %q, want %q", what, r.Offset, got, want)
	}
	if got, want := r.Timestamp.UnixMilli(), numTime(r.Offset).UnixMilli(); got != want {
		t.Fatalf("%s: record at offset %d has timestamp %d, want %d", what, r.Offset, got, want)
	}
}

// appendNumbered appends records [from, to) in batches of 1..maxBatch records.
func appendNumbered(t *testing.T, l *Log, topic string, part int32, from, to int64, maxBatch int, rng *rand.Rand) {
	t.Helper()
	for off := from; off < to; {
		n := min(int64(1+rng.IntN(maxBatch)), to-off)
		recs := make([]Record, n)
		for i := range recs {
			o := off + int64(i)
			recs[i] = Record{Key: numKey(o), Value: numValue(o), Timestamp: numTime(o)}
		}
		base, err := l.Append(t.Context(), topic, part, recs)
		if err != nil {
			t.Fatalf("Append(%d records at %d): %v", n, off, err)
		}
		if base != off {
			t.Fatalf("Append base = %d, want %d", base, off)
		}
		off += n
	}
}

// batchPos locates one batch in a segment file.
type batchPos struct{ pos, size, base, last int64 }

type segLayout struct {
	base    int64
	name    string // file name of the .log
	size    int64
	batches []batchPos
}

// scanLayout lists the segments of a partition dir and the batches in each,
// read straight from the files.
func scanLayout(t *testing.T, partDir string) []segLayout {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(partDir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var out []segLayout
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var base int64
		fmt.Sscanf(filepath.Base(name), "%d.log", &base)
		s := segLayout{base: base, name: filepath.Base(name), size: int64(len(data))}
		for pos := 0; pos < len(data); {
			_, meta, reason := checkBatch(data[pos : pos+int(binary.BigEndian.Uint32(data[pos+8:]))+batchLengthPrefix])
			if reason != "" {
				t.Fatalf("corpus %s at %d: %s", name, pos, reason)
			}
			s.batches = append(s.batches, batchPos{pos: int64(pos), size: int64(meta.Size), base: meta.BaseOffset, last: meta.LastOffset})
			pos += meta.Size
		}
		out = append(out, s)
	}
	return out
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if d.Name() == lockFile {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

// buildCorpus writes corruptRecords numbered records to one partition with
// small segments and closes the log; it returns the data dir and layout.
func buildCorpus(t *testing.T) (string, []segLayout) {
	t.Helper()
	dir := t.TempDir()
	l := openTestLog(t, dir, func(o *Options) { o.FlushInterval = time.Hour })
	if err := l.CreateTopic(corruptTopic, 1, map[string]string{ConfigSegmentBytes: fmt.Sprint(corruptSegSize)}); err != nil {
		t.Fatal(err)
	}
	appendNumbered(t, l, corruptTopic, 0, 0, corruptRecords, 25, rand.New(rand.NewPCG(1, 2)))
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs := scanLayout(t, partitionDir(dir, corruptTopic, 0))
	if len(segs) < 4 {
		t.Fatalf("corpus has %d segments, want at least 4", len(segs))
	}
	return dir, segs
}

// damage says where a segment file was damaged: bytes from pos on may be
// wrong or gone. seg -1 means the .log files are intact.
type damage struct {
	seg int
	pos int64
}

// safe reports whether the record at off must read back despite d.
func (d damage) safe(segs []segLayout, off int64) bool {
	if d.seg < 0 {
		return true
	}
	s := segs[d.seg]
	if off < s.base || (d.seg+1 < len(segs) && off >= segs[d.seg+1].base) {
		return true
	}
	for _, b := range s.batches {
		if off >= b.base && off <= b.last {
			return b.pos+b.size <= d.pos
		}
	}
	return false
}

// checkDamagedLog checks the invariants every damaged log keeps; tail says
// the damage was in the newest segment (where recovery may cut it off);
// mustReport says records that do not read back must have been reported as
// corruption (in a middle segment nothing goes missing silently).
func checkDamagedLog(t *testing.T, l *Log, segs []segLayout, d damage, tail, mustReport bool, rng *rand.Rand) {
	t.Helper()
	ctx := t.Context()
	start, end, err := l.Offsets(corruptTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if start != 0 {
		t.Fatalf("log start = %d, want 0", start)
	}
	var lastSafe int64 = -1
	for off := int64(0); off < corruptRecords; off++ {
		if d.safe(segs, off) {
			lastSafe = off
		}
	}
	if tail && end < lastSafe+1 || !tail && end != corruptRecords {
		t.Fatalf("log end = %d; last record that must survive is %d (tail damage %v)", end, lastSafe, tail)
	}

	// A sequential scan returns exactly the written records, in order, up
	// to the end or to a CorruptionError naming the damaged file; a
	// middle-segment scan resumes at the next segment.
	seen := map[int64]bool{}
	prev := int64(-1)
	reported := false
	for from := int64(0); from < end; {
		res, err := l.Read(ctx, corruptTopic, 0, from, ReadOptions{MaxBytes: 1 + rng.IntN(16<<10)})
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("read at %d: %v, want a *CorruptionError", from, err)
			}
			if d.seg < 0 {
				t.Fatalf("read at %d of an undamaged log: %v", from, err)
			}
			if got, want := filepath.Base(ce.Path), segs[d.seg].name; got != want || ce.Position < 0 {
				t.Fatalf("read at %d: corruption reported in %s at byte %d, want %s at a position >= 0 (%v)", from, got, ce.Position, want, err)
			}
			reported = true
			if d.safe(segs, from) {
				t.Fatalf("read at %d reports corruption, but that record is before the damage at byte %d of %s: %v", from, d.pos, segs[d.seg].name, err)
			}
			if d.seg+1 >= len(segs) || segs[d.seg+1].base <= from {
				break
			}
			from = segs[d.seg+1].base
			continue
		}
		for _, r := range res.Records {
			if r.Offset <= prev {
				t.Fatalf("read at %d: offset %d after %d", from, r.Offset, prev)
			}
			prev = r.Offset
			checkNumRecord(t, fmt.Sprintf("scan read at %d", from), r)
			seen[r.Offset] = true
		}
		if res.NextOffset <= from {
			t.Fatalf("read at %d made no progress (next %d, end %d)", from, res.NextOffset, end)
		}
		from = res.NextOffset
	}
	for off := int64(0); off < corruptRecords; off++ {
		if d.safe(segs, off) && !seen[off] {
			t.Fatalf("record %d is before the damage (%s byte %d) but a scan did not return it", off, segName(segs, d), d.pos)
		}
		if mustReport && !seen[off] && !reported {
			t.Fatalf("record %d did not read back, and no read reported corruption", off)
		}
	}

	// Point reads and time lookups of records that must survive.
	probe := []int64{0, lastSafe}
	for _, s := range segs {
		for _, b := range s.batches {
			if rng.IntN(4) == 0 {
				probe = append(probe, b.base, b.last)
			}
		}
	}
	for range 20 {
		probe = append(probe, rng.Int64N(corruptRecords))
	}
	for _, off := range probe {
		if !d.safe(segs, off) {
			continue
		}
		res, err := l.Read(ctx, corruptTopic, 0, off, ReadOptions{MaxBytes: 1})
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(res.Records) == 0 || res.Records[0].Offset != off {
			t.Fatalf("Read(%d) returned %d records starting at %v, want offset %d", off, len(res.Records), firstOffset(res.Records), off)
		}
		checkNumRecord(t, fmt.Sprintf("Read(%d)", off), res.Records[0])
		for _, ts := range []time.Time{numTime(off), numTime(off).Add(-5 * time.Millisecond)} {
			got, found, err := l.OffsetForTime(corruptTopic, 0, ts)
			if err != nil || !found || got != off {
				t.Fatalf("OffsetForTime(%d ms, record %d) = %d, %v, %v; want %d, true, nil", ts.UnixMilli(), off, got, found, err, off)
			}
		}
	}
	if d.safe(segs, 0) {
		if got, found, err := l.OffsetForTime(corruptTopic, 0, numTime(0).Add(-time.Hour)); err != nil || !found || got != 0 {
			t.Fatalf("OffsetForTime(before first) = %d, %v, %v; want 0, true, nil", got, found, err)
		}
	}
	if got, found, err := l.OffsetForTime(corruptTopic, 0, numTime(corruptRecords).Add(time.Hour)); err != nil || found || got != end {
		t.Fatalf("OffsetForTime(after last) = %d, %v, %v; want %d, false, nil", got, found, err, end)
	}

	if !tail {
		return
	}
	// The log takes new records where it ends.
	r := Record{Key: numKey(end), Value: numValue(end), Timestamp: numTime(end)}
	base, err := l.Append(ctx, corruptTopic, 0, []Record{r})
	if err != nil || base != end {
		t.Fatalf("Append after recovery = %d, %v; want %d, nil", base, err, end)
	}
	res, err := l.Read(ctx, corruptTopic, 0, end, ReadOptions{})
	if err != nil || len(res.Records) != 1 {
		t.Fatalf("Read(%d) of the new record: %d records, %v", end, len(res.Records), err)
	}
	checkNumRecord(t, "new record", res.Records[0])
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func segName(segs []segLayout, d damage) string {
	if d.seg < 0 {
		return "none"
	}
	return segs[d.seg].name
}

func firstOffset(recs []Record) any {
	if len(recs) == 0 {
		return "nothing"
	}
	return recs[0].Offset
}

// forSeeds runs fn for corruptSeeds seeds on a fresh copy of the corpus,
// each as a subtest named after its seed so a failure can be replayed with
// -run 'Test.../seed=N'.
func forSeeds(t *testing.T, corpus string, fn func(t *testing.T, dir string, rng *rand.Rand)) {
	for seed := uint64(1); seed <= corruptSeeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			copyDir(t, corpus, dir)
			fn(t, dir, rand.New(rand.NewPCG(seed, 0xc0ffee)))
		})
	}
}

func flipBytes(t *testing.T, path string, from, to int64, n int, rng *rand.Rand) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first := to
	for range n {
		pos := from + rng.Int64N(to-from)
		data[pos] ^= byte(1 + rng.IntN(255))
		first = min(first, pos)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return first
}

func TestSegment_Corrupt_FlippedBytesInTail(t *testing.T) {
	corpus, segs := buildCorpus(t)
	tail := len(segs) - 1
	forSeeds(t, corpus, func(t *testing.T, dir string, rng *rand.Rand) {
		path := filepath.Join(partitionDir(dir, corruptTopic, 0), segs[tail].name)
		pos := flipBytes(t, path, 0, segs[tail].size, 1+rng.IntN(3), rng)
		t.Logf("flipped bytes of %s from byte %d", segs[tail].name, pos)
		l := openTestLog(t, dir)
		defer l.Close()
		checkDamagedLog(t, l, segs, damage{seg: tail, pos: pos}, true, false, rng)
	})
}

func TestSegment_Corrupt_FlippedBytesInMiddleSegment(t *testing.T) {
	corpus, segs := buildCorpus(t)
	forSeeds(t, corpus, func(t *testing.T, dir string, rng *rand.Rand) {
		seg := rng.IntN(len(segs) - 1)
		path := filepath.Join(partitionDir(dir, corruptTopic, 0), segs[seg].name)
		pos := flipBytes(t, path, 0, segs[seg].size, 1+rng.IntN(3), rng)
		t.Logf("flipped bytes of %s from byte %d", segs[seg].name, pos)
		l := openTestLog(t, dir)
		defer l.Close()
		checkDamagedLog(t, l, segs, damage{seg: seg, pos: pos}, false, true, rng)
	})
}

func TestSegment_Corrupt_FlippedBatchHeaderInMiddleSegment(t *testing.T) {
	// Aim at the header fields the CRC does not cover (base offset, length,
	// leader epoch, magic, crc) of a batch in a sealed segment.
	corpus, segs := buildCorpus(t)
	forSeeds(t, corpus, func(t *testing.T, dir string, rng *rand.Rand) {
		seg := rng.IntN(len(segs) - 1)
		b := segs[seg].batches[rng.IntN(len(segs[seg].batches))]
		path := filepath.Join(partitionDir(dir, corruptTopic, 0), segs[seg].name)
		pos := flipBytes(t, path, b.pos, b.pos+batchCRCStart, 1, rng)
		t.Logf("flipped a header byte of the batch at offset %d of %s (byte %d)", b.base, segs[seg].name, pos)
		l := openTestLog(t, dir)
		defer l.Close()
		checkDamagedLog(t, l, segs, damage{seg: seg, pos: pos}, false, true, rng)
	})
}

func TestSegment_Corrupt_TruncatedTail(t *testing.T) {
	corpus, segs := buildCorpus(t)
	tail := len(segs) - 1
	forSeeds(t, corpus, func(t *testing.T, dir string, rng *rand.Rand) {
		path := filepath.Join(partitionDir(dir, corruptTopic, 0), segs[tail].name)
		cut := rng.Int64N(segs[tail].size)
		if err := os.Truncate(path, cut); err != nil {
			t.Fatal(err)
		}
		t.Logf("cut %s at byte %d of %d", segs[tail].name, cut, segs[tail].size)
		l := openTestLog(t, dir)
		defer l.Close()
		// A torn tail is not corruption: it is cut back to the last whole
		// batch, so the log ends exactly there.
		_, end, err := l.Offsets(corruptTopic, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := segs[tail].base
		for _, b := range segs[tail].batches {
			if b.pos+b.size <= cut {
				want = b.last + 1
			}
		}
		if end != want {
			t.Fatalf("log end after cutting the tail at byte %d = %d, want %d", cut, end, want)
		}
		boundary := int64(0)
		for _, b := range segs[tail].batches {
			if b.pos <= cut {
				boundary = b.pos
			}
		}
		m := l.Metrics()
		if torn := cut != boundary; torn && (m.TailTruncations.Load() != 1 || m.TruncatedBytes.Load() != cut-boundary) {
			t.Fatalf("TailTruncations, TruncatedBytes = %d, %d; want 1, %d", m.TailTruncations.Load(), m.TruncatedBytes.Load(), cut-boundary)
		}
		checkDamagedLog(t, l, segs, damage{seg: tail, pos: cut}, true, false, rng)
	})
}

func TestSegment_Corrupt_TruncatedMiddleSegment(t *testing.T) {
	corpus, segs := buildCorpus(t)
	forSeeds(t, corpus, func(t *testing.T, dir string, rng *rand.Rand) {
		seg := rng.IntN(len(segs) - 1)
		path := filepath.Join(partitionDir(dir, corruptTopic, 0), segs[seg].name)
		cut := rng.Int64N(segs[seg].size)
		if err := os.Truncate(path, cut); err != nil {
			t.Fatal(err)
		}
		t.Logf("cut %s at byte %d of %d", segs[seg].name, cut, segs[seg].size)
		// A cut between two batches looks like a segment that compaction
		// emptied towards its end: the records there are a gap, not an
		// error. A cut inside a batch is reported.
		between := false
		for _, b := range segs[seg].batches {
			between = between || b.pos == cut
		}
		l := openTestLog(t, dir)
		defer l.Close()
		checkDamagedLog(t, l, segs, damage{seg: seg, pos: cut}, false, !between, rng)
	})
}

func TestIndex_Corrupt_DamagedIndexesAreRebuilt(t *testing.T) {
	corpus, segs := buildCorpus(t)
	forSeeds(t, corpus, func(t *testing.T, dir string, rng *rand.Rand) {
		pdir := partitionDir(dir, corruptTopic, 0)
		for range 1 + rng.IntN(3) {
			s := segs[rng.IntN(len(segs))]
			ext := []string{".index", ".timeindex"}[rng.IntN(2)]
			path := filepath.Join(pdir, segmentName(s.base, ext))
			data, err := os.ReadFile(path)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			size := map[string]int{".index": indexEntrySize, ".timeindex": timeIndexEntrySize}[ext]
			switch how := rng.IntN(5); {
			case how == 0:
				t.Logf("removed %s", filepath.Base(path))
				os.Remove(path)
			case how == 1 && len(data) > 0:
				cut := rng.IntN(len(data))
				t.Logf("cut %s at byte %d of %d", filepath.Base(path), cut, len(data))
				data = data[:cut]
			case how == 2 && len(data) >= size:
				// Cut at an entry boundary: the file still looks well formed.
				cut := rng.IntN(len(data)/size) * size
				t.Logf("cut %s at entry boundary %d of %d", filepath.Base(path), cut, len(data))
				data = data[:cut]
			case how == 3:
				garbage := make([]byte, rng.IntN(200))
				for i := range garbage {
					garbage[i] = byte(rng.IntN(256))
				}
				t.Logf("replaced %s with %d random bytes", filepath.Base(path), len(garbage))
				data = garbage
			default:
				for range 1 + rng.IntN(4) {
					if len(data) == 0 {
						break
					}
					i := rng.IntN(len(data))
					data[i] ^= byte(1 + rng.IntN(255))
					t.Logf("flipped byte %d of %s", i, filepath.Base(path))
				}
			}
			if _, err := os.Stat(path); err == nil {
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		l := openTestLog(t, dir)
		defer l.Close()
		checkDamagedLog(t, l, segs, damage{seg: -1}, false, true, rng)
		// Every record, by offset and by time.
		for off := int64(0); off < corruptRecords; off += 1 + rng.Int64N(7) {
			res, err := l.Read(t.Context(), corruptTopic, 0, off, ReadOptions{MaxBytes: 1})
			if err != nil || len(res.Records) == 0 || res.Records[0].Offset != off {
				t.Fatalf("Read(%d) = %v, %v; want the record at %d", off, firstOffset(res.Records), err, off)
			}
			got, found, err := l.OffsetForTime(corruptTopic, 0, numTime(off).Add(-time.Millisecond))
			if err != nil || !found || got != off {
				t.Fatalf("OffsetForTime(record %d) = %d, %v, %v; want %d", off, got, found, err, off)
			}
		}
	})
}

func TestLog_Corrupt_GarbageMetaFile(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, metaFileName)
	for _, garbage := range []string{"{not json", "", "[1,2,3]", `{"version": 7}`} {
		if err := os.WriteFile(path, []byte(garbage), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := Open(Options{Dir: dir, Logger: discardLogger()})
		if err == nil {
			l.Close()
			t.Fatalf("Open with meta.json %q succeeded, want an error", garbage)
		}
		if !strings.Contains(err.Error(), path) {
			t.Fatalf("Open with meta.json %q: error %q does not name %s", garbage, err, path)
		}
	}
}

func TestFeature_DataDirLocked(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	defer l.Close()
	l2, err := Open(Options{Dir: dir, Logger: discardLogger()})
	if err == nil {
		l2.Close()
		t.Fatal("second Open of a locked data dir succeeded")
	}
	if !errors.Is(err, ErrDataDirLocked) {
		t.Fatalf("second Open: %v, want ErrDataDirLocked", err)
	}
	if want := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open: %q does not name the holder (%s) and the dir", err, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l3 := openTestLog(t, dir) // the lock is released on Close
	l3.Close()
}

// TestOpen_ProducerSnapshotWithNullProducer: a producer.snapshot that
// parses but holds null for a producer (damage, a hand edit) is treated as
// unreadable: Open rebuilds the producers' state from the segments instead
// of panicking, and the producer's next batch still follows on.
func TestOpen_ProducerSnapshotWithNullProducer(t *testing.T) {
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
	if err != nil {
		t.Fatalf("Open with a damaged producer snapshot: %v", err)
	}
	defer l2.Close()
	if _, err := l2.AppendIdempotent(context.Background(), "t", 0, []Record{{Value: []byte("b")}}, ProducerInfo{ID: id, Epoch: epoch, Sequence: 1}); err != nil {
		t.Fatalf("the producer's next batch after the rebuild: %v", err)
	}
}
