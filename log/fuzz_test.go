package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Fuzz targets for the segment reader and the batch decoder. Run one for a
// while with
//
//	go test -run XXX -fuzz FuzzSegmentReader -fuzztime 3m ./log/
//
// Crashers land in testdata/fuzz/<target>/ and run as regression seeds with
// every plain go test.

const fuzzTopic = "f"

// fuzzBatches encodes n small batches holding records from offset from on,
// with their base offsets set as the log would set them.
func fuzzBatches(from int64, n int, compression string, p ProducerInfo) []byte {
	var out []byte
	now := time.UnixMilli(1_700_000_000_000)
	for i := range n {
		recs := make([]Record, 1+i%3)
		for j := range recs {
			off := from + int64(j)
			recs[j] = Record{
				Key:       []byte(fmt.Sprintf("key-%d", off)),
				Value:     bytes.Repeat([]byte{byte('a' + off%26)}, int(off%50)),
				Timestamp: now.Add(time.Duration(off) * time.Second),
			}
			if off%4 == 0 {
				recs[j].Headers = []Header{{Key: "h", Value: []byte("v")}, {Key: "empty"}}
			}
		}
		b := encodeBatch(recs, now, compression, p)
		setBaseOffset(b, from)
		if p.ID >= 0 {
			p.Sequence += int32(len(recs))
		}
		out = append(out, b...)
		from += int64(len(recs))
	}
	return out
}

func addSegmentSeeds(f *testing.F) {
	valid := fuzzBatches(0, 6, "none", noProducer)
	f.Add([]byte{})
	f.Add(valid)
	f.Add(fuzzBatches(0, 4, "gzip", noProducer))
	f.Add(fuzzBatches(0, 4, "snappy", noProducer))
	f.Add(fuzzBatches(0, 4, "lz4", noProducer))
	f.Add(fuzzBatches(0, 4, "zstd", noProducer))
	f.Add(fuzzBatches(0, 5, "none", ProducerInfo{ID: 7, Epoch: 1, Sequence: 0}))
	f.Add(withLogAppendTime(fuzzBatches(0, 1, "none", noProducer), time.UnixMilli(1_800_000_000_000)))
	f.Add(valid[:len(valid)-1])                         // torn last batch
	f.Add(valid[:batchLengthPrefix+3])                  // torn header
	f.Add(append(append([]byte{}, valid...), 0, 0, 0))  // trailing zeros
	f.Add(append(append([]byte{}, valid...), valid...)) // offsets that repeat
	flipped := append([]byte{}, valid...)
	flipped[len(flipped)/2] ^= 0x10
	f.Add(flipped) // damage in the middle, sound batches after it
	base := append([]byte{}, valid...)
	base[3] ^= 0x01 // base offset of the first batch, outside the CRC
	f.Add(base)
	f.Add(append(fuzzBatches(0, 3, "none", noProducer), fuzzBatches(10, 2, "none", noProducer)...)) // a gap
	f.Add(bytes.Repeat([]byte{0xff}, 200))
}

// fuzzTempDir is a temp dir on tmpfs when there is one: opening and
// closing a log fsyncs, which on a busy disk would hold up every fuzz run.
func fuzzTempDir(t testing.TB) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "tributary-fuzz-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// fuzzTemplate is a data dir holding topic f with one partition, written
// with the Log API and closed; each fuzz run copies it.
func fuzzTemplate(f *testing.F) string {
	dir := fuzzTempDir(f)
	l, err := Open(Options{Dir: dir, Logger: discardLogger()})
	if err != nil {
		f.Fatal(err)
	}
	if err := l.CreateTopic(fuzzTopic, 1, nil); err != nil {
		f.Fatal(err)
	}
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	return dir
}

// refRecords walks data batch by batch, as the log frames it, and returns
// the records of the valid prefix (whole, CRC-valid, decodable batches with
// offsets rising from 0 without a gap) and every record of every CRC-valid
// batch met on the way, by offset (several batches may claim one offset).
func refRecords(data []byte, bound int64) (prefix []Record, all map[int64][]Record) {
	all = map[int64][]Record{}
	inPrefix, next := true, int64(0)
	for pos := 0; len(data)-pos >= batchLengthPrefix; {
		_, size := frameLength(data[pos:])
		if size < batchHeaderSize || size > len(data)-pos {
			break
		}
		kb, meta, reason := checkBatch(data[pos : pos+size])
		pos += size
		if reason != "" {
			inPrefix = false
			continue
		}
		recs, err := decodeRecords(nil, &kb, 0)
		if err != nil || meta.BaseOffset != next || meta.LastOffset >= bound {
			inPrefix = false
		}
		next = meta.LastOffset + 1
		if err != nil || meta.IsControl {
			continue
		}
		for _, r := range recs {
			all[r.Offset] = append(all[r.Offset], r)
		}
		if inPrefix {
			prefix = append(prefix, recs...)
		}
	}
	return prefix, all
}

