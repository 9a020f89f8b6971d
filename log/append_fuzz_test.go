package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tests of the produce path (AppendRaw): the batches a Kafka client sends
// are untrusted input. A batch is stored only if every record in it reads
// back; its decompression is bounded.

// mutateBatch decodes b, lets mut change it and encodes it again with a
// valid length and CRC.
func mutateBatch(t testing.TB, b []byte, mut func(kb *kmsg.RecordBatch)) []byte {
	t.Helper()
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	mut(&kb)
	out := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-batchLengthPrefix))
	setBatchCRC(out)
	return out
}

// refDecode decodes the records of a batch independently of the log: it
// decompresses with franz-go and reads records until the bytes run out,
// whatever the batch's record count says. ok is false when a record does
// not decode.
func refDecode(kb *kmsg.RecordBatch) (recs []kmsg.Record, ok bool) {
	raw := kb.Records
	if codec := kgo.CompressionCodecType(kb.Attributes & attrCompressionMask); codec != kgo.CodecNone {
		out, err := kgo.DefaultDecompressor().Decompress(raw, codec)
		if err != nil {
			return nil, false
		}
		raw = out
	}
	for len(raw) > 0 {
		l, n := binary.Varint(raw)
		if n <= 0 || l < 0 || int64(len(raw)-n) < l {
			return nil, false
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(raw[:n+int(l)]); err != nil {
			return nil, false
		}
		recs = append(recs, kr)
		raw = raw[n+int(l):]
	}
	return recs, true
}

// FuzzAppendRaw appends arbitrary bytes as a produced batch (with fixCRC,
// after making the length, magic and CRC valid, so that the record checks
// are reached). AppendRaw never panics. A batch it refuses takes no offset
// and fails with ErrUnsupportedBatch or ErrRecordTooLarge (or a producer
// state error). A batch it accepts takes exactly one offset per record,
// and reading from its base returns every record the bytes hold (decoded
// independently, not trusting the record count), unchanged.
func FuzzAppendRaw(f *testing.F) {
	recs := []Record{
		{Key: []byte("k0"), Value: []byte("v0"), Timestamp: time.UnixMilli(1_700_000_000_000)},
		{Value: []byte("v1"), Headers: []Header{{Key: "h", Value: []byte("x")}}, Timestamp: time.UnixMilli(1_700_000_000_500)},
		{Key: []byte("k2"), Timestamp: time.UnixMilli(1_699_999_999_000)},
	}
	for _, comp := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		b := encodeBatch(recs, time.Now(), comp, noProducer)
		f.Add(b, false)
		f.Add(b, true)
		f.Add(encodeBatch(recs[:1], time.Now(), comp, ProducerInfo{ID: 3, Epoch: 0, Sequence: 0}), false)
	}
	none := encodeBatch(recs, time.Now(), "none", noProducer)
	f.Add(mutateBatch(f, none, func(kb *kmsg.RecordBatch) { kb.NumRecords = 1 }), false)
	f.Add(mutateBatch(f, none, func(kb *kmsg.RecordBatch) { kb.NumRecords, kb.LastOffsetDelta = 1, 0 }), false)
	f.Add(mutateBatch(f, none, func(kb *kmsg.RecordBatch) { kb.LastOffsetDelta = 1000 }), false)
	f.Add(mutateBatch(f, none, func(kb *kmsg.RecordBatch) { kb.Attributes |= attrControl }), false)
	f.Add(append(none[:len(none):len(none)], 0, 0), true)

	l, err := Open(Options{Dir: fuzzTempDir(f), Logger: discardLogger(), FlushInterval: time.Hour, TailCacheBytes: -1})
	if err != nil {
		f.Fatal(err)
	}
	defer l.Close()
	if err := l.CreateTopic(fuzzTopic, 1, nil); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		data = bytes.Clone(data)
		if fixCRC && len(data) >= batchHeaderSize {
			binary.BigEndian.PutUint32(data[8:], uint32(len(data)-batchLengthPrefix))
			data[16] = batchMagic
			setBatchCRC(data)
		}
		_, before, err := l.Offsets(fuzzTopic, 0)
		if err != nil {
			t.Fatal(err)
		}
		base, err := l.AppendRaw(t.Context(), fuzzTopic, 0, data)
		_, after, oerr := l.Offsets(fuzzTopic, 0)
		if oerr != nil {
			t.Fatal(oerr)
		}
		if err != nil {
			if after != before {
				t.Fatalf("refused batch (%v) moved the end offset from %d to %d", err, before, after)
			}
			if !errors.Is(err, ErrUnsupportedBatch) && !errors.Is(err, ErrRecordTooLarge) &&
				!errors.Is(err, ErrOutOfOrderSequence) && !errors.Is(err, ErrProducerFenced) && !errors.Is(err, ErrUnknownProducerID) {
				t.Fatalf("AppendRaw: unexpected error class: %v", err)
			}
			return
		}
		if after == before {
			return // an idempotent producer's retry: answered with the first append's offset
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(data); err != nil {
			t.Fatalf("accepted a batch kmsg cannot read: %v", err)
		}
		want, ok := refDecode(&kb)
		if !ok {
			t.Fatalf("accepted a batch whose records do not decode")
		}
		if base != before || after-before != int64(len(want)) {
			t.Fatalf("accepted %d records at base %d: offsets moved %d -> %d", len(want), base, before, after)
		}
		res, err := l.Read(t.Context(), fuzzTopic, 0, base, ReadOptions{MaxBytes: math.MaxInt32})
		if err != nil {
			t.Fatalf("Read(%d) of an accepted batch: %v", base, err)
		}
		if len(res.Records) != len(want) {
			t.Fatalf("read %d records of an accepted batch holding %d", len(res.Records), len(want))
		}
		for i, r := range res.Records {
			w := want[i]
			ts := kb.FirstTimestamp + w.TimestampDelta64
			if kb.Attributes&attrLogAppendTime != 0 {
				ts = kb.MaxTimestamp
			}
			if r.Offset != base+int64(i) || !bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) ||
				!bytes.Equal(r.Value, w.Value) || (r.Value == nil) != (w.Value == nil) ||
				r.Timestamp.UnixMilli() != ts || len(r.Headers) != len(w.Headers) {
				t.Fatalf("record %d read back as %+v; the batch holds offset %d, key %q, value %q, ts %d, %d headers",
					i, r, base+int64(i), w.Key, w.Value, ts, len(w.Headers))
			}
			for j, h := range r.Headers {
				if h.Key != w.Headers[j].Key || !bytes.Equal(h.Value, w.Headers[j].Value) {
					t.Fatalf("record %d header %d read back as %q=%q, want %q=%q", i, j, h.Key, h.Value, w.Headers[j].Key, w.Headers[j].Value)
				}
			}
		}
	})
}

