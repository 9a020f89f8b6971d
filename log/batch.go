package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record batch v2 framing. Everything past the first 12 bytes is encoded and
// decoded by kmsg; these constants only locate a batch in a file.
const (
	batchLengthPrefix = 12 // base offset (8) + length (4)
	batchHeaderSize   = 61 // the whole v2 header up to the records
	batchCRCStart     = 21 // the CRC covers attributes..end
	batchMagic        = 2

	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one record of a partition. Offset, Partition and Topic are set
// when a record is read; Timestamp defaults to the append time when zero.
type Record struct {
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp time.Time
	Topic     string
	Partition int32
	Offset    int64
}

// ProducerInfo identifies an idempotent producer's batch. ID -1 means a plain,
// non-idempotent append.
type ProducerInfo struct {
	ID       int64
	Epoch    int16
	Sequence int32 // sequence of the batch's first record
}

var noProducer = ProducerInfo{ID: -1, Epoch: -1, Sequence: -1}

var (
	compressors   = map[string]kgo.Compressor{}
	decompressor  = kgo.DefaultDecompressor()
	codecByConfig = map[string]kgo.CompressionCodec{
		"gzip":   kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(),
		"lz4":    kgo.Lz4Compression(),
		"zstd":   kgo.ZstdCompression(),
	}
)

func init() {
	for name, codec := range codecByConfig {
		c, err := kgo.DefaultCompressor(codec)
		if err != nil {
			panic(fmt.Sprintf("compressor %s: %v", name, err))
		}
		compressors[name] = c
	}
}

// encodeBatch builds a v2 record batch holding recs, with offset deltas from 0
// and the base offset left 0 (the partition sets it at append). compression is
// a compression.type value; "producer" and "none" store uncompressed.
func encodeBatch(recs []Record, now time.Time, compression string, p ProducerInfo) []byte {
	if len(recs) == 0 {
		return nil
	}
	first := recs[0].Timestamp
	if first.IsZero() {
		first = now
	}
	base := first.UnixMilli()
	maxTs := base
	est := batchHeaderSize
	for i := range recs {
		est += len(recs[i].Key) + len(recs[i].Value) + 24
		for _, h := range recs[i].Headers {
			est += len(h.Key) + len(h.Value) + 10
		}
	}
	// The records go straight after room for the header, which kmsg
	// writes in place once the counts and timestamps are known.
	buf := make([]byte, batchHeaderSize, est)
	for i := range recs {
		ts := recs[i].Timestamp
		if ts.IsZero() {
			ts = now
		}
		ms := ts.UnixMilli()
		if ms > maxTs {
			maxTs = ms
		}
		kr := kmsg.Record{
			TimestampDelta64: ms - base,
			OffsetDelta:      int32(i),
			Key:              recs[i].Key,
			Value:            recs[i].Value,
		}
		if len(recs[i].Headers) > 0 {
			kr.Headers = make([]kmsg.Header, len(recs[i].Headers))
			for j, h := range recs[i].Headers {
				kr.Headers[j] = kmsg.Header{Key: h.Key, Value: h.Value}
			}
		}
		buf = appendRecord(buf, &kr)
	}
	var attrs int16
	if c, ok := compressors[compression]; ok {
		var cb bytes.Buffer
		out, codec := c.Compress(&cb, buf[batchHeaderSize:])
		if codec > kgo.CodecNone && codec <= kgo.CodecZstd { // on CodecError the batch stays uncompressed
			buf = append(buf[:batchHeaderSize], out...)
			attrs |= int16(codec)
		}
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                batchMagic,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       base,
		MaxTimestamp:         maxTs,
		ProducerID:           p.ID,
		ProducerEpoch:        p.Epoch,
		FirstSequence:        p.Sequence,
		NumRecords:           int32(len(recs)),
	}
	b.AppendTo(buf[:0]) // the header only: Records is empty
	binary.BigEndian.PutUint32(buf[8:], uint32(len(buf)-batchLengthPrefix))
	setBatchCRC(buf)
	return buf
}

// appendRecord appends one record in its varint framing. The length comes
// first, so it is computed before kmsg writes the record; should it ever be
// wrong (a field kmsg writes that recordLen does not count), the record is
// written again with the length it turned out to have.
func appendRecord(dst []byte, r *kmsg.Record) []byte {
	start := len(dst)
	r.Length = int32(recordLen(r))
	dst = r.AppendTo(dst)
	if body := len(dst) - start - varintLen(int64(r.Length)); body != int(r.Length) {
		r.Length = int32(body)
		dst = r.AppendTo(dst[:start])
	}
	return dst
}

// recordLen is the size of a record after its length field, as kmsg
// encodes it.
func recordLen(r *kmsg.Record) int {
	ts := r.TimestampDelta64
	if ts == 0 {
		ts = int64(r.TimestampDelta)
	}
	n := 1 + varintLen(ts) + varintLen(int64(r.OffsetDelta)) + bytesLen(r.Key) + bytesLen(r.Value) + varintLen(int64(len(r.Headers)))
	for i := range r.Headers {
		n += varintLen(int64(len(r.Headers[i].Key))) + len(r.Headers[i].Key) + bytesLen(r.Headers[i].Value)
	}
	return n
}

// bytesLen is the size of a nullable varint-prefixed byte string.
func bytesLen(b []byte) int {
	if b == nil {
		return 1 // length -1
	}
	return varintLen(int64(len(b))) + len(b)
}

// varintLen is the size of x as a zigzag varint.
func varintLen(x int64) int {
	ux := uint64(x<<1) ^ uint64(x>>63)
	return (bits.Len64(ux|1) + 6) / 7
}

func setBatchCRC(b []byte) {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[batchCRCStart:], castagnoli))
}

