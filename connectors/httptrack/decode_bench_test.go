package httptrack

import (
	"bytes"
	"strconv"
	"testing"
	"time"
)

// benchBody returns a request of n events shaped like analytics-node's
// (about 400 bytes each), as bench/httptrack sends them; n == 1 is a
// single track message.
func benchBody(n int) []byte {
	var b bytes.Buffer
	event := func(i int, typed bool) {
		b.WriteString(`{`)
		if typed {
			b.WriteString(`"type":"track",`)
		}
		b.WriteString(`"userId":"user-` + strconv.Itoa(i%10000) + `","event":"Product Viewed","messageId":"bench-` + strconv.Itoa(i) + `-7",`)
		b.WriteString(`"properties":{"product_id":"p-` + strconv.Itoa(i%977) + `","price":19.99,"currency":"EUR","path":"/products/p","referrer":"https://www.google.com/"},`)
		b.WriteString(`"context":{"library":{"name":"@segment/analytics-node","version":"3.1.0"},"userAgent":"Mozilla/5.0 (X11; Linux x86_64)"},`)
		b.WriteString(`"integrations":{},"timestamp":"2026-11-29T10:00:00.000Z"}`)
	}
	if n == 1 {
		event(0, false)
		return b.Bytes()
	}
	b.WriteString(`{"batch":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		event(i, true)
	}
	b.WriteString(`],"sentAt":"2026-11-29T10:00:00.100Z"}`)
	return b.Bytes()
}

// BenchmarkDecodeEnrich measures the source's per-request CPU outside
// HTTP and the log: decode, validate, enrich into record values.
func BenchmarkDecodeEnrich(b *testing.B) {
	lim := limits{maxMessageBytes: 32 << 10, maxBatchBytes: 500 << 10, maxBatchEvents: 2500}
	now := time.Date(2026, 11, 29, 10, 0, 1, 0, time.UTC)
	for _, c := range []struct {
		name string
		n    int
		typ  string
	}{{"single", 1, "track"}, {"batch100", 100, ""}} {
		body := benchBody(c.n)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				d, p := decodeRequest(body, c.typ, lim)
				if p != nil || len(d.msgs) != c.n {
					b.Fatalf("decode: %v", p)
				}
				st := newStamps(now, len(body)+c.n*220)
				for _, m := range d.msgs {
					e := enrichStamped(m, st, "127.0.0.1", newMessageID)
					_ = hashID("k", e.messageID)
				}
				d.release()
			}
		})
	}
}