// TestAppendRaw_InconsistentBatch: batches whose header and records
// disagree are refused whole, as Kafka's LogValidator refuses them; before,
// records past the count were acknowledged and then never read, and
// offsets were taken without records.
func TestAppendRaw_InconsistentBatch(t *testing.T) {
	recs := []Record{{Value: []byte("one")}, {Value: []byte("two")}, {Value: []byte("three")}}
	for _, comp := range []string{"none", "zstd"} {
		b := encodeBatch(recs, time.Now(), comp, noProducer)
		for _, tc := range []struct {
			name string
			mut  func(kb *kmsg.RecordBatch)
		}{
			{"count below records", func(kb *kmsg.RecordBatch) { kb.NumRecords, kb.LastOffsetDelta = 1, 0 }},
			{"count below offsets", func(kb *kmsg.RecordBatch) { kb.NumRecords = 1 }},
			{"count above records", func(kb *kmsg.RecordBatch) { kb.NumRecords, kb.LastOffsetDelta = 4, 3 }},
			{"no records", func(kb *kmsg.RecordBatch) { kb.NumRecords, kb.LastOffsetDelta, kb.Records = 0, 0, nil }},
			{"offset range past records", func(kb *kmsg.RecordBatch) { kb.LastOffsetDelta = 1000 }},
			{"control batch", func(kb *kmsg.RecordBatch) { kb.Attributes |= attrControl }},
			{"producer without sequence", func(kb *kmsg.RecordBatch) { kb.ProducerID, kb.ProducerEpoch, kb.FirstSequence = 5, 0, -1 }},
			{"trailing bytes", func(kb *kmsg.RecordBatch) {
				if kb.Attributes&attrCompressionMask == 0 {
					kb.Records = append(kb.Records, 0)
				}
				kb.NumRecords, kb.LastOffsetDelta = 2, 1
			}},
			{"offset deltas skip", func(kb *kmsg.RecordBatch) {
				// Two records at deltas 0 and 2 in a batch claiming 0..1.
				kb.Attributes &^= attrCompressionMask
				kb.Records = appendRecord(appendRecord(nil, &kmsg.Record{OffsetDelta: 0, Value: []byte("a")}), &kmsg.Record{OffsetDelta: 2, Value: []byte("b")})
				kb.NumRecords, kb.LastOffsetDelta = 2, 1
			}},
		} {
			t.Run(comp+"/"+tc.name, func(t *testing.T) {
				l := openTestLog(t, t.TempDir())
				defer l.Close()
				bad := mutateBatch(t, b, tc.mut)
				if _, err := l.AppendRaw(t.Context(), "t", 0, bad); !errors.Is(err, ErrUnsupportedBatch) {
					t.Fatalf("AppendRaw = %v, want ErrUnsupportedBatch", err)
				}
				if _, end, err := l.Offsets("t", 0); err != nil || end != 0 {
					t.Fatalf("end offset %d, %v after a refused batch; want 0", end, err)
				}
				// The sound batch still goes in whole.
				if base, err := l.AppendRaw(t.Context(), "t", 0, b); err != nil || base != 0 {
					t.Fatalf("AppendRaw of the sound batch = %d, %v", base, err)
				}
				if got := readAll(t, l, "t", 0, 0); len(got) != 3 || string(got[2].Value) != "three" {
					t.Fatalf("read %+v, want the 3 records", got)
				}
			})
		}
	}
}

