package log

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounded decompression of produced batches.
//
// A batch that arrives over the wire (AppendRaw, the Kafka listener) is
// decompressed to check its records before it is stored. Its compressed
// size is bounded by max.message.bytes, but a few KiB of zstd or gzip can
// claim gigabytes, so the decompressed size is bounded too: by
// uncompressedLimit, checked while decompressing (never by trusting a size
// the batch declares), so a bomb costs at most the limit.

// minUncompressedBatchBytes is the least a batch may always decompress to.
const minUncompressedBatchBytes = 64 << 20

// uncompressedRatio times max.message.bytes is what a batch may decompress
// to when that is more than minUncompressedBatchBytes.
const uncompressedRatio = 16

// uncompressedLimit returns how large a batch of a topic with the given
// max.message.bytes may decompress to.
func uncompressedLimit(maxMessageBytes int64) int {
	limit := int64(minUncompressedBatchBytes)
	if maxMessageBytes > 0 && maxMessageBytes <= 1<<30/uncompressedRatio {
		limit = max(limit, maxMessageBytes*uncompressedRatio)
	} else if maxMessageBytes > 0 {
		limit = 1 << 30
	}
	return int(limit)
}

// errTooLargeUncompressed is the reason of a batch whose records
// decompress past the limit.
func errTooLargeUncompressed(codec kgo.CompressionCodecType, limit int) error {
	return fmt.Errorf("%w: %v batch decompresses to more than %d bytes (send smaller batches: lower the producer's batch.size or linger.ms, or raise the topic's max.message.bytes, which allows %dx its value decompressed)",
		ErrRecordTooLarge, codec, limit, uncompressedRatio)
}

var (
	gzipReaders sync.Pool // *gzip.Reader
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	// zstdDecoders holds decoders per limit (*zstdPool), as the limit is
	// an option of the decoder.
	zstdDecoders sync.Map
)

type zstdPool struct{ sync.Pool }

// decompressBounded decompresses the records of a batch, refusing output
// past limit bytes with an error wrapping ErrRecordTooLarge.
func decompressBounded(src []byte, codec kgo.CompressionCodecType, limit int) ([]byte, error) {
	switch codec {
	case kgo.CodecNone:
		return src, nil
	case kgo.CodecGzip:
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = zr.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return nil, err
		}
		defer gzipReaders.Put(zr)
		return readLimited(zr, codec, limit, len(src))
	case kgo.CodecLz4:
		zr := lz4Readers.Get().(*lz4.Reader)
		defer lz4Readers.Put(zr)
		zr.Reset(bytes.NewReader(src))
		return readLimited(zr, codec, limit, len(src))
	case kgo.CodecSnappy:
		n, err := snappyDecodedLen(src)
		if err != nil {
			return nil, err
		}
		if n > uint64(limit) {
			return nil, errTooLargeUncompressed(codec, limit)
		}
		// Every decoded length is now bounded (the decoder checks the
		// data against the lengths it declares).
		return decompressor.Decompress(src, codec)
	case kgo.CodecZstd:
		p, _ := zstdDecoders.LoadOrStore(limit, &zstdPool{})
		pool := p.(*zstdPool)
		d, _ := pool.Get().(*zstd.Decoder)
		if d == nil {
			var err error
			d, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderMaxWindow(uint64(min(limit, zstd.MaxWindowSize))))
			if err != nil {
				return nil, fmt.Errorf("zstd decoder: %w", err)
			}
		}
		defer pool.Put(d)
		out, err := d.DecodeAll(src, nil)
		// A window larger than the limit would need more memory than it.
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) || err == nil && len(out) > limit {
			return nil, errTooLargeUncompressed(codec, limit)
		}
		return out, err
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// readLimited reads r to its end, refusing more than limit bytes. The
// buffer doubles as it fills, but never past limit+1 bytes.
func readLimited(r io.Reader, codec kgo.CompressionCodecType, limit, srcLen int) ([]byte, error) {
	buf := make([]byte, 0, min(max(4*srcLen, 4096), limit+1))
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, errTooLargeUncompressed(codec, limit)
			}
			buf = slices.Grow(buf, min(cap(buf), limit+1-len(buf)))
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if len(buf) > limit {
				return nil, errTooLargeUncompressed(codec, limit)
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// xerialPrefix starts the snappy framing of the Java client.
var xerialPrefix = []byte{130, 83, 78, 65, 80, 80, 89, 0}

// snappyDecodedLen sums the decoded lengths that a raw snappy block, or
// the chunks of a xerial-framed stream, declare in their headers.
func snappyDecodedLen(src []byte) (uint64, error) {
	if len(src) <= 16 || !bytes.HasPrefix(src, xerialPrefix) {
		n, sz := binary.Uvarint(src)
		if sz <= 0 {
			return 0, errors.New("snappy: corrupt input: bad decoded length")
		}
		return n, nil
	}
	var total uint64
	for rem := src[16:]; len(rem) > 0; {
		if len(rem) < 4 {
			return 0, errors.New("snappy: malformed xerial framing: truncated chunk length")
		}
		size := int32(binary.BigEndian.Uint32(rem))
		rem = rem[4:]
		if size < 0 || int(size) > len(rem) {
			return 0, fmt.Errorf("snappy: malformed xerial framing: chunk of %d bytes in %d", size, len(rem))
		}
		n, sz := binary.Uvarint(rem[:size])
		if sz <= 0 {
			return 0, errors.New("snappy: corrupt input: bad decoded length")
		}
		total += n
		if total > 1<<40 {
			return total, nil
		}
		rem = rem[size:]
	}
	return total, nil
}
