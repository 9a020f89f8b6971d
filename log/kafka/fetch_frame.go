package kafka

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// inlineBatchBytes is the size below which a partition's record batches are
// copied into the encoded response rather than written from where they are:
// a separate write buffer is worth it only for big ones.
const inlineBatchBytes = 16 << 10

// fetchMarker draws the random half of fetchFrame's markers (a var for tests).
var fetchMarker = rand.Uint64

// fetchFrame encodes a Fetch response like frameResponse, as buffers to
// write in order (writev), without copying the stored record batches: the
// response is encoded with each big record set replaced by a marker, and the
// marker is then replaced by the record set's length and the record set
// itself, which is written from the log's read buffer as it is.
//
// The markers are 16 random bytes, different for every response, searched in
// order in an encoding that holds only headers and small record sets: one
// that is not found where expected (a small record set that happens to
// contain it first) makes fetchFrame fall back to frameResponse.
func fetchFrame(corr int32, resp *kmsg.FetchResponse) net.Buffers {
	type big struct{ records []byte }
	var bigs []big
	var marker [16]byte
	binary.LittleEndian.PutUint64(marker[:], fetchMarker())
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			if len(rp.RecordBatches) < inlineBatchBytes {
				continue
			}
			m := make([]byte, len(marker))
			copy(m, marker[:8])
			binary.LittleEndian.PutUint64(m[8:], uint64(len(bigs)))
			bigs = append(bigs, big{rp.RecordBatches})
			rp.RecordBatches = m
		}
	}
	if len(bigs) == 0 {
		return net.Buffers{frameResponse(corr, resp)}
	}
	enc := frameResponse(corr, resp)
	restore := func() {
		i := 0
		for ti := range resp.Topics {
			for pi := range resp.Topics[ti].Partitions {
				rp := &resp.Topics[ti].Partitions[pi]
				if len(rp.RecordBatches) == len(marker) && bytes.Equal(rp.RecordBatches[:8], marker[:8]) && i < len(bigs) {
					rp.RecordBatches = bigs[i].records
					i++
				}
			}
		}
	}
	flexible := resp.IsFlexible()
	out := make(net.Buffers, 0, 2*len(bigs)+1)
	head := make([]byte, 0, len(enc)+8*len(bigs)) // enc without markers, with the real lengths
	from, total := 0, 0
	for i, b := range bigs {
		m := make([]byte, len(marker))
		copy(m, marker[:8])
		binary.LittleEndian.PutUint64(m[8:], uint64(i))
		at := bytes.Index(enc[from:], m)
		prefix := 4 // int32 length
		if flexible {
			prefix = 1 // uvarint of 16+1
		}
		if at < prefix || !validPrefix(enc[from+at-prefix:from+at], flexible, len(marker)) {
			restore()
			return net.Buffers{frameResponse(corr, resp)}
		}
		at += from
		head = append(head, enc[from:at-prefix]...)
		if flexible {
			head = binary.AppendUvarint(head, uint64(len(b.records))+1)
		} else {
			head = binary.BigEndian.AppendUint32(head, uint32(len(b.records)))
		}
		out = append(out, head)
		total += len(head)
		head = head[len(head):] // the rest of the backing array for what follows
		out = append(out, b.records)
		total += len(b.records)
		from = at + len(marker)
	}
	head = append(head, enc[from:]...)
	total += len(head)
	out = append(out, head)
	restore()
	binary.BigEndian.PutUint32(out[0], uint32(total-4)) // the frame size
	return out
}

// validPrefix reports whether p is the encoded length n of a bytes field.
func validPrefix(p []byte, flexible bool, n int) bool {
	if flexible {
		return len(p) == 1 && int(p[0]) == n+1
	}
	return len(p) == 4 && binary.BigEndian.Uint32(p) == uint32(n)
}