// TestAppendRaw_DecompressionBomb: a small compressed batch that claims
// more than the uncompressed limit is refused with ErrRecordTooLarge
// (MESSAGE_TOO_LARGE on the wire, on which producers split the batch)
// before it costs more than the limit in memory. Before, each codec
// decompressed up to 2 GiB.
func TestAppendRaw_DecompressionBomb(t *testing.T) {
	limit := uncompressedLimit(1 << 20)
	if limit != minUncompressedBatchBytes {
		t.Fatalf("uncompressedLimit(1 MiB) = %d, want %d", limit, minUncompressedBatchBytes)
	}
	value := make([]byte, limit+1)
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	// Snappy compresses zeros only ~20:1; its batch needs a larger
	// max.message.bytes (which still allows only the floor decompressed).
	if err := l.CreateTopic("bomb", 1, map[string]string{ConfigMaxMessageBytes: "4194304"}); err != nil {
		t.Fatal(err)
	}
	for _, comp := range []string{"gzip", "snappy", "lz4", "zstd"} {
		t.Run(comp, func(t *testing.T) {
			b := encodeBatch([]Record{{Value: value}}, time.Now(), comp, noProducer)
			if kgo.CompressionCodecType(binary.BigEndian.Uint16(b[21:])&attrCompressionMask) == kgo.CodecNone {
				t.Fatalf("batch did not compress")
			}
			t.Logf("%s: %d bytes decompress to %d", comp, len(b), len(value))
			_, err := l.AppendRaw(t.Context(), "bomb", 0, b)
			if !errors.Is(err, ErrRecordTooLarge) {
				t.Fatalf("AppendRaw of a %d-byte %s batch of %d bytes = %v, want ErrRecordTooLarge", len(b), comp, len(value), err)
			}
		})
	}
	// Just under the limit goes in, in every codec.
	for _, comp := range []string{"gzip", "snappy", "lz4", "zstd"} {
		b := encodeBatch([]Record{{Value: value[:limit-100]}, {Value: []byte(comp)}}, time.Now(), comp, noProducer)
		base, err := l.AppendRaw(t.Context(), "bomb", 0, b)
		if err != nil {
			t.Fatalf("AppendRaw of a %s batch under the limit: %v", comp, err)
		}
		res, err := l.Read(t.Context(), "bomb", 0, base, ReadOptions{MaxBytes: 1})
		if err != nil || len(res.Records) != 2 || len(res.Records[0].Value) != limit-100 || string(res.Records[1].Value) != comp {
			t.Fatalf("read back %d records, %v", len(res.Records), err)
		}
	}
}