func sameRecord(a, b Record) bool {
	if a.Offset != b.Offset || !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) ||
		a.Timestamp.UnixMilli() != b.Timestamp.UnixMilli() || len(a.Headers) != len(b.Headers) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !bytes.Equal(a.Headers[i].Value, b.Headers[i].Value) {
			return false
		}
	}
	return true
}

// FuzzSegmentReader writes arbitrary bytes as the only segment of a
// partition, opens the log and reads everything back. Opening and reading
// never panic; every record read comes from a CRC-valid batch of the input,
// at that batch's offsets; the valid prefix of the input reads back whole
// and identical; damage shows only as a *CorruptionError; time lookups
// within the prefix find the right offset; and the log takes new appends
// where it ends.
func FuzzSegmentReader(f *testing.F) {
	addSegmentSeeds(f)
	template := fuzzTemplate(f)
	f.Fuzz(func(t *testing.T, data []byte) { checkFuzzSegment(t, template, data, false) })
}

// FuzzSealedSegmentReader is FuzzSegmentReader with the arbitrary bytes as
// a sealed segment: an older one, followed by an empty active segment at
// offset fuzzSealedBound. Recovery leaves damage there in place, so reads
// must report it.
func FuzzSealedSegmentReader(f *testing.F) {
	addSegmentSeeds(f)
	template := fuzzTemplate(f)
	f.Fuzz(func(t *testing.T, data []byte) { checkFuzzSegment(t, template, data, true) })
}

const fuzzSealedBound = 1000

