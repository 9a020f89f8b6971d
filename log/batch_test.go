package log

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// appendRecord writes the length kmsg's own framing has, computed before the
// record is written: every field size at its varint boundaries, null and
// empty keys, values and headers.
func TestAppendRecord_LengthComputedUpFront(t *testing.T) {
	var recs []kmsg.Record
	for _, size := range []int{0, 1, 63, 64, 8191, 8192, 1 << 20} {
		v := []byte(strings.Repeat("v", size))
		recs = append(recs,
			kmsg.Record{Value: v},
			kmsg.Record{Key: []byte{}, Value: v, OffsetDelta: 63},
			kmsg.Record{Key: v, Value: nil, OffsetDelta: 64, TimestampDelta64: -1},
			kmsg.Record{Key: []byte("k"), Value: v, OffsetDelta: math.MaxInt32, TimestampDelta64: math.MinInt64},
			kmsg.Record{Value: v, TimestampDelta64: math.MaxInt64, Headers: []kmsg.Header{{Key: "", Value: nil}, {Key: string(v), Value: v}, {Key: "h", Value: []byte{}}}},
		)
	}
	for i := range recs {
		r := recs[i]
		got := appendRecord([]byte("prefix"), &r)
		if !bytes.HasPrefix(got, []byte("prefix")) {
			t.Fatalf("record %d: the prefix was overwritten", i)
		}
		body := got[len("prefix"):]
		// The reference: kmsg's framing with the length found afterwards.
		ref := r
		ref.Length = 0
		enc := ref.AppendTo(nil)
		ref.Length = int32(len(enc) - 1)
		want := ref.AppendTo(nil)
		if !bytes.Equal(body, want) {
			t.Fatalf("record %d: encoded %d bytes, want %d (kmsg's framing)", i, len(body), len(want))
		}
		l, n := binary.Varint(body)
		if int(l) != len(body)-n || recordLen(&recs[i]) != int(l) {
			t.Fatalf("record %d: length field %d, recordLen %d, body %d", i, l, recordLen(&recs[i]), len(body)-n)
		}
		var back kmsg.Record
		if err := back.ReadFrom(body); err != nil || !bytes.Equal(back.Value, recs[i].Value) || len(back.Headers) != len(recs[i].Headers) {
			t.Fatalf("record %d does not decode back: %v", i, err)
		}
	}
}
