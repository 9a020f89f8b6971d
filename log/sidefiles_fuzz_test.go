package log

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The files beside a partition's segments are derived data: the offset and
// time indexes of each sealed segment, the cleaner's checkpoint and the
// producer snapshot. A damaged one may cost a rebuild, never a panic, a
// failed open or a record read wrong.

// sideFiles are the files FuzzSideFiles damages, by the fuzzer's choice.
var sideFiles = []string{
	segmentName(0, ".index"),
	segmentName(0, ".timeindex"),
	cleanerCheckpointFile,
	producerSnapshotFile,
}

// sideTemplate is a data dir holding compacted topic f, with several sealed
// segments written by an idempotent producer and one compaction pass, and
// the records it holds after that.
func sideTemplate(f *testing.F) (string, []Record) {
	dir := fuzzTempDir(f)
	l, err := Open(Options{Dir: dir, Logger: discardLogger()})
	if err != nil {
		f.Fatal(err)
	}
	if err := l.CreateTopic(fuzzTopic, 1, map[string]string{ConfigCleanupPolicy: "compact", ConfigSegmentBytes: "300"}); err != nil {
		f.Fatal(err)
	}
	id, epoch, err := l.InitProducerID()
	if err != nil {
		f.Fatal(err)
	}
	now := time.UnixMilli(1_700_000_000_000)
	for i := range 20 {
		recs := []Record{{Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "v%d", i), Timestamp: now.Add(time.Duration(i) * time.Second)}}
		if _, err := l.AppendIdempotent(f.Context(), fuzzTopic, 0, recs, ProducerInfo{ID: id, Epoch: epoch, Sequence: int32(i)}); err != nil {
			f.Fatal(err)
		}
	}
	l.Compact(f.Context())
	want := readSideAll(f, l)
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	for _, name := range sideFiles {
		if _, err := os.Stat(filepath.Join(partitionDir(dir, fuzzTopic, 0), name)); err != nil {
			f.Fatalf("template lacks %s: %v", name, err)
		}
	}
	return dir, want
}

func readSideAll(t testing.TB, l *Log) []Record {
	t.Helper()
	start, end, err := l.Offsets(fuzzTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []Record
	for from := start; from < end; {
		res, err := l.Read(t.Context(), fuzzTopic, 0, from, ReadOptions{MaxBytes: 1 << 10})
		if err != nil {
			t.Fatalf("Read(%d): %v", from, err)
		}
		got = append(got, res.Records...)
		if res.NextOffset <= from {
			break
		}
		from = res.NextOffset
	}
	return got
}

// FuzzSideFiles writes arbitrary bytes as one of the side files of a
// partition (which one is the fuzzer's choice), opens the log and reads
// everything back: opening succeeds, every record reads as written, time
// lookups find the right offsets, compaction runs, and the log takes new
// appends where it ends.
func FuzzSideFiles(f *testing.F) {
	template, want := sideTemplate(f)
	pdir := partitionDir(template, fuzzTopic, 0)
	for i, name := range sideFiles {
		b, err := os.ReadFile(filepath.Join(pdir, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
		f.Add(uint8(i), []byte{})
		if len(b) > 0 {
			f.Add(uint8(i), b[:len(b)-1])
			flipped := slices.Clone(b)
			flipped[len(flipped)/2] ^= 0x41
			f.Add(uint8(i), flipped)
		}
	}
	var idx []byte
	for _, e := range [][2]uint32{{0, 0}, {1, 1 << 30}, {5, 40}, {3, 80}} {
		idx = binary.BigEndian.AppendUint32(idx, e[0])
		idx = binary.BigEndian.AppendUint32(idx, e[1])
	}
	f.Add(uint8(0), idx)
	f.Add(uint8(2), []byte("1\n999999\n5 1\n3 2\n"))
	f.Add(uint8(2), []byte("1\n-3\n"))
	f.Add(uint8(3), []byte(`{"offset":99999,"producers":{"1":null}}`))
	f.Add(uint8(3), []byte(`{"offset":-1,"producers":{}}`))
	f.Add(uint8(3), []byte(`{"offset":3,"producers":{"5":{}}}`))

	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		dir := fuzzTempDir(t)
		copyDir(t, template, dir)
		name := sideFiles[int(which)%len(sideFiles)]
		if err := os.WriteFile(filepath.Join(partitionDir(dir, fuzzTopic, 0), name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		l := openTestLog(t, dir, func(o *Options) { o.FlushInterval = time.Hour })
		defer l.Close()
		got := readSideAll(t, l)
		if len(got) != len(want) {
			t.Fatalf("with %s damaged: read %d records, want %d", name, len(got), len(want))
		}
		for i := range want {
			if !sameRecord(got[i], want[i]) {
				t.Fatalf("with %s damaged: record %d reads offset %d %q, want offset %d %q", name, i, got[i].Offset, got[i].Value, want[i].Offset, want[i].Value)
			}
		}
		for _, r := range want {
			off, found, err := l.OffsetForTime(fuzzTopic, 0, r.Timestamp)
			if err != nil || !found || off != r.Offset {
				t.Fatalf("with %s damaged: OffsetForTime(%d) = %d, %v, %v; want %d", name, r.Timestamp.UnixMilli(), off, found, err, r.Offset)
			}
		}
		l.Compact(t.Context())
		_, end, err := l.Offsets(fuzzTopic, 0)
		if err != nil {
			t.Fatal(err)
		}
		base, err := l.Append(t.Context(), fuzzTopic, 0, []Record{{Key: []byte("k"), Value: []byte("after")}})
		if err != nil || base != end {
			t.Fatalf("with %s damaged: Append = %d, %v; want %d, nil", name, base, err, end)
		}
	})
}