// TestAppendRaw_SizeBeforeDecompress: a compressed batch over
// max.message.bytes is refused for its size without being decompressed.
func TestAppendRaw_SizeBeforeDecompress(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("small", 1, map[string]string{ConfigMaxMessageBytes: "100"}); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 300) // incompressible, so the batch stays over 100 bytes
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range value {
		value[i] = byte(rnd.Uint32())
	}
	b := encodeBatch([]Record{{Value: value}}, time.Now(), "gzip", noProducer)
	b[len(b)-1] ^= 0xff // garbage at the end: decompressing would fail
	setBatchCRC(b)
	_, err := l.AppendRaw(t.Context(), "small", 0, b)
	if !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("AppendRaw = %v, want ErrRecordTooLarge", err)
	}
}

func TestUncompressedLimit(t *testing.T) {
	for _, tc := range []struct{ mmb, want int64 }{
		{0, minUncompressedBatchBytes},
		{1048588, minUncompressedBatchBytes},
		{8 << 20, 128 << 20},
		{1 << 30, 1 << 30},
		{math.MaxInt64, 1 << 30},
	} {
		if got := uncompressedLimit(tc.mmb); int64(got) != tc.want {
			t.Errorf("uncompressedLimit(%d) = %d, want %d", tc.mmb, got, tc.want)
		}
	}
}

// TestAppendRaw_XerialSnappy: the Java producer frames snappy in xerial
// chunks; the bound reads their lengths and the batch goes in whole.
func TestAppendRaw_XerialSnappy(t *testing.T) {
	recs := []Record{{Value: bytes.Repeat([]byte("xerial "), 20000)}, {Value: []byte("tail")}}
	plain := encodeBatch(recs, time.Now(), "none", noProducer)
	raw := plain[batchHeaderSize:]
	stream := append([]byte{}, xerialPrefix...)
	stream = append(stream, 0, 0, 0, 1, 0, 0, 0, 1)
	for len(raw) > 0 {
		n := min(len(raw), 32<<10)
		block := s2.EncodeSnappy(nil, raw[:n])
		stream = binary.BigEndian.AppendUint32(stream, uint32(len(block)))
		stream = append(stream, block...)
		raw = raw[n:]
	}
	b := mutateBatch(t, plain, func(kb *kmsg.RecordBatch) {
		kb.Attributes |= int16(kgo.CodecSnappy)
		kb.Records = stream
	})
	if n, err := snappyDecodedLen(stream); err != nil || n != uint64(len(plain)-batchHeaderSize) {
		t.Fatalf("snappyDecodedLen = %d, %v; want %d", n, err, len(plain)-batchHeaderSize)
	}
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if _, err := l.AppendRaw(t.Context(), "x", 0, b); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l, "x", 0, 0); len(got) != 2 || !bytes.Equal(got[0].Value, recs[0].Value) || string(got[1].Value) != "tail" {
		t.Fatalf("read back %d records", len(got))
	}
}

// TestDecompressBounded_StreamedZstd: a zstd frame that does not declare
// its size (as streaming encoders write them) is bounded while decoding.
func TestDecompressBounded_StreamedZstd(t *testing.T) {
	limit := 16 << 20 // more than the encoder's window
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for range 4 * limit / len(chunk) {
		if _, err := zw.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	var fh zstd.Header
	if err := fh.Decode(buf.Bytes()); err != nil || fh.HasFCS {
		t.Fatalf("frame header %+v, %v: want one without a content size", fh, err)
	}
	if _, err := decompressBounded(buf.Bytes(), kgo.CodecZstd, limit); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("decompressBounded of %d bytes claiming nothing, decoding to %d: %v; want ErrRecordTooLarge", buf.Len(), 4*limit, err)
	}
	out, err := decompressBounded(buf.Bytes(), kgo.CodecZstd, 4*limit)
	if err != nil || len(out) != 4*limit {
		t.Fatalf("decompressBounded at a limit it fits: %d bytes, %v", len(out), err)
	}
	// A window over the limit is refused as too large too.
	if _, err := decompressBounded(buf.Bytes(), kgo.CodecZstd, 1<<20); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("decompressBounded with a window over the limit: %v; want ErrRecordTooLarge", err)
	}
}