// setBaseOffset rewrites the base offset of an encoded batch. The CRC does not
// cover it, so the batch stays valid.
func setBaseOffset(b []byte, base int64) { binary.BigEndian.PutUint64(b, uint64(base)) }

// batchMeta is what the log needs to know about a stored batch.
type batchMeta struct {
	BaseOffset    int64
	LastOffset    int64
	MaxTimestamp  int64
	FirstTs       int64
	Size          int // bytes on disk, header included
	NumRecords    int32
	Attributes    int16
	Producer      ProducerInfo
	IsControl     bool
	Transactional bool
}

// frameLength returns the total size of the batch that starts with the
// 12-byte prefix p.
func frameLength(p []byte) (base int64, size int) {
	return int64(binary.BigEndian.Uint64(p)), int(int32(binary.BigEndian.Uint32(p[8:]))) + batchLengthPrefix
}

// checkBatch validates one whole encoded batch (magic, CRC, framing) and
// decodes its header with kmsg. The returned reason is empty when the batch
// is sound.
func checkBatch(b []byte) (kmsg.RecordBatch, batchMeta, string) {
	return decodeHeader(b, true)
}

// batchHeader is checkBatch without the CRC, for batches that never left
// memory since the log encoded them (appends of the log's own batches,
// reads from the tail cache): they cannot have been damaged in storage.
func batchHeader(b []byte) (kmsg.RecordBatch, batchMeta, string) {
	return decodeHeader(b, false)
}

func decodeHeader(b []byte, verifyCRC bool) (kmsg.RecordBatch, batchMeta, string) {
	var kb kmsg.RecordBatch
	if len(b) < batchHeaderSize {
		return kb, batchMeta{}, fmt.Sprintf("batch of %d bytes is shorter than the %d-byte header", len(b), batchHeaderSize)
	}
	if b[16] != batchMagic {
		return kb, batchMeta{}, fmt.Sprintf("magic byte %d, want %d", int8(b[16]), batchMagic)
	}
	if err := kb.UnsafeReadFrom(b); err != nil {
		return kb, batchMeta{}, fmt.Sprintf("decode header: %v", err)
	}
	if verifyCRC {
		if got := crc32.Checksum(b[batchCRCStart:], castagnoli); int32(got) != kb.CRC {
			return kb, batchMeta{}, fmt.Sprintf("crc32c mismatch: stored %08x, computed %08x", uint32(kb.CRC), got)
		}
	}
	if kb.LastOffsetDelta < 0 || kb.NumRecords < 0 {
		return kb, batchMeta{}, "negative record count"
	}
	return kb, metaOf(&kb, len(b)), ""
}