func checkFuzzSegment(t *testing.T, template string, data []byte, sealed bool) {
	dir := fuzzTempDir(t)
	copyDir(t, template, dir)
	pdir := partitionDir(dir, fuzzTopic, 0)
	if err := os.WriteFile(filepath.Join(pdir, segmentName(0, ".log")), data, 0o644); err != nil {
		t.Fatal(err)
	}
	bound := int64(math.MaxInt64)
	if sealed {
		bound = fuzzSealedBound
		if err := os.WriteFile(filepath.Join(pdir, segmentName(bound, ".log")), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prefix, all := refRecords(data, bound)

	l := openTestLog(t, dir, func(o *Options) { o.FlushInterval = time.Hour })
	defer l.Close()
	start, end, err := l.Offsets(fuzzTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if start != 0 || sealed && end != bound {
		t.Fatalf("log offsets [%d, %d), want [0, %d) for a sealed segment", start, end, bound)
	}
	var got []Record
	for from := start; from < end; {
		res, err := l.Read(t.Context(), fuzzTopic, 0, from, ReadOptions{MaxBytes: 1 << 10})
		if err != nil {
			if !IsCorruption(err) {
				t.Fatalf("Read(%d): %v, want nil or a *CorruptionError", from, err)
			}
			if from < bound && bound < end {
				from = bound // a sealed segment's damage ends with it
				continue
			}
			break
		}
		for _, r := range res.Records {
			if n := len(got); n > 0 && r.Offset <= got[n-1].Offset {
				t.Fatalf("read offset %d after %d", r.Offset, got[n-1].Offset)
			}
			if !slices.ContainsFunc(all[r.Offset], func(w Record) bool { return sameRecord(r, w) }) {
				t.Fatalf("read a record at offset %d (key %q, value %q) that no CRC-valid batch of the input holds there", r.Offset, r.Key, r.Value)
			}
			got = append(got, r)
		}
		if res.NextOffset <= from {
			break
		}
		from = res.NextOffset
	}
	if len(got) < len(prefix) {
		t.Fatalf("read %d records, but the valid prefix of the input holds %d", len(got), len(prefix))
	}
	for i, want := range prefix {
		if !sameRecord(got[i], want) {
			t.Fatalf("record %d of the valid prefix: read offset %d %q, want offset %d %q", i, got[i].Offset, got[i].Value, want.Offset, want.Value)
		}
	}

	// Time lookups: within the prefix they must be exact; elsewhere
	// they must not panic and fail only with corruption.
	for i, r := range prefix {
		if i%3 != 0 && i != len(prefix)-1 {
			continue
		}
		ts := r.Timestamp.UnixMilli()
		want := int64(-1)
		for _, p := range prefix {
			if p.Timestamp.UnixMilli() >= ts {
				want = p.Offset
				break
			}
		}
		off, found, err := l.OffsetForTime(fuzzTopic, 0, time.UnixMilli(ts))
		if err != nil || !found || off != want {
			t.Fatalf("OffsetForTime(%d) = %d, %v, %v; want %d, true, nil", ts, off, found, err, want)
		}
	}
	for _, ts := range []int64{-1, 0, 1_700_000_000_000, 1 << 62} {
		if _, _, err := l.OffsetForTime(fuzzTopic, 0, time.UnixMilli(ts)); err != nil && !IsCorruption(err) {
			t.Fatalf("OffsetForTime(%d): %v", ts, err)
		}
	}

	base, err := l.Append(t.Context(), fuzzTopic, 0, []Record{{Value: []byte("after")}})
	if err != nil || base != end {
		t.Fatalf("Append = %d, %v; want %d, nil", base, err, end)
	}
	res, err := l.Read(t.Context(), fuzzTopic, 0, end, ReadOptions{})
	if err != nil || len(res.Records) != 1 || string(res.Records[0].Value) != "after" {
		t.Fatalf("Read(%d) of the new record: %v, %v", end, res.Records, err)
	}
}

// FuzzDecodeBatch feeds arbitrary bytes to checkBatch and decodeRecords.
// With fixCRC the length, magic and CRC are made valid first, so the fuzzer
// reaches the record decoder. Neither panics; a batch that decodes yields
// exactly its record count, at rising offsets inside the batch, and the
// records encode and decode again to the same records.
func FuzzDecodeBatch(f *testing.F) {
	for _, comp := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		b := fuzzBatches(5, 1, comp, noProducer)
		f.Add(b, false)
		f.Add(b[:len(b)-2], true)
		f.Add(fuzzBatches(0, 3, comp, ProducerInfo{ID: 1, Epoch: 0, Sequence: 0})[:70], true)
	}
	f.Add(make([]byte, batchHeaderSize), true)
	f.Add([]byte("not a batch"), false)
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		data = bytes.Clone(data)
		if fixCRC && len(data) >= batchHeaderSize {
			binary.BigEndian.PutUint32(data[8:], uint32(len(data)-batchLengthPrefix))
			data[16] = batchMagic
			setBatchCRC(data)
		}
		kb, meta, reason := checkBatch(data)
		if reason != "" {
			return
		}
		if meta.Size != len(data) || meta.LastOffset < meta.BaseOffset {
			t.Fatalf("meta %+v of a %d-byte batch", meta, len(data))
		}
		recs, err := decodeRecords(nil, &kb, math.MinInt64)
		if err != nil {
			return
		}
		if int32(len(recs)) != kb.NumRecords {
			t.Fatalf("decoded %d records, the batch says %d", len(recs), kb.NumRecords)
		}
		for i, r := range recs {
			if r.Offset < meta.BaseOffset || r.Offset > meta.LastOffset || i > 0 && r.Offset <= recs[i-1].Offset {
				t.Fatalf("record %d at offset %d; batch holds %d..%d", i, r.Offset, meta.BaseOffset, meta.LastOffset)
			}
		}
		if len(recs) == 0 {
			return
		}
		// Round trip: the records survive encoding again (offsets are
		// renumbered from the base, as an append would).
		again := encodeBatch(recs, time.Now(), "none", noProducer)
		kb2, _, reason := checkBatch(again)
		if reason != "" {
			t.Fatalf("re-encoded batch does not check out: %s", reason)
		}
		recs2, err := decodeRecords(nil, &kb2, 0)
		if err != nil || len(recs2) != len(recs) {
			t.Fatalf("re-encoded batch: %d records, %v; want %d", len(recs2), err, len(recs))
		}
		for i := range recs {
			r := recs[i]
			r.Offset = int64(i)
			if !sameRecord(r, recs2[i]) {
				t.Fatalf("record %d changed in a round trip: %+v became %+v", i, r, recs2[i])
			}
		}
	})
}
