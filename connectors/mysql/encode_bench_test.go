package mysql

import (
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// benchEvent is an update of a typical six-column row, as the stream
// encodes it.
func benchEvent(b *testing.B) (*encoder, *table, connect.Row, connect.Row, *srcInfo, *connect.Transaction) {
	def := &tableDef{DB: "shop", Name: "orders", Key: []int{0}}
	for _, n := range []string{"id", "customer", "qty", "price", "note", "payload"} {
		def.Columns = append(def.Columns, column{Name: n})
	}
	set := &settings{prefix: "bench"}
	enc := &encoder{set: set, codec: connect.DebeziumJSON{}, mapper: &mapper{}}
	tbl, err := enc.mapper.newTable(set, def)
	if err != nil {
		b.Fatal(err)
	}
	row := func(qty int64) connect.Row {
		return connect.Row{{Name: "id", Value: int64(123456)}, {Name: "customer", Value: "Ada Lovelace"}, {Name: "qty", Value: qty},
			{Name: "price", Value: "1234.50"}, {Name: "note", Value: nil}, {Name: "payload", Value: []byte("0123456789abcdef")}}
	}
	si := &srcInfo{serverID: 1, file: "mariadb-bin.000001", pos: 1234567, row: 0, ts: time.Unix(1764400000, 0), gtid: "0-1-4242", thread: 17}
	tx := &connect.Transaction{ID: "0-1-4242", TotalOrder: 1, DataCollectionOrder: 1}
	return enc, tbl, row(1), row(2), si, tx
}

func BenchmarkEncodeEvent(b *testing.B) {
	enc, tbl, before, after, si, tx := benchEvent(b)
	now := time.Unix(1764400001, 0)
	b.Run("blocks", func(b *testing.B) {
		// The stream's path: a reused event and source block, records
		// written into shared blocks.
		st := &streamer{enc: enc}
		c := &change{t: tbl, si: *si, now: now.UnixNano()}
		var a scratch
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.encodeEvent(&a, c, connect.OpUpdate, before, after, tx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("record", func(b *testing.B) {
		// A fresh event and buffers of its own, as incremental snapshots do.
		b.ReportAllocs()
		for b.Loop() {
			ev := &connect.ChangeEvent{Op: connect.OpUpdate, Before: before, After: after, Source: enc.source(tbl, si), Transaction: tx, Key: tbl.key(after)}
			ev.SetTime(now)
			if _, err := enc.record(tbl, ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
