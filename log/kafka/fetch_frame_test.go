package kafka

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchFrame writes the same bytes as frameResponse, for every Fetch
// version served, whatever the mix of big, small, empty and failed
// partitions, and leaves the response as it was.
func TestFetchFrame_SameBytesAsFrameResponse(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	fill := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})
	sizes := []int{0, 1, 100, inlineBatchBytes - 1, inlineBatchBytes, 70_000, 1 << 20}
	for v := int16(4); v <= 12; v++ {
		for round := range 10 {
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(v)
			var want [][]byte
			for ti := range 1 + rng.IntN(3) {
				rt := kmsg.NewFetchResponseTopic()
				rt.Topic = fmt.Sprintf("topic-%d", ti)
				for pi := range 1 + rng.IntN(4) {
					rp := kmsg.NewFetchResponseTopicPartition()
					rp.Partition = int32(pi)
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = rng.Int64N(1e9), rng.Int64N(1e9), -1
					if rng.IntN(5) == 0 {
						rp.ErrorCode = 1
					} else {
						b := make([]byte, sizes[rng.IntN(len(sizes))])
						fill.Read(b)
						rp.RecordBatches = b
					}
					want = append(want, rp.RecordBatches)
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			corr := rng.Int32()
			wantBytes := frameResponse(corr, resp)
			got := bytes.Join(fetchFrame(corr, resp), nil)
			if !bytes.Equal(got, wantBytes) {
				t.Fatalf("v%d round %d: fetchFrame wrote %d bytes, frameResponse %d; they differ", v, round, len(got), len(wantBytes))
			}
			i := 0
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if !bytes.Equal(rp.RecordBatches, want[i]) {
						t.Fatalf("v%d round %d: partition %d's record batches changed by fetchFrame", v, round, i)
					}
					i++
				}
			}
			// The bytes decode as the response they came from.
			dec := kmsg.NewPtrFetchResponse()
			dec.SetVersion(v)
			body := got[8:]
			if resp.IsFlexible() {
				body = body[1:]
			}
			if err := dec.ReadFrom(body); err != nil {
				t.Fatalf("v%d round %d: decode: %v", v, round, err)
			}
		}
	}
}

// A small record set that holds a marker (chance, or a producer who knows
// the random half) cannot confuse fetchFrame: it falls back to a plain
// encoding, byte for byte the same.
func TestFetchFrame_MarkerInDataFallsBack(t *testing.T) {
	old := fetchMarker
	fetchMarker = func() uint64 { return 0x0123456789abcdef }
	defer func() { fetchMarker = old }()
	for _, v := range []int16{11, 12} {
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(v)
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "t"
		small := kmsg.NewFetchResponseTopicPartition()
		var m [16]byte
		binary.LittleEndian.PutUint64(m[:], fetchMarker()) // the marker of the first big record set
		small.RecordBatches = append([]byte("xx"), m[:]...)
		big := kmsg.NewFetchResponseTopicPartition()
		big.Partition = 1
		big.RecordBatches = bytes.Repeat([]byte{7}, 2*inlineBatchBytes)
		rt.Partitions = append(rt.Partitions, small, big)
		resp.Topics = append(resp.Topics, rt)
		want := frameResponse(9, resp)
		bufs := fetchFrame(9, resp)
		if got := bytes.Join(bufs, nil); !bytes.Equal(got, want) {
			t.Fatalf("v%d: fetchFrame differs from frameResponse", v)
		}
		if len(bufs) != 1 {
			t.Fatalf("v%d: %d buffers, want the 1 of the fallback", v, len(bufs))
		}
		if !bytes.Equal(resp.Topics[0].Partitions[1].RecordBatches, bytes.Repeat([]byte{7}, 2*inlineBatchBytes)) {
			t.Fatalf("v%d: the big record set was not restored", v)
		}
	}
}