// headerOf decodes the header of a batch of size bytes from its first
// batchHeaderSize bytes, h, as decodeHeader does without the CRC check
// (which needs the whole batch). kb.Records is left nil.
func headerOf(h []byte, size int) (kmsg.RecordBatch, batchMeta, string) {
	var kb kmsg.RecordBatch
	if len(h) < batchHeaderSize || size < batchHeaderSize {
		return kb, batchMeta{}, fmt.Sprintf("batch of %d bytes is shorter than the %d-byte header", size, batchHeaderSize)
	}
	if h[16] != batchMagic {
		return kb, batchMeta{}, fmt.Sprintf("magic byte %d, want %d", int8(h[16]), batchMagic)
	}
	be := binary.BigEndian
	kb = kmsg.RecordBatch{
		FirstOffset:          int64(be.Uint64(h[0:])),
		Length:               int32(be.Uint32(h[8:])),
		PartitionLeaderEpoch: int32(be.Uint32(h[12:])),
		Magic:                int8(h[16]),
		CRC:                  int32(be.Uint32(h[17:])),
		Attributes:           int16(be.Uint16(h[21:])),
		LastOffsetDelta:      int32(be.Uint32(h[23:])),
		FirstTimestamp:       int64(be.Uint64(h[27:])),
		MaxTimestamp:         int64(be.Uint64(h[35:])),
		ProducerID:           int64(be.Uint64(h[43:])),
		ProducerEpoch:        int16(be.Uint16(h[51:])),
		FirstSequence:        int32(be.Uint32(h[53:])),
		NumRecords:           int32(be.Uint32(h[57:])),
	}
	if kb.LastOffsetDelta < 0 || kb.NumRecords < 0 {
		return kb, batchMeta{}, "negative record count"
	}
	return kb, metaOf(&kb, size), ""
}

func metaOf(kb *kmsg.RecordBatch, size int) batchMeta {
	return batchMeta{
		BaseOffset:    kb.FirstOffset,
		LastOffset:    kb.FirstOffset + int64(kb.LastOffsetDelta),
		MaxTimestamp:  kb.MaxTimestamp,
		FirstTs:       kb.FirstTimestamp,
		Size:          size,
		NumRecords:    kb.NumRecords,
		Attributes:    kb.Attributes,
		Producer:      ProducerInfo{ID: kb.ProducerID, Epoch: kb.ProducerEpoch, Sequence: kb.FirstSequence},
		IsControl:     kb.Attributes&attrControl != 0,
		Transactional: kb.Attributes&attrTransactional != 0,
	}
}

// decodeRecords decodes the records of a checked batch, appending those at or
// after minOffset to dst. Keys, values and header values of an uncompressed
// batch alias it (kmsg caps each at its length, so an append to one never
// writes into its neighbours); the batch may be shared with other readers
// (the tail cache), so they are read-only.
func decodeRecords(dst []Record, kb *kmsg.RecordBatch, minOffset int64) ([]Record, error) {
	raw := kb.Records
	if codec := kgo.CompressionCodecType(kb.Attributes & attrCompressionMask); codec != kgo.CodecNone {
		out, err := decompressor.Decompress(raw, codec)
		if err != nil {
			return dst, fmt.Errorf("decompress %v batch: %w", codec, err)
		}
		raw = out
	}
	logAppend := kb.Attributes&attrLogAppendTime != 0
	prevDelta := int32(-1)
	for i := int32(0); i < kb.NumRecords; i++ {
		l, n := binary.Varint(raw)
		if n <= 0 || l < 0 || int64(len(raw)-n) < l {
			return dst, fmt.Errorf("record %d: bad length", i)
		}
		end := n + int(l)
		var kr kmsg.Record
		if err := kr.ReadFrom(raw[:end]); err != nil {
			return dst, fmt.Errorf("record %d: %w", i, err)
		}
		raw = raw[end:]
		// Offsets rise within the batch and stay inside it, or the records
		// would claim offsets of other batches.
		if kr.OffsetDelta <= prevDelta || kr.OffsetDelta > kb.LastOffsetDelta {
			return dst, fmt.Errorf("record %d: offset delta %d after %d, batch last offset delta %d", i, kr.OffsetDelta, prevDelta, kb.LastOffsetDelta)
		}
		prevDelta = kr.OffsetDelta
		off := kb.FirstOffset + int64(kr.OffsetDelta)
		if off < minOffset {
			continue
		}
		ts := kb.FirstTimestamp + kr.TimestampDelta64
		if logAppend {
			ts = kb.MaxTimestamp
		}
		r := Record{Key: kr.Key, Value: kr.Value, Offset: off, Timestamp: time.UnixMilli(ts)}
		if len(kr.Headers) > 0 {
			r.Headers = make([]Header, len(kr.Headers))
			for j, h := range kr.Headers {
				r.Headers[j] = Header{Key: h.Key, Value: h.Value}
			}
		}
		dst = append(dst, r)
	}
	return dst, nil
}

