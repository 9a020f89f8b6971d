package postgres

import (
	"bytes"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// TestEnvelope_SameAsCodec checks the encoder's own writing of row events
// against the codec's, byte for byte, on events the streamer builds:
// every op, keys, TOAST placeholders, odd names and values.
func TestEnvelope_SameAsCodec(t *testing.T) {
	if !envelopeOK() {
		t.Fatal("the envelope self-check fails: the encoder writes every event with the codec")
	}
	enc, _ := benchEncoder()
	rel := &relation{ref: tableRef{"s\"chema", "t"}, topic: "x", keyIdx: []int{0}, columns: []column{
		{name: "id"}, {name: "v"}, {name: "é"}, {name: "arr"}, {name: "f"}}}
	rows := []connect.Row{
		{{Name: "id", Value: int64(1)}, {Name: "v", Value: "x"}, {Name: "é", Value: nil}, {Name: "arr", Value: []any{"__debezium_unavailable_value"}}, {Name: "f", Value: float32(3.25)}},
		{{Name: "id", Value: int64(-9)}, {Name: "v", Value: "tab\t"}, {Name: "é", Value: []byte("bytes")}, {Name: "arr", Value: []any{}}, {Name: "f", Value: "Infinity"}},
		{{Name: "id", Value: "k"}, {Name: "v", Value: true}, {Name: "é", Value: connect.Row{}}, {Name: "arr", Value: nil}, {Name: "f", Value: 1e-9}},
		{{Name: "other", Value: int64(1)}},
	}
	for _, op := range []connect.Op{connect.OpCreate, connect.OpUpdate, connect.OpDelete, connect.OpTruncate, connect.OpRead} {
		for i, row := range rows {
			for _, tx := range []*connect.Transaction{nil, {ID: "5:77", TotalOrder: 2, DataCollectionOrder: 1}} {
				ev := &connect.ChangeEvent{Op: op, Source: enc.source(rel, connect.SnapshotFalse, time.Unix(0, int64(i)*1e9+1), uint32(i), uint64(i)*7, 3), Transaction: tx}
				switch op {
				case connect.OpCreate, connect.OpRead:
					ev.After, ev.Key = row, rel.key(row)
				case connect.OpUpdate:
					ev.Before, ev.After, ev.Key = rows[(i+1)%len(rows)], row, rel.key(row)
				case connect.OpDelete:
					ev.Before, ev.Key = row, rel.key(row)
				}
				if i == 2 {
					ev.SetTime(time.Now())
				}
				got, err := enc.record(rel, ev)
				if err != nil {
					t.Fatal(err)
				}
				wantKey, want, err := connect.DebeziumJSON{}.Encode(ev)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Value, want) || !bytes.Equal(got.Key, wantKey) {
					t.Errorf("%s event %d:\n got %s %s\nwant %s %s", op, i, got.Key, got.Value, wantKey, want)
				}
			}
		}
	}
}
