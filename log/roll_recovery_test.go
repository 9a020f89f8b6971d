package log

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

const leftoverTopic = "left"

// buildRollCrash makes a data dir as a process killed during a roll leaves
// it: a copy taken of an open log (the page cache survives a kill) whose
// partition has segments at 0, 10 and 20 and whose active segment was
// sealed at offset 30, as a roll seals it before it creates the new
// segment's files. afterRoll more records follow in the old segment, as
// after a roll that failed while its files were being removed. It returns
// the data dir and how many records the partition holds.
func buildRollCrash(t *testing.T, afterRoll int) (string, int64) {
	t.Helper()
	src := t.TempDir()
	l := openTestLog(t, src, func(o *Options) { o.RetentionCheckInterval, o.CleanerInterval = time.Hour, time.Hour })
	defer l.Close()
	if err := l.CreateTopic(leftoverTopic, 1, nil); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, leftoverTopic, 0)
	appendN := func(n int) {
		t.Helper()
		for range n {
			next := p.next
			if _, err := l.Append(t.Context(), leftoverTopic, 0, []Record{{Value: rollValue(next, 100)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 2 {
		appendN(10)
		rollNow(t, p)
	}
	appendN(10)
	p.mu.Lock()
	err := p.segments[len(p.segments)-1].seal()
	p.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	appendN(afterRoll)
	dir := t.TempDir()
	copyDir(t, src, dir)
	return dir, 30 + int64(afterRoll)
}

// checkRecovered opens dir and checks that the partition holds records
// 0..end-1, has segments at bases, no other segment files, found nothing to
// truncate or report, and takes an append at end; then that a reopen finds
// the same. It returns what the first open logged.
func checkRecovered(t *testing.T, dir string, end int64, bases []int64) string {
	t.Helper()
	var logged syncbuf.Buffer
	for round := range 2 {
		l := openTestLog(t, dir, func(o *Options) {
			if round == 0 {
				o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
			}
		})
		p := testPartition(t, l, leftoverTopic, 0)
		p.mu.Lock()
		var got []int64
		for _, s := range p.segments {
			got = append(got, s.base)
		}
		failed := p.failed
		p.mu.Unlock()
		if failed != nil {
			t.Fatalf("open %d: partition is read-only: %v", round, failed)
		}
		if !slices.Equal(got, bases) {
			t.Fatalf("open %d: segments at %v, want %v", round, got, bases)
		}
		checkSegmentFiles(t, p)
		recs := readAll(t, l, leftoverTopic, 0, 0)
		if int64(len(recs)) != end {
			t.Fatalf("open %d: %d records, want %d", round, len(recs), end)
		}
		for i, r := range recs {
			if r.Offset != int64(i) || !bytes.Equal(r.Value, rollValue(int64(i), 100)) {
				t.Fatalf("open %d: record %d: offset %d, value %.20q", round, i, r.Offset, r.Value)
			}
		}
		if m := l.Metrics(); m.TailTruncations.Load() != 0 || m.CorruptBatches.Load() != 0 {
			t.Fatalf("open %d: recovery truncated %d tails and found %d corrupt batches; want none", round, m.TailTruncations.Load(), m.CorruptBatches.Load())
		}
		if base, err := l.Append(t.Context(), leftoverTopic, 0, []Record{{Value: rollValue(end, 100)}}); err != nil || base != end {
			t.Fatalf("open %d: Append = %d, %v; want %d, nil", round, base, err, end)
		}
		end++
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return logged.String()
}

// TestPartition_Recover_UnfinishedRoll builds every state of the new
// segment's files a crash during a roll can leave (each of the .log,
// .index and .timeindex missing or empty, the directory not yet fsync'ed,
// so any of them may be gone), with and without appends to the old segment
// after it, and checks that open removes them: the partition opens
// writable, with its segments and every record, and no stray file.
func TestPartition_Recover_UnfinishedRoll(t *testing.T) {
	exts := []string{".log", ".index", ".timeindex"}
	for _, afterRoll := range []int{0, 3} {
		for mask := 1; mask < 1<<len(exts); mask++ {
			var made []string
			for i, ext := range exts {
				if mask&(1<<i) != 0 {
					made = append(made, ext)
				}
			}
			t.Run(fmt.Sprintf("%s/then%d", strings.Join(made, "+"), afterRoll), func(t *testing.T) {
				dir, end := buildRollCrash(t, afterRoll)
				partDir := partitionDir(dir, leftoverTopic, 0)
				for _, ext := range made {
					if err := os.WriteFile(filepath.Join(partDir, segmentName(30, ext)), nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				logged := checkRecovered(t, dir, end, []int64{0, 10, 20})
				want := []string{"level=WARN", "did not complete"}
				for _, ext := range made {
					want = append(want, segmentName(30, ext))
				}
				for _, want := range want {
					if !strings.Contains(logged, want) {
						t.Fatalf("open logged %q; want a warning naming the files removed (%q missing)", logged, want)
					}
				}
			})
		}
	}
}

// TestPartition_Recover_KeepsNewestSegmentWithData: a newest segment that
// holds a batch is data, not the leftover of a roll, whatever index files
// it has.
func TestPartition_Recover_KeepsNewestSegmentWithData(t *testing.T) {
	dir, _ := buildRollCrash(t, 0)
	partDir := partitionDir(dir, leftoverTopic, 0)
	// The roll went through and took an append, whose batch is the new
	// segment's first; its index files are gone.
	one := filepath.Join(t.TempDir(), "one")
	l := openTestLog(t, one)
	if err := l.CreateTopic(leftoverTopic, 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 31 {
		if _, err := l.Append(t.Context(), leftoverTopic, 0, []Record{{Value: rollValue(int64(i), 100)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(partitionDir(one, leftoverTopic, 0), segmentName(0, ".log")))
	if err != nil {
		t.Fatal(err)
	}
	last := lastBatch(t, data)
	if err := os.WriteFile(filepath.Join(partDir, segmentName(30, ".log")), last, 0o644); err != nil {
		t.Fatal(err)
	}
	checkRecovered(t, dir, 31, []int64{0, 10, 20, 30})
}

// lastBatch returns the last batch of a segment file's bytes.
func lastBatch(t *testing.T, data []byte) []byte {
	t.Helper()
	var last []byte
	for pos := 0; pos < len(data); {
		_, size := frameLength(data[pos:])
		last = data[pos : pos+size]
		pos += size
	}
	if _, _, reason := checkBatch(last); reason != "" {
		t.Fatal(reason)
	}
	return last
}

// TestPartition_Recover_KeepsEmptyNewestSegmentPastAGap: an empty newest
// segment whose base lies past the end of the batches before it (as when
// compaction dropped the last records of the segment before it) holds the
// log's end offset: it stays, so that no offset is handed out twice.
func TestPartition_Recover_KeepsEmptyNewestSegmentPastAGap(t *testing.T) {
	dir, _ := buildRollCrash(t, 0)
	partDir := partitionDir(dir, leftoverTopic, 0)
	if err := os.WriteFile(filepath.Join(partDir, segmentName(35, ".log")), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := openTestLog(t, dir)
	defer l.Close()
	if base, err := l.Append(t.Context(), leftoverTopic, 0, []Record{{Value: rollValue(35, 100)}}); err != nil || base != 35 {
		t.Fatalf("Append = %d, %v; want 35, nil", base, err)
	}
	p := testPartition(t, l, leftoverTopic, 0)
	checkSegmentFiles(t, p)
	if n := len(readAll(t, l, leftoverTopic, 0, 0)); n != 31 {
		t.Fatalf("%d records, want 31", n)
	}
}

// TestPartition_Recover_KeepsEmptySegmentOfCompletedRoll: a roll that
// completed (its producer snapshot written at the new base) and took no
// append before a crash leaves an empty newest segment that is the active
// one, not a leftover: it stays, and the segment before it stays sealed
// (compaction may clean it).
func TestPartition_Recover_KeepsEmptySegmentOfCompletedRoll(t *testing.T) {
	src := t.TempDir()
	l := openTestLog(t, src, func(o *Options) { o.RetentionCheckInterval, o.CleanerInterval = time.Hour, time.Hour })
	defer l.Close()
	if err := l.CreateTopic(leftoverTopic, 1, nil); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, l, leftoverTopic, 0)
	for i := range 10 {
		if _, err := l.Append(t.Context(), leftoverTopic, 0, []Record{{Value: rollValue(int64(i), 100)}}); err != nil {
			t.Fatal(err)
		}
	}
	rollNow(t, p)
	dir := t.TempDir()
	copyDir(t, src, dir)
	checkRecovered(t, dir, 10, []int64{0, 10})
}

// TestPartition_Recover_ProducerStateWithoutSnapshot: a missing (or
// unreadable, or stale) producer snapshot makes open rebuild the producers'
// state from every sealed segment after the snapshot's offset, not only from
// the one that holds it and the newest: a retry of an idempotent batch that
// lies in a sealed segment in between is recognized as a duplicate, not
// appended a second time at new offsets.
func TestPartition_Recover_ProducerStateWithoutSnapshot(t *testing.T) {
	for _, snapshot := range []string{"missing", "garbage", "stale"} {
		t.Run(snapshot, func(t *testing.T) {
			dir := t.TempDir()
			l := openTestLog(t, dir, func(o *Options) { o.RetentionCheckInterval, o.CleanerInterval = time.Hour, time.Hour })
			if err := l.CreateTopic(leftoverTopic, 1, nil); err != nil {
				t.Fatal(err)
			}
			p := testPartition(t, l, leftoverTopic, 0)
			plain := func(n int) {
				t.Helper()
				for range n {
					if _, err := l.Append(t.Context(), leftoverTopic, 0, []Record{{Value: []byte("plain")}}); err != nil {
						t.Fatal(err)
					}
				}
			}
			id, epoch, err := l.InitProducerID()
			if err != nil {
				t.Fatal(err)
			}
			batch := func(seq int32) []Record {
				return []Record{{Value: fmt.Appendf(nil, "p%d", seq)}, {Value: fmt.Appendf(nil, "p%d", seq+1)}}
			}
			plain(5)
			rollNow(t, p) // segment 0: 0..4
			for _, seq := range []int32{0, 2} {
				if _, err := l.AppendIdempotent(t.Context(), leftoverTopic, 0, batch(seq), ProducerInfo{ID: id, Epoch: epoch, Sequence: seq}); err != nil {
					t.Fatal(err)
				}
			}
			rollNow(t, p) // segment 5: the producer's batches at 5..6 and 7..8
			plain(3)
			rollNow(t, p) // segment 9: 9..11
			plain(1)      // active segment 12
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			snap := filepath.Join(partitionDir(dir, leftoverTopic, 0), producerSnapshotFile)
			switch snapshot {
			case "missing":
				err = os.Remove(snap)
			case "garbage":
				err = os.WriteFile(snap, []byte("{not json"), 0o644)
			case "stale": // two snapshot writes in a row failed (disk full, say)
				err = newProducerState().writeSnapshot(filepath.Dir(snap), 0)
			}
			if err != nil {
				t.Fatal(err)
			}

			l = openTestLog(t, dir)
			defer l.Close()
			for _, seq := range []int32{0, 2} {
				want := 5 + int64(seq)
				base, err := l.AppendIdempotent(t.Context(), leftoverTopic, 0, batch(seq), ProducerInfo{ID: id, Epoch: epoch, Sequence: seq})
				if err != nil || base != want {
					t.Fatalf("retry of the batch at %d after a reopen with the snapshot %s = %d, %v; want %d (a duplicate), nil", want, snapshot, base, err, want)
				}
			}
			if _, end, err := l.Offsets(leftoverTopic, 0); err != nil || end != 13 {
				t.Fatalf("log end %d, %v after the retry; want 13 (nothing appended)", end, err)
			}
		})
	}
}

// TestPartition_Recover_EmptyNewestAfterDamagedSegment: an empty newest
// segment after a segment whose last batch is damaged (as no roll leaves
// it: a roll fsyncs the old segment before it creates the new one's files)
// stays, whatever the producer snapshot says: the damage is reported, the
// records before it read back, and the offsets of the damaged batch are
// never handed out again.
func TestPartition_Recover_EmptyNewestAfterDamagedSegment(t *testing.T) {
	for _, damage := range []string{"torn", "flipped"} {
		t.Run(damage, func(t *testing.T) {
			dir, _ := buildRollCrash(t, 0)
			partDir := partitionDir(dir, leftoverTopic, 0)
			last := filepath.Join(partDir, segmentName(20, ".log"))
			fi, err := os.Stat(last)
			if err != nil {
				t.Fatal(err)
			}
			switch damage {
			case "torn":
				err = os.Truncate(last, fi.Size()-7)
			case "flipped":
				var f *os.File
				if f, err = os.OpenFile(last, os.O_RDWR, 0); err == nil {
					_, err = f.WriteAt([]byte{'X'}, fi.Size()-3)
					f.Close()
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(partDir, segmentName(30, ".log")), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				l := openTestLog(t, dir)
				p := testPartition(t, l, leftoverTopic, 0)
				if m := l.Metrics(); m.CorruptBatches.Load() != 1 || m.TailTruncations.Load() != 0 {
					t.Fatalf("open %d: %d corrupt batches reported, %d tails truncated; want 1, 0", round, m.CorruptBatches.Load(), m.TailTruncations.Load())
				}
				res, err := l.Read(t.Context(), leftoverTopic, 0, 0, ReadOptions{MaxBytes: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Records) != 29 {
					t.Fatalf("open %d: read %d records before the damage, want 29", round, len(res.Records))
				}
				for i, r := range res.Records {
					if r.Offset != int64(i) || !bytes.Equal(r.Value, rollValue(int64(i), 100)) {
						t.Fatalf("open %d: record %d: offset %d, value %.20q", round, i, r.Offset, r.Value)
					}
				}
				if _, err := l.Read(t.Context(), leftoverTopic, 0, 29, ReadOptions{MaxBytes: 1 << 20}); !IsCorruption(err) {
					t.Fatalf("open %d: read at the damaged offset 29: %v; want a corruption error", round, err)
				}
				want := 30 + int64(round)
				if base, err := l.Append(t.Context(), leftoverTopic, 0, []Record{{Value: rollValue(want, 100)}}); err != nil || base != want {
					t.Fatalf("open %d: Append = %d, %v; want %d, nil (offset 29 is the damaged record's)", round, base, err, want)
				}
				checkSegmentFiles(t, p)
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestPartition_Recover_OddSegmentFiles: states no roll leaves, built by
// hand. Open must keep every record, hand out no offset twice and stay
// writable: two empty segments at the end; the leftovers of a roll in a
// partition with a single segment; index files of the active or a sealed
// segment missing, one of two; files with names that are no segment's.
func TestPartition_Recover_OddSegmentFiles(t *testing.T) {
	type state struct {
		name   string
		build  func(t *testing.T) (dir string, end int64)
		change func(t *testing.T, partDir string)
		bases  []int64 // the segments open must end up with
		next   int64   // where the first append must go
	}
	write := func(t *testing.T, partDir string, names ...string) {
		t.Helper()
		for _, name := range names {
			if err := os.WriteFile(filepath.Join(partDir, name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(t *testing.T, partDir string, names ...string) {
		t.Helper()
		for _, name := range names {
			if err := os.Remove(filepath.Join(partDir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	threeSegments := func(t *testing.T) (string, int64) { return buildRollCrash(t, 0) }
	oneSegment := func(t *testing.T) (string, int64) {
		src := t.TempDir()
		l := openTestLog(t, src)
		defer l.Close()
		if err := l.CreateTopic(leftoverTopic, 1, nil); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if _, err := l.Append(t.Context(), leftoverTopic, 0, []Record{{Value: rollValue(int64(i), 100)}}); err != nil {
				t.Fatal(err)
			}
		}
		dir := t.TempDir()
		copyDir(t, src, dir)
		return dir, 10
	}
	states := []state{
		{name: "two empty segments at the end", build: threeSegments, change: func(t *testing.T, d string) {
			write(t, d, segmentName(30, ".log"), segmentName(40, ".log"))
		}, bases: []int64{0, 10, 20, 30, 40}, next: 40},
		{name: "single segment, empty .log of an unfinished roll", build: oneSegment, change: func(t *testing.T, d string) {
			write(t, d, segmentName(10, ".log"), segmentName(10, ".timeindex"))
		}, bases: []int64{0}, next: 10},
		{name: "single segment, index files of an unfinished roll", build: oneSegment, change: func(t *testing.T, d string) {
			write(t, d, segmentName(10, ".index"), segmentName(10, ".timeindex"))
		}, bases: []int64{0}, next: 10},
		{name: "active segment without index files", build: threeSegments, change: func(t *testing.T, d string) {
			remove(t, d, segmentName(20, ".index"), segmentName(20, ".timeindex"))
		}, bases: []int64{0, 10, 20}, next: 30},
		{name: "active segment with a time index only", build: threeSegments, change: func(t *testing.T, d string) {
			remove(t, d, segmentName(20, ".index"))
		}, bases: []int64{0, 10, 20}, next: 30},
		{name: "sealed segment with a time index only, leftover after it", build: threeSegments, change: func(t *testing.T, d string) {
			remove(t, d, segmentName(10, ".index"))
			write(t, d, segmentName(30, ".log"))
		}, bases: []int64{0, 10, 20}, next: 30},
		{name: "sealed segment with an offset index only", build: threeSegments, change: func(t *testing.T, d string) {
			remove(t, d, segmentName(0, ".timeindex"))
		}, bases: []int64{0, 10, 20}, next: 30},
	}
	for _, st := range states {
		t.Run(st.name, func(t *testing.T) {
			dir, end := st.build(t)
			partDir := partitionDir(dir, leftoverTopic, 0)
			st.change(t, partDir)
			// Files that are no segment's stay as they are.
			strays := []string{"notes.txt", "foo.index", segmentName(20, ".index.bak"), segmentName(30, ".log.old")}
			write(t, partDir, strays...)
			for round := range 2 {
				l := openTestLog(t, dir)
				p := testPartition(t, l, leftoverTopic, 0)
				p.mu.Lock()
				var bases []int64
				for _, s := range p.segments {
					bases = append(bases, s.base)
				}
				p.mu.Unlock()
				if !slices.Equal(bases, st.bases) {
					t.Fatalf("open %d: segments at %v, want %v", round, bases, st.bases)
				}
				if m := l.Metrics(); m.CorruptBatches.Load() != 0 || m.TailTruncations.Load() != 0 {
					t.Fatalf("open %d: %d corrupt batches, %d tails truncated; want none", round, m.CorruptBatches.Load(), m.TailTruncations.Load())
				}
				recs := readAll(t, l, leftoverTopic, 0, 0)
				if int64(len(recs)) != end+int64(round) {
					t.Fatalf("open %d: %d records, want %d", round, len(recs), end+int64(round))
				}
				for i, r := range recs[:end] {
					if r.Offset != int64(i) || !bytes.Equal(r.Value, rollValue(int64(i), 100)) {
						t.Fatalf("open %d: record %d: offset %d, value %.20q", round, i, r.Offset, r.Value)
					}
				}
				want := st.next + int64(round)
				if base, err := l.Append(t.Context(), leftoverTopic, 0, []Record{{Value: rollValue(want, 100)}}); err != nil || base != want {
					t.Fatalf("open %d: Append = %d, %v; want %d, nil", round, base, err, want)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range strays {
				if _, err := os.Stat(filepath.Join(partDir, name)); err != nil {
					t.Errorf("open removed (or lost) %s, no segment's file: %v", name, err)
				}
			}
		})
	}
}

// TestPartition_Recover_CompactedSegmentBeforeEmptyNewest: a roll that
// completed but whose producer snapshot write failed (disk full) leaves an
// empty active segment and a snapshot below its base; the cleaner may then
// clean the segment before it. Whatever the cleaning left (whole batches
// dropped, at the end or at the start; records dropped from inside a batch,
// which keeps its offset range), open keeps every surviving record, and
// the first append goes to the empty segment's base: no offset the
// cleaned segment held is handed out again.
func TestPartition_Recover_CompactedSegmentBeforeEmptyNewest(t *testing.T) {
	type kvRec struct{ key, value string } // value "" is a tombstone
	cases := []struct {
		name    string
		batches [][]kvRec // appended to segment 0, one Append each
		want    []string  // what survives the cleaning, as kv renders it
		end     int64     // the empty segment's base
	}{
		{"last batch dropped", [][]kvRec{{{"a", "1"}}, {{"b", "1"}}, {{"b", ""}}}, []string{"0:a=1"}, 3},
		{"first batch dropped", [][]kvRec{{{"a", "1"}}, {{"b", "1"}}, {{"a", "2"}}}, []string{"1:b=1", "2:a=2"}, 3},
		{"records dropped inside a batch", [][]kvRec{{{"a", "1"}, {"a", "2"}}, {{"b", "1"}, {"b", "2"}}}, []string{"1:a=2", "3:b=2"}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := t.TempDir()
			clock := newTestClock()
			l := openCompactLog(t, src, clock)
			defer l.Close()
			if err := l.CreateTopic(leftoverTopic, 1, map[string]string{ConfigCleanupPolicy: "compact", ConfigDeleteRetentionMs: "0"}); err != nil {
				t.Fatal(err)
			}
			p := testPartition(t, l, leftoverTopic, 0)
			for _, b := range c.batches {
				var recs []Record
				for _, r := range b {
					rec := Record{Key: []byte(r.key)}
					if r.value != "" {
						rec.Value = []byte(r.value)
					}
					recs = append(recs, rec)
				}
				if _, err := l.Append(t.Context(), leftoverTopic, 0, recs); err != nil {
					t.Fatal(err)
				}
			}
			rollNow(t, p)
			compactNow(t, p, true)     // the cleaner first sees the tombstones
			clock.advance(time.Minute) // past delete.retention.ms since then
			compactNow(t, p, true)
			wantRecords(t, "after the cleaning", readAll(t, l, leftoverTopic, 0, 0), c.want)
			dir := t.TempDir()
			copyDir(t, src, dir)
			partDir := partitionDir(dir, leftoverTopic, 0)
			if err := newProducerState().writeSnapshot(partDir, 0); err != nil { // the roll's write of it failed
				t.Fatal(err)
			}

			for round := range 2 {
				l := openCompactLog(t, dir, clock)
				if m := l.Metrics(); m.CorruptBatches.Load() != 0 || m.TailTruncations.Load() != 0 {
					t.Fatalf("open %d: %d corrupt batches, %d tails truncated; want none", round, m.CorruptBatches.Load(), m.TailTruncations.Load())
				}
				wantRecords(t, fmt.Sprintf("open %d", round), readAll(t, l, leftoverTopic, 0, 0), c.want)
				off := put(t, l, leftoverTopic, "z", []byte("z"))
				if want := c.end + int64(round); off != want {
					t.Fatalf("open %d: append went to offset %d, want %d", round, off, want)
				}
				c.want = append(c.want, fmt.Sprintf("%d:z=z", off))
				checkSegmentFiles(t, testPartition(t, l, leftoverTopic, 0))
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