// checkRecords checks a produced batch as a Kafka broker validates one
// before it stores it (LogValidator): it is no control batch (readers skip
// those); an idempotent producer's batch has a sequence; it holds at least
// one record; its record count matches its offset range; every record
// decodes, at offset delta 0, 1, 2, ...; and nothing follows the last
// record. So every record the producer sent is read back, and no offset is
// taken without a record. Compressed records may decompress to at most
// limit bytes. nilKey reports whether a record has a null key.
func checkRecords(kb *kmsg.RecordBatch, limit int) (nilKey bool, err error) {
	if kb.NumRecords <= 0 {
		return false, fmt.Errorf("batch claims %d records; a batch holds at least one", kb.NumRecords)
	}
	if int64(kb.LastOffsetDelta)+1 != int64(kb.NumRecords) {
		return false, fmt.Errorf("batch of %d records claims offset deltas 0..%d; they must match", kb.NumRecords, kb.LastOffsetDelta)
	}
	if kb.Attributes&attrControl != 0 {
		return false, errors.New("clients are not allowed to write control batches")
	}
	if kb.ProducerID >= 0 && kb.FirstSequence < 0 {
		return false, fmt.Errorf("invalid sequence number %d in a batch of producer id %d", kb.FirstSequence, kb.ProducerID)
	}
	raw := kb.Records
	if codec := kgo.CompressionCodecType(kb.Attributes & attrCompressionMask); codec != kgo.CodecNone {
		out, err := decompressBounded(raw, codec, limit)
		if err != nil {
			if errors.Is(err, ErrRecordTooLarge) {
				return false, err
			}
			return false, fmt.Errorf("decompress %v batch: %w", codec, err)
		}
		raw = out
	}
	var kr kmsg.Record
	for i := int32(0); i < kb.NumRecords; i++ {
		l, n := binary.Varint(raw)
		if n <= 0 || l < 0 || int64(len(raw)-n) < l {
			return false, fmt.Errorf("record %d of %d: bad length (the batch ends early)", i, kb.NumRecords)
		}
		end := n + int(l)
		kr.Headers = kr.Headers[:0]
		if err := kr.UnsafeReadFrom(raw[:end]); err != nil {
			return false, fmt.Errorf("record %d: %w", i, err)
		}
		raw = raw[end:]
		if kr.OffsetDelta != i {
			return false, fmt.Errorf("record %d: offset delta %d, want %d", i, kr.OffsetDelta, i)
		}
		nilKey = nilKey || kr.Key == nil
	}
	if len(raw) > 0 {
		return false, fmt.Errorf("%d bytes follow the %d records the batch claims", len(raw), kb.NumRecords)
	}
	return nilKey, nil
}

// withLogAppendTime marks a batch as LogAppendTime with the broker's clock,
// as Kafka does for topics with message.timestamp.type=LogAppendTime.
func withLogAppendTime(b []byte, now time.Time) []byte {
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		return b
	}
	kb.Attributes |= attrLogAppendTime
	kb.MaxTimestamp = now.UnixMilli()
	out := kb.AppendTo(make([]byte, 0, len(b)))
	setBatchCRC(out)
	return out
}
